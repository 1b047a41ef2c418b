# pg_cancel_backend() from another session stops the measurement loops
# promptly: a 60-second histogram is cancelled once it is running, and the
# session must report the cancel well before the loop would have ended.
# The bound is deliberately loose (a few seconds, against a 60 s loop):
# the tight 100 ms bound is checked in test/sql/diag_interrupt.sql, where the
# server measures it itself; here the point is the other path, a signal
# from another backend.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use TimingSourceExpect;
use Time::HiRes qw(time);

my $node = PostgreSQL::Test::Cluster->new('diag_cancel');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'timing_source'\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION timing_source');
expect_tsc_state($node);

my @calls = (q{timing_source_histogram('system', 60)}, q{timing_source_test(60)});
push @calls, q{timing_source_durations('rdtsc', 60)}
  if $node->safe_psql('postgres', 'SELECT available FROM timing_source_tsc()') eq 't';

for my $call (@calls)
{
	my $bg = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $bg->query_safe('SELECT pg_backend_pid()');
	$bg->query_until(qr/started/, qq{\\echo started\nSELECT count(*) FROM $call;\n});
	$node->poll_query_until('postgres',
		qq{SELECT state = 'active' AND query LIKE '%timing_source_%' FROM pg_stat_activity WHERE pid = $pid})
	  or die "$call did not start";

	my $t0 = time;
	$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
	my $out = $bg->query('SELECT 1');
	my $elapsed = time - $t0;

	like($bg->{stderr}, qr/canceling statement due to user request/, "$call: cancelled");
	cmp_ok($elapsed, '<', 5, "$call: session free again in well under the loop's 60 s");
	note(sprintf('%s: cancel to next result %.1f ms', $call, $elapsed * 1000));
	$bg->quit;
}

$node->stop;
done_testing();
