#
# Kernel distrust: 'auto' stops choosing the TSC once Linux's current
# clocksource is a clock that does not involve the TSC (the kernel's
# watchdog switches to hpet or acpi_pm when it finds the TSC unstable),
# without a restart: at the next configuration reload, and within 10 s
# otherwise.  The test seam TIMING_SOURCE_CLOCKSOURCE_FILE names the file
# read instead of /sys/devices/system/clocksource/clocksource0/current_clocksource.
#
# Where the TSC is unusable (the *_notsc run), 'auto' never uses it, and
# the clocksource is still followed and reported.
#
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use TimingSourceExpect;
use Cwd;
use POSIX ();
use Time::HiRes qw(usleep time);

# absolute: the server reads it from its data directory
my $cs_file = Cwd::abs_path(PostgreSQL::Test::Utils::tempdir()) . '/current_clocksource';

sub set_cs
{
	open my $fh, '>', $cs_file or die "$cs_file: $!";
	print $fh "$_[0]\n";
	close $fh;
}

# the clocksource of a kernel that trusts the CPU's counter: "tsc" on
# x86-64, "arch_sys_counter" (the generic timer) on arm64
my $arm64 = (POSIX::uname())[4] eq 'aarch64';
my $good = $arm64 ? 'arch_sys_counter' : 'tsc';

set_cs($good);
my $node = PostgreSQL::Test::Cluster->new('distrust');

# PostgreSQL 19 and later own timing_clock_source and time plan nodes in
# core: this test does not apply there.  The skip is stated (and counted).
skip_all_from_major($node, 19,
	'core decides what "auto" uses there, not the extension');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'timing_source'
max_parallel_workers_per_gather = 0
});
{
	local $ENV{TIMING_SOURCE_CLOCKSOURCE_FILE} = $cs_file;
	$node->start;
}
$node->safe_psql('postgres', 'CREATE EXTENSION timing_source');
expect_tsc_state($node);
my $tsc = $node->safe_psql('postgres', 'SELECT available FROM timing_source_tsc()') eq 't';
note $tsc ? 'TSC usable' : 'TSC unusable on this server';

my $s = $node->background_psql('postgres');
sub q1
{
	my $out = $s->query_safe($_[0]);
	chomp $out;
	return $out;
}

is(q1('SELECT os_clocksource FROM timing_source_tsc()'), $good, 'the clocksource is read from the seam file');
is(q1('SHOW timing_clock_source'), $tsc ? 'auto (tsc)' : 'auto (system)',
	"clocksource $good: auto uses the TSC exactly when it is usable");

# the kernel moves to hpet; a reload makes the session look again at once
set_cs('hpet');
my $loaded = q1('SELECT pg_conf_load_time()');
$node->reload;
my $seen = 0;
for (1 .. 100)
{
	if (q1("SELECT pg_conf_load_time() > '$loaded'") eq 't') { $seen = 1; last; }
	usleep(50_000);
}
ok($seen, 'the session processed the reload');
is(q1('SHOW timing_clock_source'), 'auto (system)', 'after the reload, auto no longer uses the TSC');
my ($os, $auto_reason, $in_use) = split /\|/,
	q1('SELECT os_clocksource, auto_reason, in_use FROM timing_source_tsc()');
is($os, 'hpet', 'timing_source_tsc() shows the new clocksource');
is($in_use, 'f', 'and in_use is false');
if ($tsc)
{
	like($auto_reason, $arm64
		? qr/clocksource is "hpet", not "arch_sys_counter": the kernel does not use the CPU's generic timer counter/
		: qr/clocksource is "hpet", not "tsc": the kernel has stopped trusting the TSC/,
		'auto_reason says why auto refuses');
	my $calls = q1('SELECT tsc_timed_calls FROM timing_source_tsc()');
	q1('EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM generate_series(1, 1000)');
	is(q1('SELECT tsc_timed_calls FROM timing_source_tsc()'), $calls,
		'EXPLAIN ANALYZE under auto does not time with the TSC');
	q1(q{SET timing_clock_source = 'tsc'});
	is(q1('SELECT in_use FROM timing_source_tsc()'), 't', "an explicit 'tsc' is still the user's choice");
	q1('RESET timing_clock_source');
	like(slurp_file($node->logfile), qr/LOG:  timing_source: "auto" no longer uses the TSC now that the operating system's clocksource is "hpet"/,
		'the change is logged');
}
else
{
	my $reason = q1('SELECT reason_unusable FROM timing_source_tsc()');
	is($auto_reason, $reason, 'auto_reason is the reason the TSC is unusable');
}

# back to the counter, without a reload: seen within 10 s
set_cs($good);
my $t0 = time();
my $shown;
while (time() - $t0 < 20)
{
	$shown = q1('SELECT os_clocksource FROM timing_source_tsc()');
	last if $shown eq $good;
	usleep(500_000);
}
my $took = time() - $t0;
is($shown, $good, 'without a reload, the clocksource is read again');
# 10 s, plus this loop's polling interval and a loaded machine's delays
cmp_ok($took, '<=', 12, sprintf('within 10 s (%.1f s)', $took));
is(q1('SHOW timing_clock_source'), $tsc ? 'auto (tsc)' : 'auto (system)',
	'and auto follows it back');

# a clocksource computed from the TSC says nothing against it
set_cs('kvm-clock');
$loaded = q1('SELECT pg_conf_load_time()');
$node->reload;
for (1 .. 100)
{
	last if q1("SELECT pg_conf_load_time() > '$loaded'") eq 't';
	usleep(50_000);
}
my ($adjust) = q1('SELECT coalesce(tsc_adjust, false) FROM timing_source_tsc()');
is(q1('SHOW timing_clock_source'), ($tsc && $adjust eq 't') ? 'auto (tsc)' : 'auto (system)',
	'kvm-clock: auto uses the TSC where the CPU has TSC_ADJUST (never on arm64: not its counter)');

$s->quit;
$node->stop;
done_testing();
