#
# Recovery after a watchdog trip.  The server starts with the test-only
# TIMING_SOURCE_TEST_KHZ at half the real TSC frequency, so the first
# TSC-timed query of 10 ms or more trips the watchdog.  With the
# re-calibration interval shortened (TIMING_SOURCE_TEST_RECOVER_MS) and the
# frequency every re-calibration reports taken from a file the test rewrites
# (TIMING_SOURCE_TEST_CAL_KHZ_FILE, with a bound that also makes each
# calibration converged: a real one may miss its bound on a loaded host,
# which would reset the candidate and shift the exact counts below):
#
#   - two calibrations that disagree keep the TSC off, and 'tsc' refused;
#   - two that agree on a wrong rate put it on probation, where the next
#     checked query fails it again (logged, no client warning);
#   - two that agree on the real rate put it on probation, and after
#     exactly three checked queries it is used again at that frequency, in
#     new sessions and by parallel workers, with right times;
#   - every event is counted and logged once;
#   - loaded on demand, the same happens within one session.
#
# Where the TSC is unusable (the *_notsc run) nothing trips, nothing is
# re-calibrated, and the seams change nothing.
#
use strict;
use warnings;

use JSON::PP;
use Time::HiRes qw(sleep);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use TimingSourceExpect;

my $node = PostgreSQL::Test::Cluster->new('recovery');

# The scenario needs queries that the watchdog does not judge (under its
# 10 ms minimum) between the ones it does; under an emulated CPU (the
# arm64 root) such queries take 20 ms or more, so a query meant to be
# unjudged trips the watchdog and the sequence cannot be followed.  The
# recovery is the same C code on every architecture, checked natively.
if ($ENV{TS_EMULATED})
{
  SKIP:
	{
		skip 'under an emulated CPU the queries this test needs under 10 ms take longer', 1;
	}
	done_testing();
	exit 0;
}

skip_all_from_major($node, 19,
	'the wrappers read core\'s clock, whose trust is core\'s decision, so the extension has no watchdog to recover from there');
start_preloaded($node);
my ($tsc, $khz) = tsc_of($node);
$node->stop;

my $cal_file = $node->basedir . '/cal_khz';

sub set_cal
{
	my ($v) = @_;
	open my $f, '>', "$cal_file.tmp" or die "$cal_file.tmp: $!";
	print $f "$v 20\n";
	close $f;
	rename "$cal_file.tmp", $cal_file or die "rename: $!";
}

# EXPLAIN (ANALYZE, FORMAT JSON) of pg_sleep(secs): (Result node total ms,
# psql's stderr, Execution Time ms).  The client asks for LOG messages
# (but not the statements' own, log_statement being 'all' in the test
# cluster): the recovery's log lines are for the server log only, and must
# not reach it.
my $client_log = '-c client_min_messages=log -c log_statement=none';
sub sleep_plan
{
	my ($secs) = @_;
	local $ENV{PGOPTIONS} = $client_log;
	my ($ret, $out, $err) = $node->psql('postgres',
		"EXPLAIN (ANALYZE, FORMAT JSON) SELECT pg_sleep($secs)");
	die "EXPLAIN failed: $err" if $ret != 0;
	my $e = decode_json($out)->[0];
	return ($e->{Plan}{'Actual Total Time'}, $err, $e->{'Execution Time'});
}

# sleep_plan in the session with the cursor: (node total ms, Execution Time ms)
my $cur;
sub cursor_sleep
{
	my $e = decode_json($cur->query_safe(
		'EXPLAIN (ANALYZE, FORMAT JSON) SELECT pg_sleep(0.05)'))->[0];
	return ($e->{Plan}{'Actual Total Time'}, $e->{'Execution Time'});
}

my $held_back = "The TSC has a new frequency, taken up once this session's queries timed with the old one have ended.";
sub cursor_reason
{
	return $cur->query_safe('SELECT reason_unusable FROM timing_source_tsc()');
}

sub tsc_row
{
	my $row = $node->safe_psql('postgres', q{
		SELECT available, in_use, frequency_khz, frequency_source,
		       coalesce(reason_unusable, ''), watchdog_checks, watchdog_failures,
		       tsc_timed_calls, recalibrations, recalibrations_agreed,
		       watchdog_recoveries
		  FROM timing_source_tsc()});
	my %r;
	@r{qw(available in_use khz source reason checks failures calls recal agreed recovered)} =
	  split /\|/, $row;
	return \%r;
}

