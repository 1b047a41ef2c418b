#
# scripts/bench.sh --tpch-only: the TPC-H-shaped accuracy run works end to
# end on a tiny scale against a real server: it builds the data once and
# keeps it (a changed scale rebuilds), runs all 22 queries, and prints and
# writes per-query and overall figures in the columns the docs describe.
# No figure is held to a target here (those are the bench's, on a real
# scale); what is checked is that the report is complete and its numbers
# are numbers where they must be.
#
# On 15-18 the run times with the TSC where the session can use it, else
# with the system clock, and its heading must name which; a build without
# the wrappers (nothing samples there) must say so and fail.
# Where the server has no timing_source.subtract_overhead, the run with
# the subtracted mode must stop with an error naming the setting, and
# --tpch-no-subtract must leave that mode out, saying so; where it has the
# setting, the subtracted mode runs under either clock (the wrappers that
# sample time exact plans too).
#
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use TimingSourceExpect;

my $root = "$FindBin::RealBin/..";

my $node = PostgreSQL::Test::Cluster->new('tpch');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'timing_source'
jit = off
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION timing_source');
expect_tsc_state($node);

my $major = pg_major($node);
my $tsc = $node->safe_psql('postgres', 'SELECT available FROM timing_source_tsc()') eq 't';
my $has_subtract = $node->safe_psql('postgres',
	q{SELECT count(*) FROM pg_settings WHERE name = 'timing_source.subtract_overhead'}) eq '1';
note "major $major, TSC " . ($tsc ? 'usable' : 'unusable')
  . ', subtract_overhead ' . ($has_subtract ? 'present' : 'absent');

my $csvdir = PostgreSQL::Test::Utils::tempdir;

# bench.sh against this server; returns (exit ok, stdout, stderr)
sub bench
{
	my @args = @_;
	local $ENV{PGHOST} = $node->host;
	local $ENV{PGPORT} = $node->port;
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run(
		[ 'bash', "$root/scripts/bench.sh", '--tpch-only', '--short',
		  '--csv', $csvdir, @args ],
		'<', \undef, '>', \$out, '2>', \$err);
	return ($ok, $out, $err);
}

if (!wrappers_sample($node))
{
	my ($ok, $out, $err) = bench('--tpch-scale', '0.002', '--tpch-rounds', '1', '--tpch-no-subtract');
	ok(!$ok, 'where nothing samples the run fails');
	like($err, qr/sampled timing needs the node wrappers, which this build of timing_source does not have .*; not run/,
		'and says why');
	done_testing();
	exit 0;
}

my ($ok, $out, $err);
if (!$has_subtract)
{
	($ok, $out, $err) = bench('--tpch-scale', '0.002', '--tpch-rounds', '1');
	ok(!$ok, 'asked for the subtracted mode on a server without the setting: the run fails');
	like($err, qr/needs the setting timing_source\.subtract_overhead/,
		'and names the missing setting');
	unlike($out, qr/^Targets:/m, 'and prints no report');
}

my @mode = $has_subtract ? () : ('--tpch-no-subtract');
($ok, $out, $err) = bench('--tpch-scale', '0.002', '--tpch-rounds', '2', @mode);
ok($ok, 'the run exits 0') or diag($err);
note $out;

# the two per-query tables (before the targets; the list of nodes that
# miss one comes after them): every query once in each, and an overall row
my ($tables) = $out =~ /\A(.*?)^Targets:/ms;
$tables //= '';
my %seen;
$seen{$1}++ while $tables =~ /^ Q(\d\d) \|/mg;
is_deeply([ sort keys %seen ], [ map { sprintf '%02d', $_ } 1 .. 22 ],
	'the report names the 22 queries');
is(scalar(grep { $_ != 2 } values %seen), 0, 'each in both tables');
is(scalar(() = $tables =~ /^ all \|/mg), 2, 'both tables have an overall row');
for my $col ('nodes>=1ms', 'plain ms', 'untimed/', 'exact/', 'exsub/', 'sampled/', 'ref/',
	'top exact err%', 'top exsub err%', 'top sampled err%', 'top ref err%',
	'exact med', 'exact worst', 'exsub med', 'exsub worst', 'sampled med',
	'sampled worst', 'coverage%', 'share exact pp', 'share exsub pp', 'ref se% med/worst',
	'exsub/prof pp', 'ref/prof pp')
{
	like($out, qr/\|\s\Q$col\E\s/, "column \"$col\"");
}
like($out, qr/accuracy run: CPU \S.* \(\d+ CPUs\)/, 'the CPU is named');
# (19's SHOW may say which clock "auto" chose, in parentheses)
my $clock = $major >= 19 ? qr/core's clock \(timing_clock_source: \w+( \(\w+\))?\)/
  : $tsc ? qr/the TSC/ : qr/the system clock/;
like($out, qr/^TPC-H-shaped accuracy run: .*; nodes timed with $clock$/m,
	'and the clock that timed the nodes');
