#
# timing_source beside the other monitoring extensions DBAs preload with
# it: pg_stat_statements, auto_explain (log_analyze, timing, buffers),
# pg_stat_kcache, pg_qualstats (sample_rate 1), pg_wait_sampling and
# hypopg.  Executor and planner hooks are where extensions break each
# other (one that forgets to chain a hook, or instruments a plan twice),
# so each preload order below -- timing_source first, in the middle, last
# -- gets a server of its own, and each server is checked for
#   - EXPLAIN ANALYZE's rows and loops, exact;
#   - calls timed with the TSC counted exactly where the TSC times them;
#   - exact and sampled times that make sense (no node longer than the
#     query, startup within total);
#   - every other extension still doing its job: pg_stat_statements counts
#     the statements, pg_stat_kcache reports their CPU time, pg_qualstats
#     sees their predicates, pg_wait_sampling sees a sleep, hypopg's
#     hypothetical index is planned, auto_explain logs analyzed plans with
#     buffers;
#   - no WARNING, ERROR, FATAL or PANIC in the server's log.
# pg_stat_statements and auto_explain ship with PostgreSQL; the others
# come from Debian's packages (postgresql-N-pg-stat-kcache, -pg-qualstats,
# -pg-wait-sampling, -hypopg), which the test harness installs where
# Debian has them for the major.  One that is not installed is left out of
# the preload list and its checks are skipped, naming it.
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

# which of the packaged extensions this PostgreSQL has
my $probe = PostgreSQL::Test::Cluster->new('coexist_probe');
my $pkglibdir = $probe->config_data('--pkglibdir');
my $sharedir = $probe->config_data('--sharedir');
my %have;
for my $lib (qw(pg_stat_statements auto_explain pg_stat_kcache pg_qualstats pg_wait_sampling hypopg))
{
	$have{$lib} = -f "$pkglibdir/$lib.so";
	$have{$lib} &&= -f "$sharedir/extension/$lib.control" if $lib ne 'auto_explain';
}
note 'installed: ' . join(', ', grep { $have{$_} } sort keys %have);
note 'not installed: ' . (join(', ', grep { !$have{$_} } sort keys %have) || 'none');
ok($have{pg_stat_statements} && $have{auto_explain}, 'contrib\'s pg_stat_statements and auto_explain are installed');

# the others in the order they are preloaded; pg_stat_kcache needs
# pg_stat_statements before it
my @others = grep { $have{$_} }
  qw(pg_stat_statements pg_stat_kcache auto_explain pg_qualstats pg_wait_sampling hypopg);
