#
# A counter whose reads are trapped: some hypervisors emulate RDTSC (an
# emulated TSC, nested virtualisation), and some arm64 kernels trap
# counter reads for a timer erratum.  The values stay right, but each read
# costs a VM or kernel exit, more than the system clock.  Detection
# measures an ordered read against a trivial system call; at half a
# system call or more 'auto' declines the counter, an explicit 'tsc' is
# still allowed.  timing_source_tsc() shows both figures (read_ns,
# syscall_ns) and timing_source_report() a line with them.
#
# The test seam TIMING_SOURCE_TEST_READ_NS replaces the measured read cost,
# so a second server can look trapped on any host.  Where the TSC is
# unusable (the *_notsc run) 'auto' never picks it anyway: the figures are
# still measured and the reason stays the unusable one.  A CPU without an
# ordered read (x86-64 without RDTSCP) has no figures at all.  On 19 core
# decides what 'auto' uses; the extension's own judgement is still shown.
#
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use TimingSourceExpect;
use POSIX ();

my $arm64 = (POSIX::uname())[4] eq 'aarch64';
my $what = $arm64 ? 'counter' : 'TSC';

sub server
{
	my ($name, $read_ns) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'timing_source'
max_parallel_workers_per_gather = 0
});
	{
		local $ENV{TIMING_SOURCE_TEST_READ_NS} = $read_ns if defined $read_ns;
		$node->start;
	}
	$node->safe_psql('postgres', 'CREATE EXTENSION timing_source');
	return $node;
}

# ---- a server as detected ----
my $node = server('as_detected');
expect_tsc_state($node);
my $major = pg_major($node);
my ($usable, $auto, $read, $sys, $rdtscp) = split /\|/, $node->safe_psql('postgres',
	q{SELECT available, auto_reason IS NULL, coalesce(read_ns, -1), coalesce(syscall_ns, -1), rdtscp FROM timing_source_tsc()});
note "read $read ns, system call $sys ns";
# The figures come from ordered reads: RDTSCP on x86-64 (a CPU or
# hypervisor may not offer it), ISB and MRS on arm64.
my $ordered = $arm64 || $rdtscp eq 't';
if ($ordered)
{
	cmp_ok($read, '>', 0, "the cost of a $what read was measured");
	cmp_ok($sys, '>', 0, 'and that of a system call');
}
else
{
	is($read, '-1', 'no RDTSCP: the cost of a TSC read is not measured (read_ns is NULL)');
	is($sys, '-1', 'nor that of a system call');
}
my $report = $node->safe_psql('postgres', 'SELECT string_agg(r, E\'\n\') FROM timing_source_report(0.05) r');
if ($usable eq 't')
{
	like($report, qr/^TSC read cost at detection: [\d.]+ ns per ordered read, [\d.]+ ns per system call \((not trapped|trapped: the read is emulated)\)$/m,
		'the report shows both figures');
	if ($auto eq 't')
	{
		cmp_ok($read, '<', $sys / 2, "'auto' picks the $what: its read costs under half a system call");
	}
	else
	{
		# a read under half a system call is not the reason; one over it is,
		# on x86-64 before any other (arm64 names the clocksource first)
		my $why = $node->safe_psql('postgres', 'SELECT auto_reason FROM timing_source_tsc()');
		if ($read < $sys / 2)
		{
			unlike($why, qr/^Reading the $what costs/, "'auto' declines for another reason than a trapped read: $why");
		}
		elsif (!$arm64)
		{
			like($why, qr/^Reading the TSC costs/, "'auto' declines a read of half a system call or more: $why");
		}
		else
		{
			like($why, qr/^(Reading the counter costs|The operating system's clocksource)/,
				"'auto' declines a read of half a system call or more, or the clocksource first: $why");
		}
	}
}
else
{
	unlike($report, qr/TSC read cost at detection/, 'the report has no read-cost line where the TSC is unusable');
	pass('(nothing to compare: the TSC is unusable here)');
}
$node->stop;

# ---- a server whose reads look trapped ----
my $trapped = server('trapped', 5000);
my ($t_usable, $t_reason, $t_read, $t_unusable) = split /\|/, $trapped->safe_psql('postgres',
	q{SELECT available, coalesce(auto_reason, ''), read_ns, coalesce(reason_unusable, '') FROM timing_source_tsc()});
# the seam replaces a measured figure only: with none measured it has
# nothing to stand beside
is($t_read, $ordered ? '5000.00' : '',
	$ordered ? 'TIMING_SOURCE_TEST_READ_NS: the read cost shown is the simulated one'
	: 'TIMING_SOURCE_TEST_READ_NS: nothing measured, so nothing is simulated either');
if ($t_usable ne 't')
{
	is($t_reason, $t_unusable, 'the TSC is unusable here: the reason stays the unusable one');
  SKIP:
	{
		skip 'the TSC is unusable here, so auto never picks it and a trapped read changes nothing', 4;
	}
	$trapped->stop;
	done_testing();
	exit 0;
}
like($t_reason, qr/^Reading the $what costs 5000 ns, as much as a system call \([\d]+ ns\)/,
	"'auto' declines a trapped read, and says why: $t_reason");
like($trapped->safe_psql('postgres', 'SELECT string_agg(r, E\'\n\') FROM timing_source_report(0.05) r'),
	qr/^TSC read cost at detection: 5000\.0 ns per ordered read, .* \(trapped: the read is emulated\)$/m,
	'the report says the read is emulated');
SKIP:
{
	skip 'PostgreSQL 19+: core decides what its timing_clock_source = auto uses', 2 if $major >= 19;
	is($trapped->safe_psql('postgres', 'SHOW timing_clock_source'), 'auto (system)',
		"sessions' auto resolves to the system clock");
	my $calls = $trapped->safe_psql('postgres', q{
		CREATE TABLE t AS SELECT g FROM generate_series(1, 1000) g;
		SET timing_clock_source = 'tsc';
		SELECT tsc_timed_calls FROM timing_source_tsc();
		EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM t;
		SELECT tsc_timed_calls FROM timing_source_tsc();});
	my @c = $calls =~ /^(\d+)$/mg;
	is($c[-1] - $c[0], 1003, "an explicit 'tsc' is still allowed, and times every call");
}
$trapped->stop;
done_testing();