# Timed queries too short for the watchdog, until one of them has run the
# next re-calibration (the wait grows after each failed attempt)
my $client_logs = '';
sub next_recalibration
{
	my $before = tsc_row()->{recal};
	for (1 .. 120)
	{
		sleep 0.25;
		local $ENV{PGOPTIONS} = $client_log;
		my ($ret, $out, $err) = $node->psql('postgres',
			'EXPLAIN (ANALYZE, COSTS OFF) SELECT 1');
		die "EXPLAIN failed: $err" if $ret != 0;
		$client_logs .= $err;
		my $r = tsc_row();
		return $r if $r->{recal} > $before;
	}
	die "no re-calibration within 30 s";
}

sub log_count
{
	my ($re) = @_;
	my @m = (slurp_file($node->logfile) =~ /$re/g);
	return scalar @m;
}

sub tsc_refused
{
	my ($ret, $out, $err) = $node->psql('postgres', q{SET timing_clock_source = 'tsc'});
	return $ret != 0 ? $err : '';
}

my $half = $tsc ? int($khz / 2) : 1300000;
set_cal(int($khz * 0.9));
{
	local $ENV{TIMING_SOURCE_TEST_KHZ} = $half;
	local $ENV{TIMING_SOURCE_TEST_RECOVER_MS} = 200;
	local $ENV{TIMING_SOURCE_TEST_CAL_KHZ_FILE} = $cal_file;
	$node->start;
}

if (!$tsc)
{
	my $reason = tsc_row()->{reason};
	my ($ms, $err) = sleep_plan(0.05);
	is($err, '', 'no watchdog warning without the TSC');
	$node->safe_psql('postgres', 'EXPLAIN (ANALYZE) SELECT 1') for 1 .. 3;
	sleep 0.5;
	$node->safe_psql('postgres', 'EXPLAIN (ANALYZE) SELECT 1');
	my $r = tsc_row();
	is("$r->{failures}/$r->{recal}/$r->{agreed}/$r->{recovered}", '0/0/0/0',
		'nothing fails, nothing is re-calibrated or recovered');
	is("$r->{available}/$r->{reason}", "f/$reason",
		'and the TSC stays unusable for its own reason');
	$node->stop;
	done_testing();
	exit 0;
}

# A session with a query timed with the TSC open across the whole recovery
# (a cursor timed by auto_explain): that query's nodes convert with the
# multiplier they started with, so the session may take up no new
# frequency until it ends
$cur = $node->background_psql('postgres', on_error_stop => 0);
$cur->query_safe(q{LOAD 'auto_explain'; SET auto_explain.log_analyze = on;
	SET auto_explain.log_timing = on; SET auto_explain.log_min_duration = 0});
$cur->query_safe('BEGIN');
$cur->query_safe('DECLARE c CURSOR FOR SELECT g FROM generate_series(1, 10) g');
$cur->query_safe('FETCH 1 FROM c');
is($cur->query_safe('SELECT in_use FROM timing_source_tsc()'), 't',
	'a cursor is open in a session timing with the TSC');

# the trip (the session with the cursor, whose queries auto_explain times,
# asked at once: before the first re-calibration is due, which it could
# run itself)
my ($ms, $err) = sleep_plan(0.05);
like(cursor_reason(), qr/^The per-query watchdog found the TSC, at $half kHz/,
	'the session with the cursor has the trip for reason');
like($err, qr/WARNING:  timing_source: the TSC and the system clock disagree by 100\.\d% over this query/,
	'the first TSC-timed query over 10 ms trips the watchdog');
like($err, qr/HINT: .*re-calibrates the TSC later and uses it again once it proves stable/,
	'its HINT says the TSC may come back');
my $r = tsc_row();
is("$r->{available}$r->{in_use}/$r->{failures}/$r->{recal}", 'ff/1/0',
	'the TSC is off, one failure, nothing re-calibrated yet');