# in the middle: after half of the others (pg_stat_statements and
# pg_stat_kcache, when both are there)
my $half = int(@others / 2);
my %orders = (
	first => [ 'timing_source', @others ],
	middle => [ @others[ 0 .. $half - 1 ], 'timing_source', @others[ $half .. $#others ] ],
	last => [ @others, 'timing_source' ],);

sub plan_of
{
	my ($node, $sql) = @_;
	return decode_json($node->safe_psql('postgres', $sql))->[0];
}

# every node of a plan, depth first
sub nodes_of
{
	my ($p) = @_;
	return ($p, map { nodes_of($_) } @{ $p->{Plans} // [] });
}

for my $where (qw(first middle last))
{
	my @preload = @{ $orders{$where} };
	my $node = PostgreSQL::Test::Cluster->new("coexist_$where");
	$node->init;
	$node->append_conf('postgresql.conf', sprintf(q{
shared_preload_libraries = '%s'
max_parallel_workers_per_gather = 0
jit = off
compute_query_id = on
auto_explain.log_min_duration = -1
auto_explain.log_analyze = on
auto_explain.log_timing = on
auto_explain.log_buffers = on
pg_qualstats.sample_rate = 1
}, join(', ', @preload)));
	$node->start;
	my $t = "timing_source $where";
	note "$t: shared_preload_libraries = " . join(', ', @preload);

	$node->safe_psql('postgres', join('',
		map { "CREATE EXTENSION $_;" } 'timing_source', grep { $_ ne 'auto_explain' } @others));
	$node->safe_psql('postgres', q{
		CREATE TABLE t AS SELECT g AS x, g % 100 AS y FROM generate_series(1, 10000) g;
		VACUUM ANALYZE t;
	});
	expect_tsc_state($node);
	my $major = pg_major($node);
	# whether the plan nodes are timed with the TSC: where the sessions'
	# auto resolves to it (15-18: the extension's decision; 19: core's, the
	# wrappers read core's clock)
	my $tsc = $node->safe_psql('postgres', 'SHOW timing_clock_source') eq 'auto (tsc)';

	# rows and loops: a filtered scan, and a subplan run 20 times
	my $p = plan_of($node,
		'EXPLAIN (ANALYZE, COSTS OFF, FORMAT JSON) SELECT count(*) FROM t WHERE y < 10');
	my $scan = $p->{Plan}{Plans}[0];
	is(join(' ', map { $_->{'Actual Rows'} . 'x' . $_->{'Actual Loops'} } $p->{Plan}, $scan),
		'1x1 1000x1', "$t: EXPLAIN ANALYZE counts the scan's 1000 rows exactly");
	is($scan->{'Rows Removed by Filter'}, 9000, "$t: and the 9000 it filtered out");
	$p = plan_of($node,
		'EXPLAIN (ANALYZE, COSTS OFF, FORMAT JSON) SELECT (SELECT count(*) FROM t WHERE y = g) FROM generate_series(1, 20) g');
	my ($sub) = grep { ($_->{'Relation Name'} // '') eq 't' } nodes_of($p->{Plan});
	is(($sub->{'Actual Rows'} // 'none') . 'x' . ($sub->{'Actual Loops'} // 'none'), '100x20',
		"$t: a subplan's scan: 100 rows in each of 20 loops");

	# calls timed with the TSC: 1,001 scan calls (1,000 rows and the end)
	# and 2 of the aggregate, exactly, where the TSC times them
	my $calls = $node->safe_psql('postgres', q{
		SELECT tsc_timed_calls FROM timing_source_tsc();
		EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM t WHERE y < 10;
		SELECT tsc_timed_calls FROM timing_source_tsc();});
	my @c = $calls =~ /^(\d+)$/mg;
	is($c[-1] - $c[0], $tsc ? 1003 : 0,
		$tsc ? "$t: every node call was timed with the TSC, and counted (1003)"
		: "$t: no call counted as TSC-timed: the TSC does not time plan nodes here");

	# times: no node longer than the query, startup within total; exact
	# and sampled alike
	for my $n (1, 64)
	{
		$p = plan_of($node, "SET timing_source.sample_every = $n; "
			  . 'EXPLAIN (ANALYZE, COSTS OFF, FORMAT JSON) SELECT count(*) FROM t WHERE y < 10');
		my @bad = map { "$_->{'Node Type'}: $_->{'Actual Startup Time'}..$_->{'Actual Total Time'}" }
		  grep {
			$_->{'Actual Total Time'} < 0
			  || $_->{'Actual Startup Time'} > $_->{'Actual Total Time'}
			  || $_->{'Actual Total Time'} * $_->{'Actual Loops'} > $p->{'Execution Time'} + 0.002
		  } nodes_of($p->{Plan});
		is(join(', ', @bad), '', sprintf('%s: %s times are sane (top node %.3f ms of %.3f ms)',
				$t, $n == 1 ? 'exact' : 'sampled 1 in 64',
				$p->{Plan}{'Actual Total Time'}, $p->{'Execution Time'}));
		cmp_ok($p->{Plan}{'Actual Total Time'}, '>', 0, "$t: and measured");
	}

	# the others' own figures, from statements run for them
	$node->safe_psql('postgres', q{SELECT pg_stat_statements_reset()});
	$node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE y = 7') for 1 .. 5;
	$node->safe_psql('postgres',
		'SELECT sum(length(md5(g::text))) FROM generate_series(1, 300000) g') for 1 .. 2;
	is($node->safe_psql('postgres',
			q{SELECT calls FROM pg_stat_statements WHERE query = 'SELECT count(*) FROM t WHERE y = $1'}),
		'5', "$t: pg_stat_statements counted the 5 runs of the statement");
  SKIP:
	{
		skip "$t: pg_stat_kcache is not installed for PostgreSQL $major", 1 unless $have{pg_stat_kcache};
		cmp_ok($node->safe_psql('postgres', q{
				SELECT coalesce(sum(exec_user_time + exec_system_time), 0)
				  FROM pg_stat_kcache_detail WHERE query LIKE 'SELECT sum(length(md5(g::text)))%'}),
			'>', 0.01, "$t: pg_stat_kcache reports the CPU time of the hashing statement");
	}
  SKIP:
	{
		skip "$t: pg_qualstats is not installed for PostgreSQL $major", 1 unless $have{pg_qualstats};
		cmp_ok($node->safe_psql('postgres', q{
				SELECT coalesce(sum(execution_count), 0) FROM pg_qualstats_pretty
				 WHERE left_table::text = 't' AND left_column::text = 'y' AND operator::text LIKE '%='}),
			'>=', 5, "$t: pg_qualstats saw the predicate y = 7 in each run");
	}
  SKIP:
	{
		skip "$t: pg_wait_sampling is not installed for PostgreSQL $major", 1 unless $have{pg_wait_sampling};
		$node->safe_psql('postgres', 'SELECT pg_sleep(0.3)');
		cmp_ok($node->safe_psql('postgres',
				q{SELECT coalesce(sum(count), 0) FROM pg_wait_sampling_profile WHERE event = 'PgSleep'}),
			'>', 0, "$t: pg_wait_sampling sampled a backend waiting in pg_sleep");
	}
  SKIP:
	{
		skip "$t: hypopg is not installed for PostgreSQL $major", 1 unless $have{hypopg};
		like($node->safe_psql('postgres', q{
				SELECT count(*) FROM hypopg_create_index('CREATE INDEX ON t (x)');
				EXPLAIN (COSTS OFF) SELECT * FROM t WHERE x = 5;}),
			qr/Index Scan using "?<\d+>btree_t_x"? on t/, "$t: hypopg's hypothetical index is planned");
	}
	my $offset = -s $node->logfile;
	$node->safe_psql('postgres', q{
		SET auto_explain.log_min_duration = 0;
		SELECT count(*) FROM t WHERE y < 10;});
	my $log = slurp_file($node->logfile, $offset);
	like($log, qr/Seq Scan on t\s+\(cost=[^)]*\) \(actual time=[\d.]+\.\.[\d.]+ rows=1000(?:\.00)? loops=1\)/,
		"$t: auto_explain logs the analyzed plan, timed, with exact rows (18 prints them with two decimals)");
	like($log, qr/Buffers: shared hit=\d+/, "$t: and its buffers");

	# before the server is stopped: stopping it may end a backend still on
	# its way out with a FATAL of its own
	my @bad = grep { /\b(WARNING|ERROR|FATAL|PANIC):/ } split /\n/, slurp_file($node->logfile);
	is(join("\n", @bad), '', "$t: no warning or error in the server's log");
	$node->stop;
}

done_testing();
