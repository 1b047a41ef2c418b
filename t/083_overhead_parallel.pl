#
# The instrumentation's own cost under a parallel plan: only the leader
# estimates it.  The leader counts its workers' calls from the figures core
# copies back, so a worker estimating too would have its share taken off
# twice with timing_source.subtract_overhead on, and every new worker
# process would pay for measuring the per-call cost.  The measurement logs
# one DEBUG3 line per process ("the node wrappers' timing per call"), so
# the server log says which processes measured.
#
# The Gather divides what its processes' timing cost among them, or among
# the CPUs where fewer (processes taking turns stretch each other's wall
# time); it says so at DEBUG2.  The nodes below it, whose figures are
# summed over the processes, are stretched by the same turn-taking: their
# estimate is scaled by processes / CPUs where the processes are more, and
# with subtraction on, each worker's own figures ("Worker N:") lose what
# the node's total lost.
#
# Where nothing estimates (a build without the wrappers on 15-18: core
# times every call), no process may measure at all.
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

my $node = PostgreSQL::Test::Cluster->new('overhead_parallel');

$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'timing_source'
jit = off
log_min_messages = debug3
log_line_prefix = '%m [%p] '
max_parallel_workers_per_gather = 2
max_worker_processes = 8
max_parallel_workers = 8
parallel_setup_cost = 0
parallel_tuple_cost = 0
min_parallel_table_scan_size = 0
parallel_leader_participation = on
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION timing_source;
	CREATE TABLE t AS SELECT g FROM generate_series(1, 300000) g;
	VACUUM ANALYZE t;
});
expect_tsc_state($node);

my $query = 'SELECT count(*) FROM t WHERE g % 7 = 1';

