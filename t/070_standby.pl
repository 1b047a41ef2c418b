#
# Hot standby: the extension's objects replicate, EXPLAIN ANALYZE on the
# standby is timed with the TSC where it is usable (and with the system
# clock otherwise), and the diagnostics work there.
#
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use TimingSourceExpect;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', q{
shared_preload_libraries = 'timing_source'
max_parallel_workers_per_gather = 0
});
$primary->start;
$primary->safe_psql('postgres', q{
	CREATE EXTENSION timing_source;
	CREATE TABLE t AS SELECT g FROM generate_series(1, 10000) g;
});
expect_tsc_state($primary);
$primary->backup('bk');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'bk', has_streaming => 1);
$standby->start;

# something created after the backup must arrive by streaming too
$primary->safe_psql('postgres', q{
	CREATE TABLE t2 AS SELECT g FROM generate_series(1, 10) g;
	ALTER EXTENSION timing_source UPDATE;
});
$primary->wait_for_catchup($standby);

is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', 'the standby is in recovery');
is($standby->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'timing_source'}),
	$primary->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'timing_source'}),
	'the extension replicated, at the primary\'s version');
my $members = q{SELECT string_agg(pg_describe_object(classid, objid, objsubid), ', ' ORDER BY 1)
	FROM pg_depend WHERE refobjid = (SELECT oid FROM pg_extension WHERE extname = 'timing_source') AND deptype = 'e'};
is($standby->safe_psql('postgres', $members), $primary->safe_psql('postgres', $members),
	'with the same members');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM t2'), '10', 'streaming works');

my $tsc = $standby->safe_psql('postgres', 'SELECT available FROM timing_source_tsc()') eq 't';
note $tsc ? 'TSC usable' : 'TSC unusable on this server';

# calls timed with the TSC by one EXPLAIN ANALYZE on the standby
sub timed_calls
{
	my ($setting) = @_;
	my $out = $standby->safe_psql('postgres', qq{
		SET timing_clock_source = '$setting';
		SELECT tsc_timed_calls FROM timing_source_tsc();
		EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM t;
		SELECT tsc_timed_calls FROM timing_source_tsc();});
	my @n = $out =~ /^(\d+)$/mg;
	return $n[-1] - $n[0];
}
# PostgreSQL 19 and later: the wrappers read core's clock, so what counts
# is whether core's "auto" resolves to its TSC
my $pg_major = pg_major($standby);
my $timed_tsc = $pg_major >= 19
  ? $standby->safe_psql('postgres', 'SHOW timing_clock_source') eq 'auto (tsc)'
  : $tsc;
is(timed_calls('auto'), $timed_tsc ? 10003 : 0,
	$timed_tsc ? 'EXPLAIN ANALYZE on the standby is timed with the TSC: 10,003 calls'
	: 'EXPLAIN ANALYZE on the standby: no call timed with the TSC where it is unusable');
is(timed_calls('system'), 0, 'under system, none');

my $row = $standby->safe_psql('postgres', q{
	SELECT (SELECT count(*) FROM timing_source_histogram('system', 0.05) WHERE count > 0) > 0,
	       (SELECT sum(loops) FROM timing_source_test(0.05)) > 0,
	       (SELECT count(*) FROM timing_source_report(0.05)) > 10,
	       (SELECT count(*) FROM timing_source_durations('system', 0.05)) > 0,
	       (SELECT count(*) FROM timing_source_compare('SELECT count(*) FROM t', 1)) >= 3});
is($row, 't|t|t|t|t', 'histogram, test, report, durations and compare run on the standby');
if ($tsc)
{
	is($standby->safe_psql('postgres', q{SELECT bool_and(converged) FROM timing_source_calibrate(2)}),
		't', 'calibration runs on the standby');
}
else
{
	my ($ret, $out, $err) = $standby->psql('postgres', q{SELECT * FROM timing_source_histogram('rdtsc', 0.05)});
	like($err, qr/clock source "rdtsc" is not available on this system/,
		'the TSC sources are refused on the standby with the reason');
}

$standby->stop;
$primary->stop;
done_testing();
