#
# The instrumentation's own cost under a parallel plan: only the leader
# estimates it.  The leader counts its workers' calls from the figures core
# copies back, so a worker estimating too would have its share taken off
# twice with timing_source.subtract_overhead on, and every new worker
# process would pay for measuring the per-call cost.  The measurement logs
# one DEBUG3 line per process ("the node wrappers' timing per call"), so
# the server log says which processes measured.  The per-call cost
# measured in the plan (probes, with timing_source.subtract_overhead) is
# measured in the workers too: they pass their probes to the leader.
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

# With the cost subtracted, parallel workers probe the nodes they run as
# the leader does, give their own bare calls their lengths (before core
# copies their figures back) and pass their probes to the leader
# (worker_sampling.c).  Without the leader taking part, theirs are the
# plan's only measure of a timed call: the leader's figure for the scan
# must rest on exactly their spans, and it must count exactly their probes
# and take exactly their bare calls from the calls it counts as timed.
SKIP:
{
	skip 'nothing estimates the timing cost in this build', 6
	  if $estimated == 0;

	my $offset = -s $node->logfile;
	my ($out, $err) = ('', '');
	$node->psql('postgres', q{
		SET timing_source.subtract_overhead = on;
		SET parallel_leader_participation = off;
		SET client_min_messages = debug2;
		SELECT pg_backend_pid();
		EXPLAIN (ANALYZE, FORMAT JSON) SELECT count(*) FROM t;
	}, stdout => \$out, stderr => \$err, on_error_die => 1);
	my ($lpid, @json) = split /\n/, $out;
	my $launched = 0;
	my @todo = (decode_json(join("\n", @json))->[0]{Plan});
	while (my $n = shift @todo)
	{
		$launched += $n->{'Workers Launched'} // 0;
		push @todo, @{ $n->{Plans} // [] };
	}
	skip 'no parallel worker was launched, so there is nothing to judge', 6
	  if $launched == 0;

	my $log = slurp_file($node->logfile, $offset);
	my (%wprobes, %wbare, %wspans, @unreported, @unimputed);
	my $reports = 0;
	my %ids;
	while ($log =~ /\[(\d+)\] DEBUG:  timing_source: plan node (\d+): parallel worker (\d+) ran (\d+) probes, (\d+) bare calls given ([0-9.]+) ns, its total ([0-9.]+) ns without them and ([0-9.]+) ns with them; (\d+) timed and (\d+) bare spans, (.*)/g)
	{
		my ($pid, $nid, $w, $p, $b, $given, $before, $after, $ts, $bs, $how) =
		  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11);
		next if $pid == $lpid;
		$reports++;
		$ids{$nid} = 1;
		$wprobes{$nid} += $p;
		$wbare{$nid} += $b;
		$wspans{$nid} += $ts + $bs;
		push @unreported, "worker $w" unless $how =~ /^reported to the leader/;
		# the bare calls' lengths, and those of bare calls with no
		# neighbour to go by (which only add), went into the total
		push @unimputed, "worker $w: $before + $given > $after"
		  if $b > 0 && $after < $before + $given - 1;
	}
	# the workers' nodes: the scan, and the Partial Aggregate above it,
	# which makes one call a worker
	my @ids = sort { $a <=> $b } keys %ids;
	is(scalar(@ids) . " nodes, $reports reports", '2 nodes, ' . (2 * $launched) . ' reports',
		"each of the $launched workers probed its two nodes and said so once each (nodes: @ids)");
	ok(!@unreported && !@unimputed,
		"each reported its probes to the leader and put its bare calls' lengths into its own total"
		  . (@unreported || @unimputed ? ': ' . join('; ', @unreported, @unimputed) : ''));
	# the scan: the one of many calls
	my ($id) = sort { $wprobes{$b} <=> $wprobes{$a} } @ids;
	$id //= -1;
	ok($wprobes{$id} > 0 && $wbare{$id} > 0,
		"the workers ran probes and bare calls: $wprobes{$id} probes, $wbare{$id} bare calls");

	my ($timed_spans, $bare_spans) =
	  $err =~ /plan node $id: a timed call costs -?[0-9.]+ ns \(\+\/- [0-9.]+\) measured in the plan, [0-9.]+ ns calibrated; (\d+) timed and (\d+) bare spans/;
	is(defined $timed_spans ? $timed_spans + $bare_spans : 'none', $wspans{$id},
		"the leader, which ran none of the scan's calls, measured its cost from exactly the workers' spans");
	my ($timed, $probes, $calls) =
	  $err =~ /plan node $id: [0-9.]+ ns of timing seen by what encloses it: ([0-9.]+) timed calls at [0-9.]+ ns, ([0-9.]+) probes at [0-9.]+ ns, ([0-9.]+) calls at [0-9.]+ ns for the countdown/;
	is($probes // 'none', $wprobes{$id}, "the leader counts every worker's probes");
	is(defined $calls ? $calls - $timed : 'none', $wbare{$id},
		"and counts their bare calls as untimed: $calls calls, " . ($timed // 'none') . ' timed');
}

$node->stop;
done_testing();