# one session: its pid, the plan's launched workers, and how many nodes
# the per-node function gives an overhead estimate
my $offset = -s $node->logfile;
my $out = $node->safe_psql('postgres', qq{
	SET timing_source.subtract_overhead = on;
	SELECT pg_backend_pid();
	EXPLAIN (ANALYZE, FORMAT JSON) $query;
	SELECT count(*) FILTER (WHERE overhead_ms IS NOT NULL)
	  FROM timing_source_explain_nodes('$query', 1);
});
my @lines = split /\n/, $out;
my $pid = shift @lines;
my $estimated = pop @lines;
my $plan = decode_json(join("\n", @lines));
my $workers = 0;
my @todo = ($plan->[0]{Plan});
while (my $n = shift @todo)
{
	$workers += $n->{'Workers Launched'} // 0;
	push @todo, @{ $n->{Plans} // [] };
}

my $log = slurp_file($node->logfile, $offset);
my %measured;
$measured{$1}++ while $log =~ /\[(\d+)\] DEBUG:  timing_source: the node wrappers' timing per call/g;
my @others = grep { $_ != $pid } keys %measured;

SKIP:
{
	skip 'no parallel worker was launched, so there is nothing to judge', 4
	  if $workers == 0;

	ok(!@others,
		'no process but the leader measured the per-call cost'
		  . (@others ? ' (also: ' . join(', ', @others) . ')' : ''));
	if ($estimated > 0)
	{
		ok($measured{$pid}, 'the leader, which estimated, measured');
		cmp_ok($estimated, '>=', 2, 'nodes above and below the Gather have an estimate');

		# the Gather divides what its processes' timing cost among them,
		# or among the CPUs they share where there are fewer (nproc, as
		# the server, reads this process's affinity mask)
		chomp(my $nproc = `nproc`);
		my ($div, $procs, $cpus) = $log =~
		  /\[$pid\] DEBUG:  timing_source: plan node \d+: its processes' timing divided among (\d+) \((\d+) processes, (\d+) CPUs\)/;
		ok(defined $div
			  && $procs >= 2
			  && $procs <= $workers + 1
			  && $cpus == $nproc
			  && $div == ($procs < $cpus ? $procs : $cpus),
			'the Gather divides among the fewer of its processes and the CPUs: '
			  . (defined $div ? "$div of $procs processes on $cpus CPUs (nproc $nproc)" : 'no line'));
	}
	else
	{
		ok(!%measured, 'where nothing is estimated, nothing is measured');
		ok(!wrappers_sample($node),
			'only a build without the wrappers estimates nothing');
		ok($log !~ /its processes' timing divided among/,
			'nothing is divided where nothing is estimated');
	}
}

# Below the Gather the nodes' figures are summed over the processes; where
# those outnumber the CPUs, each process's times stretch by processes / CPUs
# of what timing cost, and the estimate says so: the Partial Aggregate's
# (every process's timing, stretched) is then the processes' count times
# the top node's (the same timing, waited for by a leader that shares
# its CPUs), whether or not there are more of them than CPUs.
SKIP:
{
	skip 'no parallel worker was launched, so there is nothing to judge', 1
	  if $workers == 0;
	skip 'nothing estimates the timing cost in this build', 1
	  if $estimated == 0;

	$offset = -s $node->logfile;
	my ($lpid, $rows) = split /\n/, $node->safe_psql('postgres', qq{
		SET timing_source.subtract_overhead = on;
		SELECT pg_backend_pid();
		WITH nodes AS MATERIALIZED (SELECT * FROM timing_source_explain_nodes('$query', 1))
		SELECT string_agg(CASE WHEN n.node_id = 1 THEN 'top'
							   WHEN p.node_type IN ('Gather', 'Gather Merge') THEN 'below'
							   ELSE n.node_type END
						  || '=' || coalesce(n.overhead_ms::text, '')
						  || CASE WHEN n.total_ms <= 0.01 * n.overhead_ms THEN '(capped)' ELSE '' END,
						  ' ' ORDER BY n.node_id)
		  FROM nodes AS n LEFT JOIN nodes AS p ON p.node_id = n.parent_id;
	}), 2;
	my %ov = $rows =~ /(\w[\w ]*?)=([0-9.]*)(?:\(capped\))?(?: |$)/g;
	my ($procs, $cpus) = slurp_file($node->logfile, $offset) =~
	  /\[$lpid\] DEBUG:  timing_source: plan node \d+: its processes' timing divided among \d+ \((\d+) processes, (\d+) CPUs\)/;
	skip 'the Gather ran alone this time (no "divided among" line)', 1
	  unless defined $procs;
	# an estimate held at its node's total (which subtraction then leaves
	# at nothing) says nothing of the ratio
	skip "an estimate is held at its node's total ($rows)", 1
	  if $rows =~ /\(capped\)/;
	my $ratio = ($ov{top} // 0) > 0 ? ($ov{below} // 0) / $ov{top} : 0;
	ok(abs($ratio - $procs) <= 0.05 * $procs,
		"the summed nodes' estimate is the processes' count times the top node's: "
		  . sprintf('%.3f for %d processes on %d CPUs (%s)', $ratio, $procs, $cpus, $rows));
}

# With overhead subtracted, the workers' own lines (EXPLAIN VERBOSE's
# "Worker N") lose what the node's summed figures lost: without the
# leader taking part, the node's total is their sum, as without
# subtraction.
SKIP:
{
	my $json = $node->safe_psql('postgres', qq{
		SET timing_source.subtract_overhead = on;
		SET parallel_leader_participation = off;
		EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) $query;
	});
	my @nodes = (decode_json($json)->[0]{Plan});
	my @checked;
	while (my $n = shift @nodes)
	{
		push @nodes, @{ $n->{Plans} // [] };
		next unless @{ $n->{Workers} // [] };
		my $sum = 0;
		$sum += $_->{'Actual Total Time'} * $_->{'Actual Loops'} for @{ $n->{Workers} };
		my $own = $n->{'Actual Total Time'} * $n->{'Actual Loops'};
		push @checked, sprintf('%s %.3f of %.3f', $n->{'Node Type'}, $sum, $own)
		  . (abs($sum - $own) <= 0.005 * $own + 0.01 ? '' : ' (off)');
	}
	skip 'no parallel worker was launched, so there is nothing to judge', 1
	  unless @checked;
	ok(!grep(/\(off\)$/, @checked),
		"the workers' lines add up to the node's subtracted total: " . join(', ', @checked));
}

$node->stop;
done_testing();
