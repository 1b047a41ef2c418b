#
# The library loaded on demand, not preloaded: detection (CPU probe and
# calibration) happens when the library is loaded into a backend (LOAD,
# session_preload_libraries, the first function call), never inside SHOW or a
# timed query, and parallel workers never detect: they take the leader's
# decision, and time with the TSC exactly when the leader does.
#
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use TimingSourceExpect;

my $node = PostgreSQL::Test::Cluster->new('on_demand');
$node->init;
$node->append_conf('postgresql.conf', q{
log_min_messages = debug1
log_line_prefix = '[%p] '
max_worker_processes = 8
max_parallel_workers = 4
max_parallel_workers_per_gather = 2
parallel_leader_participation = off
parallel_setup_cost = 0
parallel_tuple_cost = 0
min_parallel_table_scan_size = 0
jit = off
});
$node->start;
$node->safe_psql('postgres',
	'CREATE TABLE t AS SELECT g FROM generate_series(1, 20000) g; VACUUM ANALYZE t');

# detection lines and TSC-binding lines in the log since an offset, by pid
sub log_since
{
	my ($offset) = @_;
	my $log = slurp_file($node->logfile, $offset);
	my (%detect, %bind);
	while ($log =~ /^\[(\d+)\] DEBUG:  timing_source: clock detection in process \d+: (.*)$/mg)
	{
		push @{ $detect{$1} }, $2;
	}
	while ($log =~ /^\[(\d+)\] DEBUG:  timing_source: (\d+) plan nodes timed with the TSC$/mg)
	{
		$bind{$1} += $2;
	}
	return (\%detect, \%bind);
}

my $offset = -s $node->logfile;
my $sql = q{
SELECT pg_backend_pid();
LOAD 'timing_source';
SELECT 'after-load';
SHOW timing_clock_source;
EXPLAIN (ANALYZE, COSTS OFF) SELECT 1;
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM t;
SET timing_clock_source = 'system';
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM t;
};
my $out = $node->safe_psql('postgres', $sql);
my ($pid) = $out =~ /^(\d+)$/m;
my ($shown) = $out =~ /^(auto \((?:tsc|system)\))$/m;
my $tsc = defined $shown && $shown eq 'auto (tsc)';
note "backend $pid, SHOW: " . ($shown // '?');
my @launched = $out =~ /Workers Launched: (\d+)/g;

my ($detect, $bind) = log_since($offset);
is_deeply([ keys %$detect ], [$pid], 'only the backend that loaded the library detected');
is(scalar @{ $detect->{$pid} // [] }, 1, 'and it detected once');
my $log = slurp_file($node->logfile, $offset);
like($log, qr/statement: SELECT pg_backend_pid\(\);.*clock detection in process $pid.*statement: SELECT 'after-load'/s,
	'detection happened at LOAD, before any later statement');
unlike($log, qr/statement: SELECT 'after-load'.*clock detection/s,
	'SHOW and the timed queries did not detect');

cmp_ok($launched[0] // 0, '>=', 1, 'the parallel query launched workers');
my @workers = grep { $_ != $pid } keys %$bind;
# 19+: SHOW is core's, and "auto (tsc)" means core's TSC, which the
# wrappers then read: the same binding as on 15-18
if ($tsc)
{
	ok(@workers >= 1, 'parallel workers timed their nodes with the TSC, on the leader\'s decision ('
		  . scalar(@workers) . ' workers)');
	is($bind->{$pid}, 1 + 4, 'the leader bound SELECT 1 (1 node) and the whole parallel plan (4 nodes)')
	  or diag explain $bind;
}
else
{
	is(scalar @workers, 0, 'where the TSC is unusable no worker binds to it');
	is($bind->{$pid}, undef, 'nor does the leader');
}

# session_preload_libraries: detection at connection
$node->safe_psql('postgres', q{ALTER SYSTEM SET session_preload_libraries = 'timing_source'});
$node->reload;
$node->poll_query_until('postgres', q{SELECT current_setting('session_preload_libraries') = 'timing_source'})
  or die 'reload not seen';
$offset = -s $node->logfile;
$out = $node->safe_psql('postgres', q{SELECT pg_backend_pid(); SHOW timing_clock_source;});
($pid) = $out =~ /^(\d+)$/m;
($detect) = log_since($offset);
is_deeply([ keys %$detect ], [$pid], 'session_preload_libraries: the new backend detected');
like(slurp_file($node->logfile, $offset), qr/clock detection in process $pid.*statement: SELECT pg_backend_pid/s,
	'at connection, before its first statement');
$node->safe_psql('postgres', q{ALTER SYSTEM RESET session_preload_libraries});
$node->reload;
$node->poll_query_until('postgres', q{SELECT current_setting('session_preload_libraries') = ''})
  or die 'reload not seen';

# CREATE EXTENSION does not load the library (PostgreSQL does not validate
# C functions in extension scripts); a session's first call of one of its
# functions does, and detects there
$offset = -s $node->logfile;
$out = $node->safe_psql('postgres', q{SELECT pg_backend_pid(); CREATE EXTENSION timing_source;});
($detect) = log_since($offset);
is_deeply($detect, {}, 'CREATE EXTENSION alone does not load the library, so nothing is detected');

$offset = -s $node->logfile;
$out = $node->safe_psql('postgres', q{SELECT pg_backend_pid(); SELECT available FROM timing_source_tsc();});
($pid) = $out =~ /^(\d+)$/m;
($detect) = log_since($offset);
is_deeply([ keys %$detect ], [$pid], 'the first function call of a session detects');
expect_tsc_state($node);

$node->stop;
done_testing();
