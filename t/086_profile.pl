#
# The plan node profile, timing_source_explain_nodes_profile(): the
# library's entry point for benchmarks and tests (the TPC-H-shaped run's
# reference for how a plan's time divides among its nodes), declared here
# as the bench declares it.  One run, its nodes untimed, a timer ticking at
# hz; a tick counts for every node whose call is in progress (profile.h).
#
# What is checked:
# - its arguments: hz must be given and within 100..50000, the query must
#   be given, the declared columns must be the seventeen it returns, and a
#   profile cannot start inside another, which goes on undisturbed when
#   the refusal is caught;
# - where the wrappers exist, time spent in a node is found in it and in
#   every node above it, and nowhere else:
#   - a Function Scan whose rows each sleep 2 ms holds at least 80% of
#     the run's ticks, and so does the Aggregate above it;
#   - a Hash, which core runs itself (its calls never reach a wrapper),
#     holds the 1 ms sleeps of the 30 rows it hashes, at least 24 ms, and
#     no tick of the probe side's scan, which runs after it: the two
#     together hold at most the Hash Join's ticks;
#   - every node holds at most its parent's ticks (a tick counts the whole
#     stack of calls in progress);
#   - the ticks add up to about hz times the run's time (within a factor
#     of 2: the timer is not starved, nor counted twice);
# - rows and loops are exact, as in an ordinary run;
# - afterwards nothing is left behind: a query that errors inside a
#   profile leaves the session working, with no tick to come (the
#   default action of SIGPROF would end the backend), the next profile
#   works, and the next EXPLAIN ANALYZE times its nodes as usual.
# A build without the wrappers (15-18 on a CPU other than x86-64 and
# arm64) profiles nothing and says so, which is checked instead.
#
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use TimingSourceExpect;

my $node = PostgreSQL::Test::Cluster->new('profile');
start_preloaded($node);
$node->safe_psql('postgres', slurp_file("$FindBin::RealBin/../test/explain_nodes_profile.sql"));
$node->safe_psql('postgres', q{
	CREATE FUNCTION explain_nodes_profile_short(query text, hz int,
		OUT node_id int, OUT profile_ms numeric)
		RETURNS SETOF record
		AS '$libdir/timing_source', 'timing_source_explain_nodes_profile'
		LANGUAGE C VOLATILE;
});

# ---- arguments ----
my ($ret, $out, $err) = $node->psql('postgres', q{SELECT * FROM explain_nodes_profile('SELECT 1', NULL)});
like($err, qr/hz must not be null/, 'hz NULL is refused');
($ret, $out, $err) = $node->psql('postgres', q{SELECT * FROM explain_nodes_profile('SELECT 1', 99)});
like($err, qr/hz must be between 100 and 50000, not 99/, 'hz 99 is refused');
($ret, $out, $err) = $node->psql('postgres', q{SELECT * FROM explain_nodes_profile('SELECT 1', 50001)});
like($err, qr/hz must be between 100 and 50000, not 50001/, 'hz 50001 is refused');
($ret, $out, $err) = $node->psql('postgres', q{SELECT * FROM explain_nodes_profile(NULL, 1000)});
like($err, qr/query must not be null/, 'a NULL query is refused');
($ret, $out, $err) = $node->psql('postgres', q{SELECT * FROM explain_nodes_profile_short('SELECT 1', 1000)});
like($err, qr/declared with 2 columns, not 17/, 'a declaration with other columns is refused');

my $sleepy = q{SELECT count(*) FROM (SELECT pg_sleep(0.002) FROM generate_series(1, 50)) s};

if (!wrappers_sample($node))
{
	($ret, $out, $err) = $node->psql('postgres', qq{SELECT * FROM explain_nodes_profile(\$\$$sleepy\$\$, 1000)});
	like($err, qr/no plan node of the query could be profiled/,
		'without the wrappers, nothing is profiled, and the function says so');
	done_testing();
	exit 0;
}

($ret, $out, $err) = $node->psql('postgres',
	q{SELECT * FROM explain_nodes_profile($$SELECT * FROM explain_nodes_profile('SELECT 1', 1000)$$, 1000)});
like($err, qr/a plan node profile is already running in this session/,
	'a profile inside a profile is refused');
# refused and caught inside the profiled query, the outer profile goes on
$node->safe_psql('postgres', q{
	CREATE FUNCTION nested_profile() RETURNS int LANGUAGE plpgsql AS $$
	BEGIN
		BEGIN
			PERFORM * FROM explain_nodes_profile('SELECT 1', 1000);
		EXCEPTION WHEN object_not_in_prerequisite_state THEN NULL;
		END;
		PERFORM pg_sleep(0.1);
		RETURN 1;
	END $$});
my $outer = $node->safe_psql('postgres',
	q{SELECT profile_ticks FROM explain_nodes_profile('SELECT nested_profile()', 2000) WHERE node_id = 1});
cmp_ok($outer, '>=', 100,
	'a profile refused inside another and caught there leaves the outer one ticking (0.1 s at 2000 Hz)');

# ---- where the time is ----
my $hz = 2000;

