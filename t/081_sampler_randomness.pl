#
# timing_source.sample_every = N promises that the calls it times are
# chosen at random, each call after the first of its loop independently,
# with probability 1/N once past the node's warm-up (its first
# 30 (N - 1) + 1 such calls, timed more often), so that no periodic workload can alias with the
# choice.  t/080 checks the estimates; this file checks the randomness
# itself, in ways a periodic or repeating sampler cannot pass and that do
# not lean on the cap (an estimate is never above the wall time the node
# has run, which can hide an over-estimate).
#
# 1. Aliasing.  A scan of 800 rows whose every 4th call sleeps 0.5 ms,
#    sampled 1 in 4, under an aggregate that sleeps 0.5 ms for every row,
#    so the scan's loop runs for five times longer than the scan and the
#    cap cannot clamp an estimate: the slow calls are the scan's whole
#    time, and the estimate is 4 x the durations of the slow calls it
#    timed.  A sampler with a fixed period of 4 (after a random start, or
#    counted from the first call) times all 200 or none: it reports the
#    scan 4x too long or next to nothing, in every run.  A random sampler
#    times each slow call with probability 1/4, independently: X ~
#    Binomial(200, 1/4), mean 50, and its estimate is X/50 of the truth.
#    The check asks for 0.4 to 1.8 of exact timing (X from 20 to 90):
#    P(X < 20) + P(X > 90) < 2.3e-8 for a correct sampler (the warm-up
#    times the first 22 slow calls more often, each at a lower weight,
#    which only narrows the estimate's spread).  Sleeps keep
#    the check steady on a busy machine: a delayed call only lengthens a
#    call, by far less than the bounds allow.
#
# 2. A seed that repeats.  A scan with one slow call (a 50 ms sleep) among
#    2,000, sampled 1 in 4: each run either times that call (the estimate
#    then holds at least the 50 ms slept) or does not (the estimate is
#    then about the scan's time without the sleep, measured first).  For
#    a random sampler each run times it with probability exactly 1/4,
#    independently of the others; a sampler whose sequence repeats times
#    it in every run or in none.  R = 56 runs, in one session (a seed that
#    repeats across queries) and in 56 sessions (across processes): a
#    correct sampler times it in all runs or in none with probability
#    (3/4)^56 + (1/4)^56 < 1.1e-7, so the two checks together fail a
#    correct sampler with probability below 2.2e-7.
#
# So the whole file fails a correct sampler with probability below 2.5e-7.
#
# Where sampling does not apply (15-18 without a usable TSC, where core
# times every call with the system clock) the checks cannot occur; the
# file then checks that every call is timed (every run sees the sleep)
# and says why the rest is skipped.
#
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use TimingSourceExpect;

my $node = PostgreSQL::Test::Cluster->new('sampler_randomness');

start_preloaded($node);
$node->safe_psql('postgres', q{
	-- the scan's estimated total, its loop count folded in, and the top
	-- node's total, for one statement under one sample_every
	CREATE FUNCTION scan_times(q text, n int, OUT scan float8, OUT top float8)
	LANGUAGE plpgsql AS $$
	DECLARE
		j json;
	BEGIN
		PERFORM set_config('timing_source.sample_every', n::text, true);
		EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, FORMAT JSON) ' || q INTO j;
		scan := (j->0->'Plan'->'Plans'->0->>'Actual Total Time')::float8 *
			(j->0->'Plan'->'Plans'->0->>'Actual Loops')::float8;
		top := (j->0->'Plan'->>'Actual Total Time')::float8;
	END $$;
});

my $major = pg_major($node);
# the wrappers sample with the TSC or the system clock (15-18), or core's
# clock (19); only a build without a counter leaves every call to core
my $samples = wrappers_sample($node);