is(log_count(qr/LOG:  timing_source: the per-query watchdog stopped the TSC\n.*DETAIL:  The per-query watchdog found the TSC, at $half kHz/),
	1, 'the server log has the trip once, with the finding');
is(log_count(qr/WARNING:  timing_source: the TSC and the system clock disagree/), 0,
	'and not the client\'s WARNING besides');

# two calibrations that disagree (10% below, 10% above)
$r = next_recalibration();
is("$r->{recal}/$r->{agreed}/$r->{available}", '1/0/f', 'a first re-calibration alone changes nothing');
set_cal(int($khz * 1.1));
$r = next_recalibration();
is("$r->{recal}/$r->{agreed}/$r->{available}", '2/0/f', 'a second that disagrees keeps the TSC off');
like($r->{reason}, qr/^The per-query watchdog found the TSC, at $half kHz/, 'reason_unusable is still the trip');
like(tsc_refused(), qr/ERROR:  invalid value for parameter "timing_clock_source": "tsc"\nDETAIL:  The per-query watchdog found the TSC/,
	"an explicit 'tsc' is refused meanwhile, with the trip's finding");

# two that agree on a wrong rate: probation, failed by the next checked query
set_cal($half);
$r = next_recalibration();
is("$r->{recal}/$r->{agreed}", '3/0', 'the first at the new value disagrees with the one before');
$r = next_recalibration();
is("$r->{recal}/$r->{agreed}/$r->{available}/$r->{khz}", "4/1/f/$half",
	'two that agree put the TSC on probation at their frequency, still off');
is(cursor_reason(), $held_back, 'the session with the cursor is held back from the probation\'s frequency');
like($r->{reason}, qr/^The TSC is on probation after the per-query watchdog stopped it: two calibrations agreed on $half kHz, and it is used again once 3 timed queries in a row pass the watchdog \(0 so far\)\.$/,
	'reason_unusable says it is on probation');
like(tsc_refused(), qr/DETAIL:  The TSC is on probation/, "'tsc' is refused on probation");
is(log_count(qr/LOG:  timing_source: two calibrations after the watchdog trip agree on a TSC frequency of $half kHz/),
	1, 'the agreement is logged once');
my $calls = $r->{calls};
my $exec_ms;
($ms, $err, $exec_ms) = sleep_plan(0.05);
is($err, '', 'a query checked on probation warns no client: its nodes were on the system clock');
like(cursor_reason(), qr/^On probation after a watchdog trip, the per-query watchdog found the TSC, at $half kHz/,
	'the held-back session takes up the failure\'s reason');
# on the system clock the node is inside Execution Time, whatever the load;
# on the TSC at half its rate it would read about twice as long
ok($ms >= 49.9 && $ms <= $exec_ms,
	"and its times are right ($ms ms for 50 ms, within the Execution Time of $exec_ms ms)");
$r = tsc_row();
is("$r->{failures}/$r->{available}/$r->{recovered}", '2/f/0', 'the wrong rate fails probation');
is($r->{calls}, $calls, 'no node was timed with the TSC on probation');
like($r->{reason}, qr/^On probation after a watchdog trip, the per-query watchdog found the TSC, at $half kHz/,
	'reason_unusable gives the probation\'s failure');
is(log_count(qr/LOG:  timing_source: the TSC failed the watchdog on probation and stays off/), 1,
	'which is logged once');

# two that agree on the real rate: probation, passed after three checks
set_cal($khz);
$r = next_recalibration();
is("$r->{recal}/$r->{agreed}", '5/1', 'after a failed probation, a first calibration again');
$r = next_recalibration();
is("$r->{recal}/$r->{agreed}/$r->{available}/$r->{khz}", "6/2/f/$khz", 'two agree on the real rate: probation');
my $checks = $r->{checks};
my $n = 0;
my $probation_err = '';
for my $try (1 .. 10)
{
	($ms, $err) = sleep_plan(0.05);
	$probation_err .= $err;
	$r = tsc_row();
	$n = $r->{checks} - $checks;
	last if $n >= 3;
	is($r->{available}, 'f', "still off after $n passed check(s)");
}
is($probation_err, '', 'no warning or log line reaches the clients on probation, the return\'s neither');
is("$n/$r->{failures}/$r->{recovered}", '3/2/1', 'used again after exactly three passed checks, counted');
is("$r->{available}$r->{in_use}/$r->{khz}", "tt/$khz", 'the TSC is in use again, at the new frequency');
is($r->{reason}, '', 'no reason_unusable');
like($r->{source}, qr/re-calibration after a watchdog trip$/, 'frequency_source says where the frequency came from');
is(log_count(qr/LOG:  timing_source: the TSC is used again, at $khz kHz\n.*DETAIL:  Two calibrations agreed on that frequency after the watchdog trip, and 3 timed queries in a row passed the watchdog at it\./),
	1, 'the return is logged once');
