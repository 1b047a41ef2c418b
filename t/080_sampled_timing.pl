#
# timing_source.sample_every = N: each node times the first call of every
# loop, the first 30 of its other calls (the warm-up) and, at random, a
# falling share of the rest, down to 1 in N, and scales those up.
# Rows and loops stay exact; totals are estimates, unbiased whatever the
# call durations (that the choice is random, so that it cannot alias with
# a workload whose slow calls come every N-th row, is t/081's).  On PostgreSQL 18 EXPLAIN and
# auto_explain name the clock and say ", sampled 1 in N calls" on the
# plan-level "Timing:" line; earlier majors have no hook for it, and the
# setting's description says it.
#
# Where the TSC is unusable the setting changes nothing on 15-18: core
# times every call with the system clock.  On 19 and later the wrappers
# read core's clock (timing_source.node_wrappers), so sampling works with
# whichever clock core uses; the TSC is core's decision there.
#
use strict;
use warnings;

use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use TimingSourceExpect;

my $node = PostgreSQL::Test::Cluster->new('sampled');

start_preloaded($node, libraries => 'timing_source, auto_explain', conf => q{
auto_explain.log_min_duration = -1
auto_explain.log_analyze = on
auto_explain.log_timing = on
});
$node->safe_psql('postgres', q{
	CREATE TABLE t AS SELECT g FROM generate_series(1, 200000) g;
	VACUUM ANALYZE t;
});
my $major = $node->safe_psql('postgres', q{SELECT current_setting('server_version_num')::int / 10000});
# whether the sessions' auto resolves to the TSC (15-18: the extension's
# decision; 19: core's, whose clock the wrappers read): a usable TSC that
# auto declines (another clocksource, no TSC_ADJUST) times nothing here
my $tsc = $node->safe_psql('postgres', 'SHOW timing_clock_source') eq 'auto (tsc)';
note $tsc ? 'TSC in use' : 'TSC not in use on this server';
# whether the wrappers sample at all: with the TSC, without it with the
# system clock; not in a build without a counter (15-18)
my $samples = wrappers_sample($node);

like($node->safe_psql('postgres',
		q{SELECT short_desc || ' ' || extra_desc FROM pg_settings WHERE name = 'timing_source.sample_every'}),
	qr/estimates.*rows and loops are exact/s, 'the setting says sampled times are estimates');

# EXPLAIN (ANALYZE, FORMAT JSON) under a sample_every; returns the plan
sub plan_json
{
	my ($n, $sql) = @_;
	my $out = $node->safe_psql('postgres',
		"SET timing_source.sample_every = $n; EXPLAIN (ANALYZE, COSTS OFF, FORMAT JSON) $sql");
	return decode_json($out)->[0];
}

