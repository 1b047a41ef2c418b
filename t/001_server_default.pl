# timing_source.clock_source in postgresql.conf is the server-wide default
# of timing_clock_source: sessions follow it, also after a reload, until
# they SET their own value; RESET goes back to following it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use TimingSourceExpect;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new('server_default');

# PostgreSQL 19 and later own timing_clock_source and time plan nodes in
# core: this test does not apply there.  The skip is stated (and counted).
skip_all_from_major($node, 19,
	'the extension defines neither timing_source.clock_source nor timing_clock_source there (core owns the latter; sql/init checks that)');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'timing_source'
timing_source.clock_source = 'system'
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION timing_source');
expect_tsc_state($node);

my $tsc_ok = $node->safe_psql('postgres', 'SELECT available FROM timing_source_tsc()') eq 't';

is($node->safe_psql('postgres', 'SHOW timing_source.clock_source'), 'system',
	'server default read from postgresql.conf');
is($node->safe_psql('postgres', 'SHOW timing_clock_source'), 'system',
	'a new session follows the server default');
is($node->safe_psql('postgres', 'SELECT in_use FROM timing_source_tsc()'), 'f',
	'and does not use the TSC');

# a session that sets its own value, and one that follows the default
my $own = $node->background_psql('postgres');
my $follow = $node->background_psql('postgres');

# query_safe's result, without the trailing newline some releases leave
sub bg_query
{
	my ($session, $sql) = @_;
	my $out = $session->query_safe($sql);
	chomp $out;
	return $out;
}
$own->query_safe(q{SET timing_clock_source = 'system'});

$node->append_conf('postgresql.conf', "timing_source.clock_source = 'auto'\n");
$node->reload;
# a reload reaches open sessions at their next command; wait for it
$node->poll_query_until('postgres', q{SELECT current_setting('timing_source.clock_source') = 'auto'})
  or die 'reload not seen';

my $auto_shown = $tsc_ok ? 'auto (tsc)' : 'auto (system)';
my $got;
for (1 .. 100)
{
	$got = bg_query($follow, 'SHOW timing_clock_source');
	last if $got ne 'system';
	usleep(100_000);
}
is($got, $auto_shown, 'after a reload, a following session uses the new default');
is(bg_query($own, 'SHOW timing_clock_source'), 'system',
	'a session that SET its own value keeps it across the reload');
$own->query_safe('RESET timing_clock_source');
is(bg_query($own, 'SHOW timing_clock_source'), $auto_shown,
	'RESET makes it follow the server default again');
is($node->safe_psql('postgres', 'SELECT in_use FROM timing_source_tsc()'),
	$tsc_ok ? 't' : 'f', 'auto uses the TSC exactly when it is usable');

# the server default 'tsc'
my $log_offset = -s $node->logfile;
$node->append_conf('postgresql.conf', "timing_source.clock_source = 'tsc'\n");
$node->reload;
if ($tsc_ok)
{
	$node->poll_query_until('postgres', q{SELECT current_setting('timing_source.clock_source') = 'tsc'})
	  or die 'reload not seen';
	is($node->safe_psql('postgres', 'SHOW timing_clock_source'), 'tsc',
		'server default tsc reaches new sessions');
}
else
{
	# refused: the reload logs why, and the previous value stays
	$node->wait_for_log(
		qr/invalid value for parameter "timing_source.clock_source": "tsc"/,
		$log_offset);
	is($node->safe_psql('postgres', 'SHOW timing_source.clock_source'), 'auto',
		'server default tsc refused on a host whose TSC is unusable');
}
$own->quit;
$follow->quit;

# per-role and per-database settings apply to sessions, on top of the default
$node->safe_psql('postgres', q{CREATE ROLE r LOGIN; ALTER ROLE r SET timing_clock_source = 'system'});
is($node->safe_psql('postgres', 'SHOW timing_clock_source', extra_params => [ '-U', 'r' ]),
	'system', 'ALTER ROLE ... SET timing_clock_source applies to the role');

# The environment variable disables a usable TSC; where the host's own is
# unusable already, that reason stands and is the one the log must give.
my $refusal = $tsc_ok
  ? 'The TSC was disabled by the environment variable TIMING_SOURCE_DISABLE_TSC.'
  : $node->safe_psql('postgres', 'SELECT reason_unusable FROM timing_source_tsc()');
$node->stop;

# With the TSC disabled, 'tsc' in postgresql.conf does not stop the server:
# the value is refused with the reason in the log, and the default stays.
my $notsc = PostgreSQL::Test::Cluster->new('server_default_notsc');
$notsc->init;
$notsc->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'timing_source'
timing_source.clock_source = 'tsc'
});
{
	local $ENV{TIMING_SOURCE_DISABLE_TSC} = '1';
	$notsc->start;
}
is($notsc->safe_psql('postgres', 'SHOW timing_source.clock_source'), 'auto',
	'unusable tsc in postgresql.conf: server starts with the built-in default');
is($notsc->safe_psql('postgres', 'SHOW timing_clock_source'), 'auto (system)',
	'and sessions use the system clock');
like(slurp_file($notsc->logfile), qr/invalid value for parameter "timing_source.clock_source": "tsc".*\n.*DETAIL:  \Q$refusal\E/,
	"the log says why the value was refused ($refusal)");
$notsc->stop;

done_testing();