is(log_count(qr/LOG:  timing_source: the per-query watchdog stopped the TSC/), 1, 'the trip still once');
is(log_count(qr/LOG:  timing_source: two calibrations after the watchdog trip agree/), 2,
	'each agreement once');

is($client_logs, '', 'no client asking for LOG messages got the re-calibrations\' lines');

# from then on: right times with the TSC, 'tsc' accepted, workers too
$calls = $r->{calls};
($ms, $err, $exec_ms) = sleep_plan(0.05);
is($err, '', 'no warning once trusted again');
# a wrong frequency would put the node outside [50 ms, Execution Time],
# whatever the load: twice as long at half the rate, half as long at twice
ok($ms >= 49.9 && $ms <= $exec_ms,
	"times are right ($ms ms for 50 ms, within the Execution Time of $exec_ms ms)");
$r = tsc_row();
cmp_ok($r->{calls}, '>', $calls, 'with nodes timed with the TSC');
is("$r->{failures}/$r->{recovered}", '2/1', 'and no further failure');
is(tsc_refused(), '', "an explicit 'tsc' is accepted again");
$r = tsc_row();
like($node->safe_psql('postgres', q{SELECT string_agg(r, E'\n') FROM timing_source_report(0.01) r}),
	qr/^Watchdog: $r->{checks} checks, 2 failures; after the trips: 6 re-calibrations, 2 agreeing, the TSC used again 1 time\(s\)$/m,
	'timing_source_report() has a line with the watchdog\'s and the recovery\'s counts');

# the session with the cursor still open: held back on the system clock
$calls = tsc_row()->{calls};
($ms, $exec_ms) = cursor_sleep();
my ($avail, $cur_calls, $cur_reason) = split /\|/,
  $cur->query_safe(q{SELECT concat_ws('|', available, tsc_timed_calls, reason_unusable) FROM timing_source_tsc()});
is("$avail/$cur_calls", "f/$calls",
	'a session whose cursor was timed at the old frequency keeps its nodes off the TSC');
is($cur_reason, $held_back, 'reason_unusable says why');
ok($ms >= 49.9 && $ms <= $exec_ms,
	"its times are right meanwhile ($ms ms for 50 ms, within $exec_ms ms)");
$cur->query('CLOSE c');
like($cur->{stderr}, qr/WARNING:  timing_source: the TSC and the system clock disagree by 100\.\d% over this query\n.*The query started before the TSC's frequency changed, and the new one is not affected\./,
	'the cursor, timed at the old frequency, is found off at its end, and said to be stale');
$cur->{stderr} = '';
$cur->query_safe('COMMIT');
($ms, $exec_ms) = cursor_sleep();
($avail, $cur_calls) = split /\|/,
  $cur->query_safe(q{SELECT concat_ws('|', available, tsc_timed_calls, frequency_khz) FROM timing_source_tsc()});
is($avail, 't', 'once the cursor is closed, the session uses the TSC');
cmp_ok($cur_calls, '>', $calls, 'its nodes are timed with it');
ok($ms >= 49.9 && $ms <= $exec_ms,
	"at the new frequency ($ms ms for 50 ms, within $exec_ms ms)");
$cur->quit;
is(log_count(qr/LOG:  timing_source: the per-query watchdog stopped the TSC/), 1,
	'the cursor, checked at the old frequency at its end, is no new trip');

$node->safe_psql('postgres', 'CREATE TABLE p AS SELECT g FROM generate_series(1, 2000) g; VACUUM ANALYZE p');
my $out = $node->safe_psql('postgres', q{
	SET max_parallel_workers_per_gather = 2; SET parallel_leader_participation = off;
	SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
	SELECT tsc_timed_calls FROM timing_source_tsc();
	EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM p;
	SELECT tsc_timed_calls FROM timing_source_tsc();});
