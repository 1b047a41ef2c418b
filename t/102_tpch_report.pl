#
# scripts/tpch/report.sql on observations made by hand: what the
# TPC-H-shaped run's report computes from known inputs, including the two
# inputs that once stopped it in CI (a node whose profiled ticks exceed the
# top node's, and a query whose profile caught no tick of its top node).
# t/100 runs the whole bench, whose figures no test can foresee; here each
# expected figure follows from the rows inserted below.
#
# The report needs no timing_source: it reads tpch_run.obs, created here
# by the run's own scripts/tpch/obs.sql, and tpch_run.queries.
#
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;

my $tpch = "$FindBin::RealBin/../scripts/tpch";

my $node = PostgreSQL::Test::Cluster->new('tpch_report');
$node->init;
$node->start;

# Two queries of the same two-node plan (node 2 under node 1); run 0 is the
# warm-up, which the report must leave out, so its rows are far off.
#   untimed    Execution Time 100 ms (the top node's reference)
#   ref        node 1 100 ms, node 2 60 ms, Execution Time 100 ms: node 2's
#              reference is 60 ms, with no spread between runs
#   exact      node 1 110 ms, node 2 70 ms
#   exactsub   node 1 104 ms, node 2 62 ms
#   sampled    node 2 at 57, 60, 63, 70 ms, each +/- 4 ms: three of the four
#              intervals hold 60
#   profile    Q1: node 1 10 ticks a run, node 2 12 (a share of 1.2);
#              Q2: no tick at all
my $setup = qq{
\\i $tpch/obs.sql
CREATE TABLE tpch_run.queries (q int PRIMARY KEY, title text);
INSERT INTO tpch_run.queries VALUES (1, 'first'), (2, 'second');
} . q{
INSERT INTO tpch_run.obs (q, mode, run, wall_ms, exec_ms)
SELECT q, m, r, CASE WHEN r = 0 THEN 1000 WHEN m = 'plain' THEN 95 ELSE 101 END,
	   CASE WHEN m = 'untimed' THEN CASE WHEN r = 0 THEN 1000 ELSE 100 END END
  FROM generate_series(1, 2) q, unnest(ARRAY['plain', 'untimed']) m, generate_series(0, 4) r;
INSERT INTO tpch_run.obs (q, mode, run, wall_ms, exec_ms, node_id, parent_id, node_type,
						  loops, total_ms, margin_ms, sampled_calls, reliable, every, ticks)
SELECT q, m, r, 120, v.exec, n, CASE WHEN n = 2 THEN 1 END,
	   CASE WHEN n = 1 THEN 'Aggregate' ELSE 'Seq Scan' END, 1,
	   CASE WHEN r = 0 THEN 900 ELSE v.total END,
	   CASE WHEN m = 'sampled' THEN 4 END, CASE WHEN m = 'sampled' THEN 500 END,
	   true, CASE m WHEN 'sampled' THEN 64 WHEN 'ref' THEN 128 ELSE 1 END,
	   CASE WHEN m = 'profile' THEN CASE WHEN q = 2 THEN 0 WHEN n = 1 THEN 10 ELSE 12 END END
  FROM generate_series(1, 2) q, generate_series(1, 2) n, generate_series(0, 4) r,
	   unnest(ARRAY['ref', 'exact', 'exactsub', 'sampled', 'profile']) m,
	   LATERAL (SELECT CASE m WHEN 'exact' THEN 110 WHEN 'exactsub' THEN 104 ELSE 100 END AS exec,
					   CASE WHEN n = 1 THEN CASE m WHEN 'exact' THEN 110 WHEN 'exactsub' THEN 104 ELSE 100 END
							WHEN m = 'exact' THEN 70 WHEN m = 'exactsub' THEN 62
							WHEN m = 'sampled' THEN (ARRAY[57, 60, 63, 70])[greatest(r, 1)]
							ELSE 60 END AS total) v;
};
$node->safe_psql('postgres', $setup);

my ($ret, $out, $err) = $node->psql('postgres', qq{
SELECT set_config('tpch.sample', '64', false), set_config('tpch.ref', '128', false),
	   set_config('tpch.ref_se_max', '2', false) \\gset
\\set ref 128
\\set ref_se_max 2
\\i $tpch/report.sql
}, on_error_stop => 1);
is($ret, 0, 'the report runs to its end') or diag($err);
like($out, qr/^Targets:$/m, 'and prints its targets');
is($err, '', 'with nothing on stderr');

# one row of node_stats: column name => its value rounded, or "null"
sub node_row
{
	my ($q, $node_id, @cols) = @_;
	my $row = $node->safe_psql('postgres',
		"SELECT " . join(", ", map { "coalesce(round($_\::numeric, 3)::text, 'null')" } @cols)
		  . " FROM tpch_run.node_stats WHERE q = $q AND node_id = $node_id");
	my @v = split /\|/, $row;
	return { map { $cols[$_] => $v[$_] } 0 .. $#cols };
}

my $top = node_row(1, 1, qw(reference_ms exact_err_pct exactsub_err_pct));
is($top->{reference_ms}, '100.000', 'the top node\'s reference is the untimed Execution Time, run 0 left out');
is($top->{exact_err_pct}, '10.000', 'the top node\'s exact error: 110 against 100');
is($top->{exactsub_err_pct}, '4.000', 'and subtracted: 104 against 100');

my $inner = node_row(1, 2, qw(reference_ms exact_err_pct exactsub_err_pct covered with_interval
	sampled_med_err_pct share_exact_pp share_prof_pct prof_se_pp));
is($inner->{reference_ms}, '60.000', 'an inner node\'s reference: its share of the ref runs times untimed');
is($inner->{exact_err_pct}, sprintf('%.3f', 100 * (70 / 60 - 1)), 'its exact error');
is($inner->{exactsub_err_pct}, sprintf('%.3f', 100 * (62 / 60 - 1)), 'and subtracted');
is("$inner->{covered}/$inner->{with_interval}", '3.000/4.000',
	'three of four sampled intervals hold the reference');
# the errors 5%, 0%, 5%, 16.7%: their median
is($inner->{sampled_med_err_pct}, '5.000', 'the sampled runs\' median error');
is($inner->{share_exact_pp}, sprintf('%.3f', 100 * (70 / 110 - 0.6)), 'the exact share against the reference\'s');
is($inner->{share_prof_pct}, '120.000', 'a profiled share above 1 is reported as it is');
is($inner->{prof_se_pp}, '0.000', 'with a standard error of 0');

my $none = node_row(2, 2, qw(reference_ms share_prof_pct prof_se_pp));
is($none->{reference_ms}, '60.000', 'the query whose profile has no tick still has its node');
is($none->{share_prof_pct}, 'null', 'and no profiled share');
is($none->{prof_se_pp}, 'null', 'nor a standard error');

is($node->safe_psql('postgres',
	q{SELECT round(exact_x::numeric, 3) FROM tpch_run.query_stats WHERE q = 1}),
	sprintf('%.3f', 120 / 95), 'the exact mode\'s overhead: its wall time over plain\'s');
is($node->safe_psql('postgres', q{SELECT count(*) FROM tpch_run.query_stats}), '3',
	'a row a query and one for all');

$node->stop;
done_testing();
