#
# Loading timing_source must not change what EXPLAIN prints apart from the
# measured times.  The same server runs the same statements once with the
# library preloaded (per-node timing on the TSC where usable) and once
# without it; the outputs must be byte-identical:
#
# - EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF, SUMMARY OFF) in all formats,
# - EXPLAIN (COSTS OFF) without ANALYZE,
# - EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF) with timing on, also with
#	BUFFERS and in JSON, after masking the time figures only,
# - the same timed statements with sampled timing (timing_source.sample_every
#	= 64): rows, loops and buffers exact, only the times estimated,
# - all of the first with per-node tracking on (timing_source.track_nodes):
#	byte-identical too.
#
# On 18 and later the library's EXPLAIN hook adds notes to timed plans: a
# plan-level "Timing: <clock>..." line (with ", sampled 1 in 64 calls"
# when sampled) and per exactly timed node "Timing Overhead: ~N ms", in
# text, and their fields in JSON.  They are counted here (what they say is
# test/sql/overhead's and t/080's) and then dropped before comparing.
#
# On 19 and later the wrappers read core's clock (timing_source.
# node_wrappers, on by default); there the loaded server also runs
# everything with the setting off, which must give core's own output.
#
# TIMING OFF goes through the library's own clock-less wrappers where the
# session's source is the TSC, so those outputs also check that they count
# exactly what core counts.
#
# Buffer and WAL usage are kept with AVX2 where the build is x86-64 and the
# CPU has it, with plain copies otherwise.  The server says which at start
# (DEBUG1); the loaded runs are repeated on a server started with
# TIMING_SOURCE_DISABLE_AVX2, which must keep plain copies, and both must
# match the stock output.
#
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();
use FindBin;
use lib $FindBin::RealBin;
use TimingSourceExpect;

my $node = PostgreSQL::Test::Cluster->new('plan_identical');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
shared_preload_libraries = 'timing_source'
max_parallel_workers_per_gather = 0
jit = off
log_min_messages = debug1
});
$node->start;

$node->safe_psql(
	'postgres', q{
	CREATE TABLE a (id int PRIMARY KEY, k int, pad text);
	INSERT INTO a SELECT g, g % 10, repeat('x', 30) FROM generate_series(1, 20000) g;
	CREATE INDEX ON a (k);
	CREATE TABLE b AS SELECT g AS id, (g * 13) % 20000 + 1 AS a_id FROM generate_series(1, 2000) g;
	CREATE TABLE p (k int, v int) PARTITION BY RANGE (k);
	CREATE TABLE p1 PARTITION OF p FOR VALUES FROM (0) TO (500);
	CREATE TABLE p2 PARTITION OF p FOR VALUES FROM (500) TO (1000);
	INSERT INTO p SELECT g, g % 3 FROM generate_series(0, 999) g;
	VACUUM ANALYZE a, b, p;
});

# the SQL functions are only needed to ask whether the TSC is usable
$node->safe_psql('postgres', 'CREATE EXTENSION timing_source');
expect_tsc_state($node);
my $tsc = $node->safe_psql('postgres',
	q{SELECT CASE WHEN available THEN 'tsc' ELSE 'system' END FROM timing_source_tsc()}
);
my $samples = wrappers_sample($node);
$node->safe_psql('postgres', 'DROP EXTENSION timing_source');

# PostgreSQL 19 and later own timing_clock_source; the extension's
# wrappers read core's clock, the TSC where core accepts it.
my $major = $node->safe_psql('postgres', q{SELECT current_setting('server_version_num')::int / 10000});
my $core_owns = $major >= 19;
if ($core_owns)
{
	my ($ret) = $node->psql('postgres', "SET timing_clock_source = 'tsc'");
	$tsc = $ret == 0 ? 'tsc' : 'system';
}
note "clock source with the library loaded: $tsc";