# rows and loops exact, every node, with N = 64
my $q = 'SELECT g % 7 AS k, count(*) FROM t GROUP BY 1 ORDER BY 1';
my ($exact, $sampled) = (plan_json(1, $q), plan_json(64, $q));
sub shape
{
	my ($p) = @_;
	my @s = ("$p->{'Node Type'} rows=$p->{'Actual Rows'} loops=$p->{'Actual Loops'}");
	push @s, shape($_) for @{ $p->{Plans} // [] };
	return join ' | ', @s;
}
is(shape($sampled->{Plan}), shape($exact->{Plan}), 'sampled: the same nodes, rows and loops as exact timing');

# how many node calls read the TSC
sub calls_for
{
	my ($n, $sql) = @_;
	my $out = $node->safe_psql('postgres', qq{
		SELECT tsc_timed_calls FROM timing_source_tsc();
		SET timing_source.sample_every = $n;
		EXPLAIN (ANALYZE, COSTS OFF) $sql;
		SELECT tsc_timed_calls FROM timing_source_tsc();});
	my @c = $out =~ /^(\d+)$/mg;
	return $c[-1] - $c[0];
}
my $cq = 'SELECT count(*) FROM t';
if ($tsc)
{
	is(calls_for(1, $cq), 200003, 'exact: every call reads the TSC (200,001 scan calls, 2 aggregate calls)');
	my $c = calls_for(64, $cq);
	cmp_ok($c, '<', 200003 / 64 * 1.5, "1 in 64: about 1 in 64 calls reads the TSC ($c)");
	cmp_ok($c, '>', 200003 / 64 * 0.5, '(and not none)');
}
else
{
	is(calls_for(64, $cq), 0, 'without a usable TSC, no call reads it, sampled or not');
}

# Estimates: a node whose every 4th row sleeps 0.5 ms: 400 slow calls,
# each sampled with probability 1/4, give the estimate a standard
# deviation of about 9%.  Compared with exact timing, best of 3, within
# 25%.  This checks the estimate, not the randomness: the cap (the time
# the node has run) can clamp a periodic sampler's over-estimate to about the truth here;
# t/081 checks the choice itself.
my $sleepy = q{SELECT count(*) FROM (SELECT CASE WHEN g % 4 = 0 THEN pg_sleep(0.0005) END FROM generate_series(1, 1600) g) s};
sub inner_total
{
	my ($n) = @_;
	my $p = plan_json($n, $sleepy)->{Plan};
	# the node below the aggregate does the sleeping
	my $child = $p->{Plans}[0];
	return $child->{'Actual Total Time'} * $child->{'Actual Loops'};
}
my $truth = inner_total(1);
note sprintf('exact timing: %.1f ms for 400 sleeps of 0.5 ms', $truth);
cmp_ok($truth, '>=', 200, 'exact timing sees at least the 200 ms slept');
my $best;
for (1 .. 3)
{
	my $est = inner_total(4);
	$best = $est if !defined $best || abs($est - $truth) < abs($best - $truth);
	last if abs($best - $truth) < 0.25 * $truth;
}
cmp_ok(abs($best - $truth) / $truth, '<', 0.25,
	sprintf('1 in 4 with every 4th call slow: %.1f ms estimated, exact %.1f ms (best of 3)', $best, $truth));

# An estimate is capped at the wall time the node has run.  A scan of 100
# rows whose 91st call sleeps 50 ms, sampled 1 in 2: past the warm-up's
# exactly timed calls, that call is sampled with probability 1/2 (half the
# runs) and then counts twice, 100 ms, in a query of 50 ms; the cap keeps
# the node's time within the query's.  30 runs: the chance that no run
# samples the slow call is 2^-30.
if ($samples)
{
	my $slow = q{SELECT * FROM generate_series(1, 100) g WHERE CASE WHEN g = 91 THEN pg_sleep(0.05) IS NOT NULL ELSE true END};
	my ($hits, @over) = (0);
	for (1 .. 30)
	{
		my $p = plan_json(2, $slow);
		my $total = $p->{Plan}{'Actual Total Time'} * $p->{Plan}{'Actual Loops'};
		$hits++ if $total >= 45;
		push @over, sprintf('%.3f ms in %.3f ms', $total, $p->{'Execution Time'})
		  if $total > $p->{'Execution Time'} + 0.002;
	}
	is(join(', ', @over), '', 'sampled: no node time exceeds the query\'s execution time (30 runs, 1 in 2)');
	cmp_ok($hits, '>', 0, "and runs did sample the slow call ($hits of 30)");
}

# startup stays exact: the first call of each loop is always timed
my $sort = plan_json(64, 'SELECT * FROM t ORDER BY g DESC LIMIT 1')->{Plan}{Plans}[0];
is($sort->{'Node Type'}, 'Sort', 'a Sort under the Limit');
cmp_ok($sort->{'Actual Startup Time'}, '>', 0, 'its startup time is measured');
cmp_ok(abs($sort->{'Actual Total Time'} - $sort->{'Actual Startup Time'}), '<=',
	0.1 * $sort->{'Actual Total Time'} + 0.05, 'and is almost all of its total, as for exact timing');

# EXPLAIN says so on 18 and later, where extensions can add to its output
my $text = $node->safe_psql('postgres',
	"SET timing_source.sample_every = 64; EXPLAIN (ANALYZE, COSTS OFF) $cq");
my $text1 = $node->safe_psql('postgres',
	"SET timing_source.sample_every = 1; EXPLAIN (ANALYZE, COSTS OFF) $cq");
unlike($text1, qr/sampled 1 in/, 'exact timing: no sampling note');
if ($major >= 18 && $samples)
{
	like($text, qr/^Aggregate \(actual time=.*\n(?:  [A-Z].*\n)*  Timing: (?:TSC|system clock)[^\n]*, sampled 1 in 64 calls$/m,
		'18+: EXPLAIN says the times are sampled, on the top node');
	like($text1, qr/^Aggregate \(actual time=.*\n(?:  [A-Z].*\n)*  Timing: (?:TSC \d+ MHz(?: \([^)\n]*\))?|system clock)$/m,
		'18+: and names the clock of exactly timed plans');
	my $off = $node->safe_psql('postgres',
		"SET timing_source.sample_every = 64; EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) $cq");
	unlike($off, qr/Timing(?: Overhead)?: (?:~|TSC|system)/, 'but nothing under TIMING OFF');
	my $offset = -s $node->logfile;
	$node->safe_psql('postgres', "LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; "
		  . "SET timing_source.sample_every = 64; $cq");
	like(slurp_file($node->logfile, $offset), qr/Timing: (?:TSC|system clock)[^\n]*, sampled 1 in 64 calls/,
		'18+: auto_explain says so too');
	# exact timing is the wrappers' too, with either clock: the estimates
	$offset = -s $node->logfile;
	$node->safe_psql('postgres', "LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; "
		  . "SET auto_explain.log_analyze = on; SET timing_source.subtract_overhead = on; $cq");
	like(slurp_file($node->logfile, $offset),
		qr/Timing Overhead: ~[0-9.]+ ms \(subtracted(?:; [0-9.]+ ns a call, measured in the plan(?:'s other nodes)?)?\)\n.*Timing: (?:TSC|system clock)[^\n]*, overhead subtracted/s,
		'18+: auto_explain shows the estimates and the clock, subtracted');
}
else
{
	unlike($text, qr/sampled 1 in/,
		$samples ? "PostgreSQL $major has no EXPLAIN hook: no line (see the setting's description)"
		: 'no sampling in this build, so no line');
}

$node->stop;
done_testing();
