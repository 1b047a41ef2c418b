#
# The per-query watchdog.  With the test-only TIMING_SOURCE_TEST_KHZ at half
# the real TSC frequency, every TSC interval reads twice as long as it is:
# the first TSC-timed query of 10 ms or more must trip the watchdog (one
# WARNING, counted), and from then on every session of the server (the
# library is preloaded) times with the system clock and reports correct
# times (until re-calibrations bring it back, which t/064 tests; their
# interval is far longer than this test).  Then, with the real frequency
# and both CPUs oversubscribed with busy loops, many timed queries must
# trip nothing.
#
# Where the TSC is unusable (the *_notsc run) there is no watchdog: the
# override is ignored, nothing is checked, times are correct.
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

my $node = PostgreSQL::Test::Cluster->new('watchdog');

# PostgreSQL 19 and later own timing_clock_source: the wrappers read core's
# clock, which core decided to trust, so there is no watchdog to test.
# The skip is stated (and counted).
skip_all_from_major($node, 19,
	'the wrappers read core\'s clock, whose trust is core\'s decision, so the extension has no watchdog there');
start_preloaded($node);
my ($tsc, $khz) = tsc_of($node);
$node->stop;

# EXPLAIN (ANALYZE, FORMAT JSON) of pg_sleep(secs): (Result node total ms,
# psql's stderr)
sub sleep_plan
{
	my ($n, $secs, $sql_before) = @_;
	my ($ret, $out, $err) = $n->psql('postgres',
		($sql_before // '') . "EXPLAIN (ANALYZE, FORMAT JSON) SELECT pg_sleep($secs)");
	die "EXPLAIN failed: $err" if $ret != 0;
	my $doc = decode_json($out)->[0];
	return ($doc->{Plan}{'Actual Total Time'}, $err, $doc->{'Execution Time'});
}

sub tsc_row
{
	my ($n) = @_;
	my $row = $n->safe_psql('postgres', q{
		SELECT available, in_use, frequency_khz, frequency_source,
		       coalesce(reason_unusable, ''), watchdog_checks, watchdog_failures,
		       tsc_timed_calls
		  FROM timing_source_tsc()});
	my %r;
	@r{qw(available in_use khz source reason checks failures calls)} = split /\|/, $row;
	return \%r;
}

my $half = $tsc ? int($khz / 2) : 1300000;
{
	local $ENV{TIMING_SOURCE_TEST_KHZ} = $half;
	$node->start;
}

if ($tsc)
{
	my $r = tsc_row($node);
	is($r->{khz}, $half, 'TIMING_SOURCE_TEST_KHZ sets the frequency in use');
	like($r->{source}, qr/overridden by TIMING_SOURCE_TEST_KHZ/, 'and the source says so');

	# shorter than 10 ms: not a check.  Where even this query takes 10 ms
	# by the system clock (an emulated CPU under load), the watchdog rightly
	# judges it; then a fresh server for the checks that follow.
	my ($ms, $err, $exec_ms) = sleep_plan($node, 0.001);
	SKIP:
	{
		if ($exec_ms >= 9)
		{
			local $ENV{TIMING_SOURCE_TEST_KHZ} = $half;
			$node->restart;
			skip "a 1 ms sleep took $exec_ms ms to execute here, so it is not a query under 10 ms", 2;
		}
		is(tsc_row($node)->{checks}, 0, 'a query under 10 ms is not checked');
		is($err, '', 'and warns nothing');
	}

	($ms, $err) = sleep_plan($node, 0.05);
	my @warnings = ($err =~ /WARNING:/g);
	is(scalar @warnings, 1, 'the first TSC-timed query over 10 ms warns once');
	like($err, qr/WARNING:  timing_source: the TSC and the system clock disagree by 100\.\d% over this query/,
		'the WARNING gives the disagreement');
	like($err, qr/DETAIL:  The system clock measured \d+\.\d+ ms and the TSC, at $half kHz, \d+\.\d+ ms\. This query's per-node times are suspect\. timing_source has stopped using the TSC in every session\.\n/,
		'its DETAIL gives both figures and says the times are suspect');
	like($err, qr/HINT:  The TSC frequency in use is wrong.* timing_source re-calibrates the TSC later and uses it again once it proves stable;/,
		'its HINT names the likely cause and says the TSC may come back (t/064 tests that)');
	cmp_ok($ms, '>', 90, "that query's own times are the suspect ones ($ms ms for a 50 ms sleep)");

	$r = tsc_row($node);
	is($r->{checks} . '/' . $r->{failures}, '1/1', 'one check, one failure counted');
	is($r->{available} . $r->{in_use}, 'ff', 'the TSC is no longer used');
	like($r->{reason}, qr/^The per-query watchdog found the TSC, at $half kHz, \+100\.\d% off the system clock over a query of \d+\.\d ms\.$/,
		'reason_unusable says why');

	# a new session of the same server: system clock, right times
	my $calls = $r->{calls};
	my $best = 1e9;
	for (1 .. 3)
	{
		($ms, $err) = sleep_plan($node, 0.05);
		$best = $ms if abs($ms - 50) < abs($best - 50);
		is($err, '', 'later queries warn nothing') if $_ == 1;
	}
	cmp_ok(abs($best - 50), '<', 5, "later queries report correct times ($best ms for 50 ms, best of 3)");
	$r = tsc_row($node);
	is($r->{calls}, $calls, 'and no call is timed with the TSC any more');
	is($r->{failures}, 1, 'no further failure');
	my ($ret, $out, $err2) = $node->psql('postgres', q{SET timing_clock_source = 'tsc'});
	like($err2, qr/DETAIL:  The per-query watchdog found the TSC/, "an explicit 'tsc' is refused with the watchdog's finding");

	# A session whose parallel workers were told "use the TSC" before the
	# trip must tell them otherwise after it.
	$node->stop;
	{
		local $ENV{TIMING_SOURCE_TEST_KHZ} = $half;
		$node->start;
	}
	$node->safe_psql('postgres', 'CREATE TABLE p AS SELECT g FROM generate_series(1, 2000) g; VACUUM ANALYZE p');
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	$s->query_safe(q{
		SET max_parallel_workers_per_gather = 2; SET parallel_leader_participation = off;
		SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0});
	my $calls_of = sub { my $o = $s->query('SELECT tsc_timed_calls FROM timing_source_tsc()'); chomp $o; $o };
	my $c0 = $calls_of->();
	$s->query('EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM p');
	my $c1 = $calls_of->();
	cmp_ok($c1 - $c0, '>=', 2000, 'before the trip, parallel workers time with the TSC');
	$s->query('EXPLAIN (ANALYZE, COSTS OFF) SELECT pg_sleep(0.05)');
	is(tsc_row($node)->{failures}, 1, 'the watchdog tripped in that session');
	my $c2 = $calls_of->();
	my ($plan) = $s->query('EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM p');
	like($plan, qr/Workers Launched: [1-9]/, 'a parallel query after the trip');
	is($calls_of->(), $c2, 'its workers no longer time with the TSC');
	$s->quit;
}
else
{
	my $r = tsc_row($node);
	isnt($r->{khz}, $half, 'the override is ignored where the TSC is unusable');
	my ($ms, $err) = sleep_plan($node, 0.05);
	is($err, '', 'no watchdog warning without the TSC');
	cmp_ok(abs($ms - 50), '<', 10, "times are right ($ms ms for 50 ms)");
	is(tsc_row($node)->{checks}, 0, 'nothing is checked');
}
$node->stop;

# No false trips: the real frequency, CPUs oversubscribed
$node->start;
my $ncpu = 2;
if (open my $ci, '<', '/proc/cpuinfo')
{
	$ncpu = grep { /^processor\s*:/ } <$ci>;
	close $ci;
}
my @busy;
for (1 .. 2 * $ncpu)
{
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		alarm 120;
		1 while 1;
		exit 0;
	}
	push @busy, $pid;
}
my $queries = 100;
my $sql = join '', map {
	"EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM generate_series(1, 200000);\n"
} 1 .. $queries;
my ($ret, $out, $err) = $node->psql('postgres', $sql);
kill 'KILL', @busy;
waitpid($_, 0) for @busy;
is($ret, 0, "$queries timed queries ran with " . 2 * $ncpu . ' busy loops on the CPUs');
unlike($err, qr/WARNING/, 'no watchdog warning');
my $r = tsc_row($node);
is($r->{failures}, 0, 'no watchdog failure counted');
if ($tsc)
{
	cmp_ok($r->{checks}, '>=', $queries / 2,
		"the queries were really checked ($r->{checks} of $queries; queries under 10 ms or too disturbed to judge are not)");
}
else
{
	is($r->{checks}, 0, 'nothing checked without the TSC');
}
$node->stop;

done_testing();