my @queries = (
	'SELECT count(*) FROM a',
	'SELECT a.k, count(*) FROM a JOIN b ON b.a_id = a.id GROUP BY a.k ORDER BY a.k',
	'SELECT count(*) FROM b JOIN a ON a.id = b.a_id WHERE b.id < 100',
	'SELECT count(*) FROM a WHERE k = 3 OR id < 50',
	'WITH c AS MATERIALIZED (SELECT k, count(*) AS n FROM a GROUP BY k) '
	  . 'SELECT count(*) FROM c c1 JOIN c c2 ON c1.k = c2.k',
	'SELECT count(*) FROM b WHERE b.id < 50 AND b.a_id > (SELECT avg(id) FROM a WHERE a.k = b.id % 10)',
	'SELECT * FROM p ORDER BY k DESC LIMIT 3',
	'SELECT count(*) FROM p WHERE v = 1',
	'SELECT id, rank() OVER (PARTITION BY k ORDER BY id) FROM a WHERE id < 20 ORDER BY id',
	'SELECT * FROM (SELECT k, count(*) AS n FROM a GROUP BY k LIMIT 5) s WHERE s.n > 0',
	'WITH RECURSIVE r(n) AS (VALUES (1) UNION ALL SELECT n + 1 FROM r WHERE n < 50) '
	  . 'SELECT count(*) FROM r');

my @options = (
	'ANALYZE, TIMING OFF, COSTS OFF, SUMMARY OFF',
	'ANALYZE, TIMING OFF, COSTS OFF, SUMMARY OFF, FORMAT JSON',
	'ANALYZE, TIMING OFF, COSTS OFF, SUMMARY OFF, FORMAT YAML',
	'ANALYZE, TIMING OFF, COSTS OFF, SUMMARY OFF, FORMAT XML',
	'ANALYZE, TIMING OFF, COSTS OFF, SUMMARY OFF, BUFFERS',
	'COSTS OFF',
	'ANALYZE, COSTS OFF, SUMMARY OFF',
	'ANALYZE, COSTS OFF, SUMMARY OFF, BUFFERS',
	'ANALYZE, COSTS OFF, SUMMARY OFF, BUFFERS, FORMAT JSON');
my @timed_options = grep { !/TIMING OFF/ && /ANALYZE/ } @options;

