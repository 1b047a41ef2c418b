#
# Per-node statistics across executions (timing_source.track_nodes) over a
# server's life: eviction at a small track_max, counted as dealloc; the
# statistics survive a clean restart, not one with track_save off, and an
# immediate stop (a crash: no save) leaves a readable, consistent state;
# parallel workers' rows are included; top vs all with a SQL function's
# nested statement; track_max needs a restart; the README's example
# joining pg_stat_statements on queryid, where it is installed.
#
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use TimingSourceExpect;

my $node = PostgreSQL::Test::Cluster->new('track_nodes');
$node->init;

# pg_stat_statements beside it where it is installed, for the example
my $pgss = -e $node->config_data('--sharedir') . '/extension/pg_stat_statements.control';
my $preload = $pgss ? 'timing_source, pg_stat_statements' : 'timing_source';
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = '$preload'
timing_source.track_nodes = top
timing_source.track_max = 100
restart_after_crash = on
jit = off
max_parallel_workers_per_gather = 2
max_worker_processes = 8
max_parallel_workers = 8
parallel_setup_cost = 0
parallel_tuple_cost = 0
min_parallel_table_scan_size = 0
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION timing_source;
	CREATE TABLE t AS SELECT g AS id, g % 10 AS k FROM generate_series(1, 300000) g;
	VACUUM ANALYZE t;
	CREATE FUNCTION f() RETURNS bigint LANGUAGE sql
	    AS 'SELECT count(*) FROM t WHERE id <= 1000';
});
expect_tsc_state($node);

# the view's rows of the plans that scan t
my $rows_of_t = q{
	SELECT string_agg(format('%s:%s:%s:%s', node_id, node_type, executions, rows), ' '
	                  ORDER BY planid, node_id)
	  FROM timing_source_plan_nodes
	 WHERE queryid IN (SELECT queryid FROM timing_source_plan_nodes
	                    WHERE relation = 'public.t')
	   AND planid IN (SELECT planid FROM timing_source_plan_nodes
	                   WHERE node_id = 1 AND node_type = 'Aggregate')};

# track_max is fixed at server start
my ($ret, $out, $err) = $node->psql('postgres',
	'SET timing_source.track_max = 500');
like($err, qr/cannot be changed without restarting the server/,
	'track_max cannot be changed in a session');

# parallel: the workers' rows are in the scan's count (a third of the
# table matches, exactly), and the plan has a Gather
$node->safe_psql('postgres', 'SELECT timing_source_plan_nodes_reset()');
$node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE id % 3 = 0') for 1 .. 3;
$out = $node->safe_psql('postgres', q{
	SELECT bool_or(node_type = 'Gather'),
	       max(rows) FILTER (WHERE relation = 'public.t'),
	       max(executions) FILTER (WHERE relation = 'public.t')
	  FROM timing_source_plan_nodes
	 WHERE queryid IN (SELECT queryid FROM timing_source_plan_nodes WHERE relation = 'public.t')});
is($out, 't|300000|3', 'parallel plan: workers\' rows included, three executions');

# top vs all: the function's statement is nested
$node->safe_psql('postgres', 'SELECT timing_source_plan_nodes_reset()');
$node->safe_psql('postgres', 'SELECT f()');
is($node->safe_psql('postgres',
		q{SELECT count(*) FROM timing_source_plan_nodes WHERE relation = 'public.t'}),
	'0', 'top: a SQL function\'s statement is not tracked');
$node->safe_psql('postgres', q{SET timing_source.track_nodes = 'all'; SELECT f()});
is($node->safe_psql('postgres',
		q{SELECT rows FROM timing_source_plan_nodes WHERE relation = 'public.t'}),
	'1000', 'all: the nested statement is tracked, its rows exact');

# a clean restart keeps the statistics and the counters
$node->safe_psql('postgres', 'SELECT timing_source_plan_nodes_reset()');
$node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE k = 1') for 1 .. 4;
my $before = $node->safe_psql('postgres', $rows_of_t);
like($before, qr/^1:Aggregate:4:4 /, 'four executions tracked');
my $reset_before = $node->safe_psql('postgres',
	'SELECT stats_reset FROM timing_source_plan_nodes_info()');
$node->restart;
is($node->safe_psql('postgres', $rows_of_t), $before,
	'the statistics survive a clean restart');
is($node->safe_psql('postgres', 'SELECT stats_reset FROM timing_source_plan_nodes_info()'),
	$reset_before, 'and so does the last reset\'s time');

# the same plan after the restart: the same entry, one more execution
$node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE k = 2');
like($node->safe_psql('postgres', $rows_of_t), qr/^1:Aggregate:5:5 /,
	'the plan id is the same after a restart');