my @lines = split /\n/, $out;
like($out, qr/Workers Launched: [1-9]/, 'a parallel query after the recovery');
cmp_ok($lines[-1] - $lines[0], '>=', 2000, 'its workers time with the TSC');

# and at the leader's new frequency: each worker's scan sleeps 20 ms per
# row it returns (pg_sleep is parallel safe; the CASE keeps it after the
# cheaper test), so its time is at least that and, like every node, within
# the Execution Time (system clock); at another frequency it would be off
# by the factor between the two
my $plan = decode_json($node->safe_psql('postgres', q{
	SET max_parallel_workers_per_gather = 2; SET parallel_leader_participation = off;
	SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
	EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON)
	  SELECT g FROM p
	   WHERE CASE WHEN g % 500 = 0 THEN pg_sleep(0.02) IS NOT NULL END}))->[0];
my ($scan) = grep { $_->{Workers} } @{ $plan->{Plan}{Plans} };
my @w = $scan ? @{ $scan->{Workers} } : ();
my ($sleeping, $bad) = (0, '');
for (@w)
{
	my ($t, $rows) = ($_->{'Actual Total Time'}, $_->{'Actual Rows'});
	$sleeping++ if $rows > 0;
	$bad .= " worker $_->{'Worker Number'}: $t ms for $rows x 20 ms;"
	  if $t < 20 * $rows - 0.1 || $t > $plan->{'Execution Time'};
}
ok(@w >= 1 && $sleeping >= 1 && $bad eq '',
	'the workers\' times are right at the new frequency (' . scalar(@w)
	  . " workers, $sleeping sleeping, Execution Time $plan->{'Execution Time'} ms)$bad");
$node->stop;

# Loaded on demand, not preloaded: the same recovery, within one session
# (the state is the process's own)
$node->append_conf('postgresql.conf', "shared_preload_libraries = ''");
set_cal($khz);
{
	local $ENV{TIMING_SOURCE_TEST_KHZ} = $half;
	local $ENV{TIMING_SOURCE_TEST_RECOVER_MS} = 200;
	local $ENV{TIMING_SOURCE_TEST_CAL_KHZ_FILE} = $cal_file;
	$node->start;
}
my $s = $node->background_psql('postgres', on_error_stop => 0);
my $row_of = sub {
	my $o = $s->query(q{SELECT concat_ws('|', available, frequency_khz, watchdog_failures,
		recalibrations, recalibrations_agreed, watchdog_recoveries) FROM timing_source_tsc()});
	chomp $o;
	return $o;
};
is($row_of->(), "t|$half|0|0|0|0", 'loaded in a session, at the wrong frequency');
$s->query('EXPLAIN (ANALYZE, COSTS OFF) SELECT pg_sleep(0.05)');
like($s->{stderr}, qr/timing_source has stopped using the TSC in this session\./, 'the trip stops it in this session');
is($row_of->(), "f|$half|1|0|0|0", 'counted in this session');
my $other = $node->safe_psql('postgres', q{SELECT concat_ws('|', available, watchdog_failures) FROM timing_source_tsc()});
is($other, 't|0', 'another session is not affected');
for (1 .. 120)
{
	last if $row_of->() =~ /\|2\|\d+\|\d+$/;	# two re-calibrations
	sleep 0.25;
	$s->query('EXPLAIN (ANALYZE, COSTS OFF) SELECT 1');
}
is($row_of->(), "f|$khz|1|2|1|0", 'two re-calibrations in the session agree: probation');
for (1 .. 10)
{
	$s->query('EXPLAIN (ANALYZE, COSTS OFF) SELECT pg_sleep(0.05)');
	last if $row_of->() =~ /^t/;
}
is($row_of->(), "t|$khz|1|2|1|1", 'passed checks later the session uses the TSC again, at the new frequency');
$s->quit;
$node->stop;
like(slurp_file($node->logfile), qr/LOG:  timing_source: the TSC is used again, at $khz kHz/,
	'logged as when preloaded');

done_testing();