# In a timed plan's text: its nodes, and those of them core runs through
# MultiExecProcNode, which keep core's clock and are never bound
sub plan_nodes
{
	my ($out) = @_;
	my $nodes = () = $out =~ /\(actual time=/g;
	my $multi = () =
	  $out =~ /(?:^|->)\s*(?:Hash|Bitmap Index Scan[^(]*|BitmapAnd|BitmapOr)\s+\(actual time=/mg;
	return ($nodes, $multi);
}

# Run everything in one session; mask measured times only
sub explain_all
{
	my ($setup, @opts) = @_;
	my $all = !@opts;
	@opts = @options unless @opts;
	my $script = $setup;
	for my $q (@queries)
	{
		$script .= "EXPLAIN ($_) $q;\n" for @opts;
	}
	# WAL usage, in both formats (once: the table grows)
	$script .= q{
		CREATE TABLE w (id int, pad text);
		EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF, BUFFERS, WAL)
			INSERT INTO w SELECT g, repeat('w', 100) FROM generate_series(1, 2000) g;
		EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF, BUFFERS, WAL, FORMAT JSON)
			INSERT INTO w SELECT g, repeat('v', 50) FROM generate_series(1, 500) g;
		DROP TABLE w;
	} if $all;
	# the first round warms the buffer cache, so BUFFERS output is stable
	$node->safe_psql('postgres', $script);
	my $out = $node->safe_psql('postgres', $script);
	$out =~ s/actual time=[0-9.]+\.\.[0-9.]+/actual time=T..T/g;
	$out =~ s/"Actual (Startup|Total) Time": [0-9.]+/"Actual $1 Time": T/g;
	return $out;
}

my $loaded = explain_all("SET timing_clock_source = '$tsc';\n");
like($loaded, qr/actual time=T\.\.T/, 'timed plans were produced');
like($loaded, qr/^\s*WAL: records=\d+.*"WAL Records": \d+/ms,
	'WAL usage was printed in text and JSON');
my $sampled =
  explain_all("SET timing_clock_source = '$tsc'; SET timing_source.sample_every = 64;\n",
	@timed_options);
# the same with per-node tracking on (timing_source.track_nodes, its
# buffers too): an explained statement keeps EXPLAIN's options, so the
# output must be the untracked one, and never sampled
my $tracked = explain_all("SET timing_clock_source = '$tsc'; "
	  . "SET timing_source.track_nodes = 'all'; SET timing_source.track_buffers = on;\n");
# the line 18's EXPLAIN hook adds to a sampled plan, in text or JSON
my $sampled_line = qr/^\s*(?:Timing: [^\n]*, sampled 1 in 64 calls|"Timing Sampled Every": 64,?)$/m;

# the plan-level note, once per timed plan (text line or JSON field)
my $clock_line = qr/^\s*(?:Timing: (?:TSC|system clock)[^\n]*|"Timing Clock": "(?:TSC|system clock)",?)$/m;

# drop every note of the hook: text lines, JSON fields with the comma
# that joined them to the field before
sub drop_notes
{
	my ($out) = @_;
	$out =~ s/^\s*(?:Timing(?: Overhead)?|Sampled): [^\n]*\n//mg;
	$out =~ s/,\n\s*"(?:Timing(?: Overhead| Clock| Clock Frequency| Frequency Source| Sampled Every| Overhead Subtracted)|Sampled (?:Every|Calls)|Total Time Margin|Estimate Reliable)": (?:"[^"\n]*"|[^\n,]*)(?=,?\n)//g;
	return $out;
}
unlike($tracked, $sampled_line, 'tracked and explained: never sampled');
my $nsampled = () = $sampled =~ /$sampled_line/g;
# 18 samples with the TSC or the system clock, 19 with whichever clock
# core uses; 15-17 have no place to say so
is($nsampled,
	($major >= 18 && $samples) ? scalar(@queries) * scalar(@timed_options) : 0,
	'sampled plans say so once per plan on 18+ where the wrappers sample, never elsewhere');
# The same statements keeping buffer and WAL usage with plain copies.  The
# server says at start how it keeps them: x86-64 builds with AVX2 where the
# CPU has it (and the kernel saves its registers, which the kernel's
# "avx2" flag also implies), other builds say nothing.
my $machine = (POSIX::uname())[4];
my $cpu_avx2 = $machine eq 'x86_64'
  && slurp_file('/proc/cpuinfo') =~ /^flags\s*:.*\bavx2\b/m;
my $how = $machine ne 'x86_64' ? undef : $cpu_avx2 ? 'AVX2' : 'plain copies';
sub usage_message
{
	my ($offset) = @_;
	my @said = slurp_file($node->logfile, $offset) =~ /timing_source: buffer and WAL usage kept with ([^\n"]+)/g;
	return join(', ', @said);
}
# and each bound query says (DEBUG2) how many of its nodes keep usage
# which way: all of them, but for those core runs through MultiExecProcNode
# (the nodes are bound under either clock wherever the wrappers sample:
# in every build with them)
my $binds = $samples;
sub usage_per_node
{
	my ($ret, $out, $err) = $node->psql('postgres',
		"SET client_min_messages = debug2; SET timing_clock_source = '$tsc'; "
		  . "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, SUMMARY OFF) $queries[1]");
	my ($nodes, $multi) = plan_nodes($out);
	my $said = $err =~ /timing_source: buffer\/WAL usage kept with AVX2 for (\d+) plan nodes, with plain copies for (\d+)/
	  ? "$1 wide, $2 plain" : 'no message';
	return ($said, $nodes - $multi);
}
my ($said, $bound) = usage_per_node();
is(usage_message(0), $how // '',
	"the server keeps buffer usage with " . ($how // 'no message on ' . $machine));
is($said, !$binds ? 'no message' : $cpu_avx2 ? "$bound wide, 0 plain" : "0 wide, $bound plain",
	"every bound node of a BUFFERS query keeps usage that way ($bound bound)");
{
	local $ENV{TIMING_SOURCE_DISABLE_AVX2} = '1';
	my $offset = -s $node->logfile;
	$node->restart;
	is(usage_message($offset), $how ? 'plain copies' : '',
		'TIMING_SOURCE_DISABLE_AVX2: plain copies');
	($said, $bound) = usage_per_node();
	is($said, $binds ? "0 wide, $bound plain" : 'no message',
		'TIMING_SOURCE_DISABLE_AVX2: every bound node keeps usage with plain copies');
}
my $loaded_plain = explain_all("SET timing_clock_source = '$tsc';\n");
my $sampled_plain =
  explain_all("SET timing_clock_source = '$tsc'; SET timing_source.sample_every = 64;\n",
	@timed_options);
$node->restart;

# 19+: the same server with the wrappers switched off runs core's own
# instrumentation
my $wrappers_off = $core_owns
  ? explain_all("SET timing_clock_source = '$tsc'; SET timing_source.node_wrappers = off;\n")
  : '';
# 18+: every timed plan names its clock once, the exactly timed ones
# where the wrappers timed them also carry per-node estimates
my $ntimed_plans = scalar(@queries) * scalar(@timed_options) + 2;
my $nclock = () = $loaded =~ /$clock_line/g;
is($nclock, $major >= 18 ? $ntimed_plans : 0,
	'18+: each timed plan names its clock once (WAL statements included); none before 18');
my $nestimates = () = $loaded =~ /^\s*(?:Timing Overhead: ~[0-9.]+ ms|"Timing Overhead": [0-9.]+,?)$/mg;
ok($major >= 18 && $samples ? $nestimates > 0 : $nestimates == 0,
	'18+: per-node estimates where the wrappers time exactly, none elsewhere');
my $nclock_off = () = explain_all("SET timing_clock_source = '$tsc';\n",
	grep { /TIMING OFF/ || !/ANALYZE/ } @options) =~ /$clock_line/g;
is($nclock_off, 0, 'no note without ANALYZE or with TIMING OFF');
$_ = drop_notes($_) for ($loaded, $sampled, $loaded_plain, $sampled_plain, $wrappers_off, $tracked);

# Where the TSC is used, make sure it really was: the hook reports the
# nodes it binds at DEBUG1
if ($tsc eq 'tsc')
{
	my ($ret, $out, $err) = $node->psql('postgres',
		"SET client_min_messages = debug1; SET timing_clock_source = 'tsc'; "
		  . "EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF) $queries[1]");
	# every timed node, except those core runs through MultiExecProcNode
	# (they keep core's clock)
	my ($nodes, $multi) = plan_nodes($out);
	my $bound = $nodes - $multi;
	ok($multi > 0, "the query has $multi node(s) run through MultiExecProcNode");
	like($err, qr/timing_source: $bound plan nodes timed with the TSC/,
		"the timed run used the TSC path for the other $bound nodes");
	if ($core_owns)
	{
		($ret, $out, $err) = $node->psql('postgres',
			"SET client_min_messages = debug1; SET timing_clock_source = 'tsc'; "
			  . "SET timing_source.node_wrappers = off; "
			  . "EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF) $queries[1]");
		unlike($err, qr/timing_source: \d+ plan nodes/,
			"19+: with timing_source.node_wrappers off the extension binds no node");
	}
}

$node->adjust_conf('postgresql.conf', 'shared_preload_libraries', "''");
$node->restart;
# 15-18: the setting exists only with the library; 19+: it is core's, so
# ask what is preloaded
my $loaded_now = $node->safe_psql('postgres',
	$core_owns ? q{SELECT count(*) FROM pg_settings WHERE name = 'shared_preload_libraries' AND setting ~ 'timing_source'}
	: q{SELECT count(*) FROM pg_settings WHERE name = 'timing_clock_source'});
is($loaded_now, '0', 'library not loaded in the second run');

my $stock = explain_all('');
my $stock_timed = explain_all('', @timed_options);

my @l = split /\n/, $loaded;
my @s = split /\n/, $stock;
is(scalar @l, scalar @s, 'same number of output lines');
my $first_diff;
for my $i (0 .. $#l)
{
	if (!defined $s[$i] || $l[$i] ne $s[$i])
	{
		$first_diff = "line $i:\n  loaded: $l[$i]\n  stock:  " . ($s[$i] // '');
		last;
	}
}
ok($loaded eq $stock, 'EXPLAIN output byte-identical with and without the library')
  or diag($first_diff);
ok($tracked eq $stock,
	'EXPLAIN output byte-identical with per-node tracking on and without the library');
is($sampled, $stock_timed, 'sampled timing: output identical to stock but for the masked times');
ok($loaded_plain eq $stock,
	'usage kept with plain copies: EXPLAIN output byte-identical to stock');
is($sampled_plain, $stock_timed,
	'usage kept with plain copies, sampled timing: identical but for the masked times');
SKIP:
{
	skip 'PostgreSQL 15-18: timing_source.node_wrappers exists on 19+ only', 1 unless $core_owns;
	ok($wrappers_off eq $stock,
		'19+: timing_source.node_wrappers off: output identical to stock');
}

$node->stop;
done_testing();