# an immediate stop is still an orderly exit of the postmaster, which
# saves (as pg_stat_statements does): the five executions are kept
$node->stop('immediate');
$node->start;
like($node->safe_psql('postgres', $rows_of_t), qr/^1:Aggregate:5:5 /,
	'an immediate stop keeps what was gathered');

# a SIGKILLed backend makes the postmaster reinitialize shared memory
# without saving: what was gathered since the start is lost (the start
# removed the file), and the state is empty and readable, not corrupt
my $bg = $node->background_psql('postgres');
my $pid = $bg->query_safe(q{SELECT pg_backend_pid()});
chomp $pid;
$node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE k = 4');
kill 'KILL', $pid;
eval { $bg->quit; };
$node->poll_query_until('postgres', 'SELECT true') or die 'server did not come back';
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM timing_source_plan_nodes WHERE relation = 'public.t'}),
	'0', 'after a crash what was not saved is gone');
is($node->safe_psql('postgres', q{
	SELECT entries >= 0 AND dealloc = 0 AND not_tracked = 0
	  FROM timing_source_plan_nodes_info()}), 't', 'the state is readable after a crash');
$node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE k = 3') for 1 .. 2;
like($node->safe_psql('postgres', $rows_of_t), qr/^1:Aggregate:2:2 /,
	'tracking works after a crash');

# track_save off: a clean restart keeps nothing
$node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE k = 5');
$node->append_conf('postgresql.conf', 'timing_source.track_save = off');
$node->restart;
is($node->safe_psql('postgres', 'SELECT count(*) FROM timing_source_plan_nodes'),
	'0', 'with track_save off nothing survives a restart');
$node->append_conf('postgresql.conf', 'timing_source.track_save = on');
$node->reload;

# eviction: more plans than track_max (100), each run once, then one run
# many times: it stays, others are evicted and counted
$node->safe_psql('postgres', 'SELECT timing_source_plan_nodes_reset()');
$node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE k = 6') for 1 .. 5;
my $sql = '';
for my $i (1 .. 150)
{
	# distinct query ids: a different number of columns each
	$sql .= 'SELECT ' . join(', ', ('1') x $i) . " FROM t WHERE id = 1;\n";
}
$node->safe_psql('postgres', $sql);
$out = $node->safe_psql('postgres',
	'SELECT dealloc > 0, entries <= max, max FROM timing_source_plan_nodes_info()');
is($out, 't|t|100', 'eviction at track_max is counted in dealloc');
like($node->safe_psql('postgres', $rows_of_t), qr/^1:Aggregate:5:5 /,
	'the most used plan is not evicted');

# eight clients at once: no execution lost to the locking (pgbench's
# select-only statement, prepared, run exactly 8 x 200 times)
$node->command_ok([ 'pgbench', '-i', '-s', '1', '-q', $node->connstr('postgres') ],
	'pgbench initialized');
$node->safe_psql('postgres', 'SELECT timing_source_plan_nodes_reset()');
$node->command_ok([ 'pgbench', '-n', '-S', '-M', 'prepared', '-c', '8', '-j', '2',
		'-t', '200', $node->connstr('postgres') ],
	'pgbench with tracking on, 8 clients, no error');
is($node->safe_psql('postgres', q{
	SELECT sum(executions), sum(rows) FROM timing_source_plan_nodes
	 WHERE node_id = 1 AND queryid IN (SELECT queryid FROM timing_source_plan_nodes
	                                    WHERE relation = 'public.pgbench_accounts')}),
	'1600|1600', 'every execution of the 8 clients counted, one row each');

# the README's example: the ten most expensive plan nodes, with their
# statements' text from pg_stat_statements
SKIP:
{
	skip 'pg_stat_statements is not installed', 1 unless $pgss;
	$node->safe_psql('postgres', 'CREATE EXTENSION pg_stat_statements');
	$node->safe_psql('postgres', 'SELECT timing_source_plan_nodes_reset()');
	$node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE k = 7') for 1 .. 2;
	$out = $node->safe_psql('postgres', q{
SELECT s.query, n.node_id, n.node_type, n.relation,
       n.executions, n.rows / nullif(n.counted_executions, 0) AS rows_per_execution,
       round(n.total_time_ms::numeric, 3) AS total_ms
  FROM timing_source_plan_nodes n
  JOIN pg_stat_statements s
    ON s.queryid = n.queryid AND s.userid = n.userid AND s.dbid = n.dbid
 ORDER BY n.total_time_ms DESC NULLS LAST, n.rows DESC
 LIMIT 10});
	like($out, qr/SELECT count\(\*\) FROM t WHERE k = \$1\|\d+\|Seq Scan\|public\.t\|2\|30000\|/,
		'the README example joins pg_stat_statements on queryid');
}

$node->stop;
done_testing();