if ($major < 19)
{
	if ($tsc)
	{
		unlike($err, qr/every mode times with the system clock/, 'with the TSC, no note of the system clock');
	}
	else
	{
		like($err, qr/the TSC is not usable on this machine; every mode times with the system clock/,
			'without the TSC, a note that the system clock times every mode');
	}
}
for my $t ('median per-node error <= 5%', 'interval coverage >= 90%',
	'top node within 5% on every query', 'shares within 5 pp of the sampled reference',
	'shares within 5 pp of the profile')
{
	my ($res) = $out =~ /\Q$t\E[^|]*\|[^|]*\|\s*(\S.*?)\s*$/m;
	ok(defined $res && $res =~ /^(met|MISSED|not run)$/, "target \"$t\" has a verdict")
	  or diag($res // 'missing');
}
# the reference's children against their parent, beside exact timing's
like($out, qr/^ reference check: parents of >= 1 ms whose children add up to[^|]*\|\s*(exactsub \d+ of \d+[^;|]*; )?ref \d+ of \d+/m,
	'the reference is checked for children that add up to more than their parent');
# the profile: its runs recorded ticks, and the reference is set against it
cmp_ok($node->safe_psql('ts_bench',
		q{SELECT count(*) FROM tpch_run.obs WHERE mode = 'profile' AND node_id = 1 AND ticks > 0}),
	'>', 0, 'the profiled runs recorded their top nodes\' ticks');
like($out, qr/^ reference check: the ref runs' shares against the profile[^|]*\|\s*(worst \d+(\.\d+)? pp, median|\s*\|)/m,
	'the reference\'s shares are checked against the profile');
my ($samp) = $out =~ /median per-node error <= 5%[^|]*\|\s*(\S+)/;
like($samp // '', qr/^\d+(\.\d+)?%$/, 'the sampled median error is a figure');
# coverage needs sampled runs with a margin among the judged nodes, which
# a scale this small may not have: the figure or "not run" is accepted,
# and that the margins reach the recorded runs is checked directly
my ($cov) = $out =~ /interval coverage >= 90%[^|]*\|\s*(\S+)/;
like($cov // '', qr/^(\d+(\.\d+)?%|-)$/, 'the coverage is a figure, or not run');
cmp_ok($node->safe_psql('ts_bench',
		q{SELECT count(*) FROM tpch_run.obs WHERE mode = 'sampled' AND margin_ms > 0}),
	'>', 0, 'the sampled runs recorded their margins');
if ($has_subtract)
{
	my ($top) = $out =~ /top node within 5% on every query[^|]*\|\s*worst (\S+)/;
	like($top // '', qr/^\d+(\.\d+)?%$/, 'the subtracted top-node error is a figure');
	unlike($out, qr/exsub\): not run/, 'exsub was run');
	cmp_ok($node->safe_psql('ts_bench', q{SELECT count(*) FROM tpch_run.obs WHERE mode = 'exactsub'}), '>', 0,
		'and its runs were recorded');
}
else
{
	like($out, qr/exsub\): not run \(--tpch-no-subtract\)/, 'the report says exsub was not run');
}

# the CSV files: one row per query and the overall one, each naming the CPU
my ($qcsv) = glob("$csvdir/bench-*-tpch-queries.csv");
my ($ncsv) = glob("$csvdir/bench-*-tpch-nodes.csv");
ok(defined $qcsv && defined $ncsv, 'both CSV files are written');
my @rows = split /\n/, slurp_file($qcsv);
my @head = split /,/, shift @rows;
is_deeply([ @head[ 0 .. 5 ] ], [qw(cpu postgresql q title plan_stable nodes)], 'the query CSV\'s first columns');
ok((grep { $_ eq 'coverage_pct' } @head) && (grep { $_ eq 'sampled_med' } @head),
	'and it has the coverage and sampled error columns');
is(scalar(@rows), 23, 'the query CSV has 22 queries and the overall row');
my @nodes = split /\n/, slurp_file($ncsv);
my @nhead = split /,/, shift @nodes;
my ($ri) = grep { $nhead[$_] eq 'reference_ms' } 0 .. $#nhead;
ok(defined $ri && @nodes > 0, 'the node CSV has nodes and their references');
# (the CPU name and the titles are quoted only if they hold a comma; the
# reference is read from the end of the row, where no text column is)
my $from_end = @nhead - $ri;
is(scalar(grep { my @f = split /,/, $_, -1; !($f[ @f - $from_end ] >= 1) } @nodes), 0,
	'every node in it has a reference of at least 1 ms');

# the data is kept: the second run does not rebuild it, another scale does
($ok, $out, $err) = bench('--tpch-scale', '0.002', '--tpch-rounds', '1', '--tpch-no-subtract');
ok($ok, 'a second run exits 0');
unlike($err, qr/building the TPC-H-shaped data/, 'and keeps the data');
my $lines = $node->safe_psql('ts_bench', 'SELECT count(*) FROM tpch.lineitem');
($ok, $out, $err) = bench('--tpch-scale', '0.003', '--tpch-rounds', '1', '--tpch-no-subtract');
ok($ok, 'a run at another scale exits 0');
like($err, qr/building the TPC-H-shaped data, scale 0\.003/, 'and rebuilds the data');
cmp_ok($node->safe_psql('ts_bench', 'SELECT count(*) FROM tpch.lineitem'), '>', $lines,
	'with more lines');

$node->stop;
done_testing();
