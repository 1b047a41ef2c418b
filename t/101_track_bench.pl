#
# scripts/bench.sh --track: the tracking overhead benchmark works end to
# end, tiny, against a real server: both pgbench workloads and every bench
# query under each clock, a ratio and a verdict on every row, the
# track_sample_every sweep and its choice, the CPU named, both CSV files.
# No figure is held to a target here (the targets are the bench's, on a
# quiet machine); what is checked is the report's shape and that its
# figures are numbers.
#
# --track-proxy (auto_explain with sampled timing in tracking's place)
# runs on any server with auto_explain; --track itself needs
# timing_source.track_nodes: where the server has no such setting the run
# must fail and say so.
#
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use TimingSourceExpect;

my $root = "$FindBin::RealBin/..";

my $node = PostgreSQL::Test::Cluster->new('track_bench');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'timing_source'
jit = off
max_worker_processes = 8
max_parallel_workers = 4
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION timing_source');
expect_tsc_state($node);

my $major = pg_major($node);
my $tsc = $node->safe_psql('postgres', 'SELECT available FROM timing_source_tsc()') eq 't';
my $has_track = $node->safe_psql('postgres',
	q{SELECT count(*) FROM pg_settings WHERE name = 'timing_source.track_nodes'}) eq '1';
note "major $major, TSC " . ($tsc ? 'usable' : 'unusable')
  . ', track_nodes ' . ($has_track ? 'present' : 'absent');

# the clocks the run measures, and the one rate-sweep per sampling clock
my @clocks = $major >= 19 ? ('core') : $tsc ? ('tsc', 'system') : ('system');
# every clock samples (15-18: the TSC's and the system clock's wrappers)
my @sweep_clocks = @clocks;
my @workloads = ('pgbench -S (tps)', 'pgbench TPC-B (tps)', 'count(*) 100k (ms)',
	'count(*) 5M (ms)', 'LIMIT 1 OFFSET 5M (ms)', 'nested loop 1M inner (ms)',
	'parallel count(*) 5M (ms)');
my @queries = ('count(*) 100k', 'count(*) 5M', 'LIMIT 1 OFFSET 5M',
	'nested loop 1M inner', 'parallel count(*) 5M');
my $num = qr/\d+(?:\.\d+)?/;

# bench.sh --track, tiny, against this server; returns (exit ok, stdout, stderr, CSV dir)
sub bench
{
	my @args = @_;
	my $csvdir = PostgreSQL::Test::Utils::tempdir;
	local $ENV{PGHOST} = $node->host;
	local $ENV{PGPORT} = $node->port;
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run(
		[ 'bash', "$root/scripts/bench.sh", '--track', '--short', '--reps', '1',
		  '--track-secs', '1', '--track-rounds', '2', '--pgbench-scale', '1',
		  '--csv', $csvdir, @args ],
		'<', \undef, '>', \$out, '2>', \$err);
	return ($ok, $out, $err, $csvdir);
}

# the report of one run: every row, the sweep, the CSV files
sub check_report
{
	my ($label, $ok, $out, $err, $csvdir) = @_;
	ok($ok, "$label: the run exits 0") or diag($err);
	note $out;
	like($out, qr/^CPU: \S.* \(\d+ CPUs\)/m, "$label: the CPU is named");
	my ($table) = $out =~ /^clock\s+workload\s+none\s+top\s+ratio\s+target\s+verdict\s+best\n(.*?)^\n/ms;
	ok(defined $table, "$label: the ratio table is there");
	$table //= '';
	my @lines = split /\n/, $table;
	is(scalar(@lines), @clocks * @workloads, "$label: one row per clock and workload");
	for my $c (@clocks)
	{
		for my $w (@workloads)
		{
			my ($none, $top, $r, $dir, $t, $v, $b) = $table =~
			  /^\Q$c\E\s+\Q$w\E\s+(\S+)\s+(\S+)\s+(\S+)\s+(>=|<=)\s+(\S+)\s+(\S+)\s+(\S+)$/m;
			ok(defined $v && $none =~ /^$num$/ && $top =~ /^$num$/ && $r =~ /^$num$/
				  && $v =~ /^(met|MISSED)$/ && $b =~ /^$num$/,
				"$label: $c, $w: figures, a ratio, a verdict and the best runs' ratio")
			  or diag($table);
			is($dir // '', $w =~ /tps/ ? '>=' : '<=', "$label: $c, $w: the target's direction");
		}
	}
	for my $c (@sweep_clocks)
	{
		for my $stat ('median', 'best')
		{
			my ($sweep) = $out =~
			  /^track_sample_every sweep, clock \Q$c\E: time ratio top\/none per rate \($stat of \d+ rounds\)\n(query .*?)^smallest rate/ms;
			ok(defined $sweep, "$label: the sweep ($stat) under $c is there");
			$sweep //= '';
			my ($head, @rows) = split /\n/, $sweep;
			my @rates = split ' ', $head // '';
			shift @rates;
			ok((grep { $_ == 16 } @rates) && (grep { $_ == 1024 } @rates) && !(grep { !/^\d+$/ } @rates),
				"$label: $c ($stat): the sweep's columns are rates, 16 to 1024")
			  or diag($head);
			for my $q (@queries, 'worst')
			{
				my ($row) = grep { /^\Q$q\E\s/ } @rows;
				my @f = defined $row ? split(' ', substr($row, 24)) : ();
				ok(@f == @rates && !(grep { !/^$num$/ } @f),
					"$label: $c ($stat): the sweep has a ratio per rate for $q")
				  or diag($row // 'missing');
			}
			like($out, qr/^smallest rate with every query <= \S+ \($stat\): (\d+|none)$/m,
				"$label: $c ($stat): the sweep names its choice");
		}
	}
	my ($raw) = glob("$csvdir/bench-*-track.csv");
	my ($sum) = glob("$csvdir/bench-*-track-summary.csv");
	ok(defined $raw && defined $sum, "$label: both CSV files are written");
	my @srows = split /\n/, slurp_file($sum // '/dev/null');
	is(shift(@srows) // '', 'cpu,postgresql,clock,workload,unit,none,top,ratio,target,verdict,best_none,best_top,best_ratio',
		"$label: the summary CSV's header");
	is(scalar(grep { !/,sweep-(median|best),/ } @srows), @clocks * @workloads, "$label: a summary row per clock and workload");
	is(scalar(grep { /,sweep-(median|best),rate,,,(\d+)?,/ } @srows), 2 * @sweep_clocks,
		"$label: and the sweep's two choices per sampling clock");
	my @rrows = split /\n/, slurp_file($raw // '/dev/null');
	shift @rrows;
	# 2 pgbench workloads x 2 modes x 2 rounds per clock, and every query
	# under every variant once
	cmp_ok(scalar(grep { /,(select|tpcb),(none|top),[12],$num$/ } @rrows), '==', 8 * @clocks,
		"$label: every pgbench run recorded with its tps");
}

check_report('proxy', bench('--track-proxy'));

if ($has_track)
{
	check_report('track', bench());
}
else
{
	my ($ok, $out, $err) = bench();
	ok(!$ok, 'without timing_source.track_nodes the run fails');
	like($err, qr/the server has no setting timing_source\.track_nodes/, 'and says why');
	unlike($out, qr/^clock\s+workload/m, 'and prints no table');
}

$node->stop;
done_testing();