sub median
{
	my @v = sort { $a <=> $b } @_;
	return $v[ $#v / 2 ];
}

# (scan, top) of one run, in a session of its own
sub times_of
{
	my ($q, $n) = @_;
	my $out = $node->safe_psql('postgres',
		sprintf(q{SELECT scan, top FROM scan_times(%s, %d)}, quote($q), $n));
	return split /\|/, $out;
}

sub quote
{
	my ($s) = @_;
	$s =~ s/'/''/g;
	return "'$s'";
}

# ---- 2 (first: it also tells whether sampling applies) ----
my $one_slow = q{SELECT count(*) FROM generate_series(1, 2000) g
  WHERE CASE WHEN g = 1000 THEN pg_sleep(0.05) IS NOT NULL ELSE true END};
my $runs = 56;

# the scan without the sleep, timed exactly: what an estimate that did not
# time the slow call is about (slow under an emulator, so measured)
(my $no_sleep = $one_slow) =~ s/pg_sleep\(0\.05\)/pg_sleep(0)/;
my $base = median(map { (times_of($no_sleep, 1))[0] } 1 .. 5);
note sprintf('the scan without its sleep: %.2f ms', $base);

# in one session: a seed that repeats across the queries of a backend
my @in_session = split /\n/, $node->safe_psql('postgres',
	sprintf(q{SELECT (scan_times(%s, 4)).scan FROM generate_series(1, %d)}, quote($one_slow), $runs));
# one session each: a seed that repeats across processes
my @in_sessions = map { (times_of($one_slow, 4))[0] } 1 .. $runs;

is(scalar(@in_session) + scalar(@in_sessions), 2 * $runs, "$runs runs in one session and $runs in sessions of their own");
# an estimate that timed the slow call holds its 50 ms (the cap keeps it
# near the scan's wall time, base + 50 ms); one that did not is about the
# base, give or take the sampling of 2,000 short calls
my $timed_in_session = grep { $_ > $base + 35 } @in_session;
my $timed_in_sessions = grep { $_ > $base + 35 } @in_sessions;
my @unclear = grep { $_ >= $base + 15 && $_ <= $base + 35 } @in_session, @in_sessions;
note "runs that timed the slow call: $timed_in_session of $runs in one session, $timed_in_sessions of $runs in separate sessions";

if (!$samples)
{
	is($timed_in_session + $timed_in_sessions, 2 * $runs,
		'where nothing samples (15-18, a build without a counter) every call is timed: every run sees the sleep');
  SKIP:
	{
		skip 'this build has no node wrappers on PostgreSQL 15-18: the sampler does not run here', 6;
	}
	$node->stop;
	done_testing();
	exit 0;
}

is(scalar(@unclear), 0, 'every run either timed the slow call (over 35 ms above the base) or did not (under 15 ms above)')
  or diag "unclear estimates: @unclear";
ok($timed_in_session > 0 && $timed_in_session < $runs,
	"one session: the slow call is timed in some runs, not all ($timed_in_session of $runs; a seed repeating across queries gives 0 or $runs)");
ok($timed_in_sessions > 0 && $timed_in_sessions < $runs,
	"separate sessions: likewise ($timed_in_sessions of $runs; a seed repeating across processes gives 0 or $runs)");

# ---- 1: aliasing with periodic slow calls ----
my $periodic = q{SELECT count(pg_sleep(0.0005)) FROM generate_series(1, 800) g
  WHERE CASE WHEN g % 4 = 0 THEN pg_sleep(0.0005) IS NOT NULL ELSE true END};
my ($exact_scan, $exact_top) = times_of($periodic, 1);
my ($sampled_scan, $sampled_top) = times_of($periodic, 4);
note sprintf('every 4th of 800 calls sleeps: exact %.1f ms (top node %.1f ms), sampled 1 in 4: %.1f ms',
	$exact_scan, $exact_top, $sampled_scan);
# the design holds: the slow calls were slept, and the cap (at least the
# scan's loop, about the top node's time) is above what a sampler timing
# every slow call would report
cmp_ok($exact_scan, '>=', 100, 'exact timing sees the 200 sleeps of 0.5 ms');
cmp_ok(4 * $exact_scan, '<', $sampled_top,
	'the aggregate sleeps most: the cap cannot clamp even 4x the scan\'s time');
my $ratio = $sampled_scan / $exact_scan;
ok($ratio >= 0.4 && $ratio <= 1.8,
	sprintf('every 4th call slow, sampled 1 in 4: %.2f of exact (0.4 to 1.8 for a random sampler; a periodic one gives about 0 or 4)',
		$ratio));

$node->stop;
done_testing();