# node_id|parent_id|node_type|loops|rows|ticks|profile_ms|execution_ms
sub profile
{
	my ($query) = @_;
	my %n;
	my $rows = $node->safe_psql('postgres', qq{
		SELECT node_id, coalesce(parent_id, 0), node_type, loops, rows,
			   coalesce(profile_ticks, -1), coalesce(profile_ms, -1), execution_ms
		  FROM explain_nodes_profile(\$\$$query\$\$, $hz) ORDER BY node_id});
	for my $line (split /\n/, $rows)
	{
		my ($id, $parent, $type, $loops, $nrows, $ticks, $ms, $exec) = split /\|/, $line;
		$n{$id} = { parent => $parent, type => $type, loops => $loops, rows => $nrows,
			ticks => $ticks, ms => $ms, exec => $exec };
	}
	return \%n;
}

sub show
{
	my ($n) = @_;
	note join('; ', map { "$_ $n->{$_}{type}: $n->{$_}{ticks} ticks, $n->{$_}{ms} ms" } sort { $a <=> $b } keys %$n)
	  . "; execution $n->{1}{exec} ms";
}

# every node at most its parent's ticks
sub nested
{
	my ($n) = @_;
	my @bad = grep { $n->{$_}{parent} && $n->{$_}{ticks} > $n->{ $n->{$_}{parent} }{ticks} } keys %$n;
	return join(', ', map { "node $_ ($n->{$_}{type}) $n->{$_}{ticks} > parent's $n->{ $n->{$_}{parent} }{ticks}" } @bad);
}

my $p = profile($sleepy);
show($p);
my $total = $p->{1}{ticks};
my $scan = (grep { $p->{$_}{type} eq 'Function Scan' } keys %$p)[0];
ok(defined $scan && $p->{$scan}{ticks} >= 0.8 * $total && $total > 0,
	'the scan whose rows sleep holds the run\'s ticks');
cmp_ok($p->{1}{ms}, '>=', 0.8 * $p->{1}{exec}, 'and so does the Aggregate above it, in ms of the run');
cmp_ok($p->{1}{ms}, '>=', 80, 'which slept 100 ms');
is(nested($p), '', 'no node holds more ticks than its parent');
my $expect = $hz * $p->{1}{exec} / 1000;
ok($total >= $expect / 2 && $total <= $expect * 2,
	"the ticks ($total) add up to about hz times the run's time ($expect)");

my $hashjoin = q{SELECT count(*) FROM generate_series(1, 100000) a
	JOIN (SELECT g, pg_sleep(0.001) FROM generate_series(1, 30) g) b ON a = b.g};
$p = profile($hashjoin);
show($p);
my $hash = (grep { $p->{$_}{type} eq 'Hash' } keys %$p)[0];
my $join = (grep { $p->{$_}{type} eq 'Hash Join' } keys %$p)[0];
SKIP:
{
	skip 'the planner chose no hash join', 4 unless defined $hash && defined $join;
	cmp_ok($p->{$hash}{ms}, '>=', 24, 'the Hash, which core runs itself, holds the sleeps of the rows it hashes');
	my ($probe) = grep { $p->{$_}{parent} == $join && $_ != $hash } keys %$p;
	cmp_ok($p->{$probe}{ticks} + $p->{$hash}{ticks}, '<=', $p->{$join}{ticks},
		'the Hash and the probe side, which run one after the other, never hold the same tick');
	is(nested($p), '', 'no node holds more ticks than its parent, the Hash\'s scan included');
	my $counted = $node->safe_psql('postgres', qq{
		SELECT string_agg(node_id || ':' || loops || ':' || rows, ',' ORDER BY node_id)
		  FROM timing_source_explain_nodes(\$\$$hashjoin\$\$, 1)});
	is(join(',', map { "$_:$p->{$_}{loops}:$p->{$_}{rows}" } sort { $a <=> $b } keys %$p), $counted,
		'rows and loops as an ordinary run counts them');
}

# ---- nothing left behind ----
($ret, $out, $err) = $node->psql('postgres',
	q{SELECT * FROM explain_nodes_profile('SELECT count(*) / (count(*) - 1000) FROM generate_series(1, 1000)', 5000)});
like($err, qr/division by zero/, 'a query that fails inside a profile fails as usual');
# in one session: the failed profile, a pause the timer would tick in,
# another profile, and exact timing
is($node->safe_psql('postgres', q{
	DO $$ BEGIN
		BEGIN
			PERFORM * FROM explain_nodes_profile('SELECT count(*) / (count(*) - 1000) FROM generate_series(1, 1000)', 5000);
		EXCEPTION WHEN division_by_zero THEN NULL;
		END;
		PERFORM pg_sleep(0.05);
	END $$;
	SELECT count(*) FROM explain_nodes_profile('SELECT 1', 1000) WHERE profile_ticks IS NOT NULL;
	SELECT count(*) FROM timing_source_explain_nodes('SELECT count(*) FROM generate_series(1, 100000)', 1)
	 WHERE total_ms > 0 AND overhead_ms IS NOT NULL}), "1\n2",
	'after a failed profile, the session lives on, profiles again, and times its nodes as usual');

done_testing();
