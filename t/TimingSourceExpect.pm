# t/TimingSourceExpect.pm -- the TSC state a run of the Perl TAP tests
# expects its servers to see.
#
# scripts/test.sh sets TS_EXPECT_TSC for every prove run, as for pg_regress
# (test/sql/init.sql checks it there): "available" for the run on a host
# whose kernel trusts its TSC, and the exact reason_unusable text for the
# runs that must not have it -- for the run with TIMING_SOURCE_DISABLE_TSC=1,
# the environment variable's reason.  A test calls expect_tsc_state($node) on
# the server it is about to use, so that a run meant to cover the fallback
# cannot silently exercise the TSC (or the other way round), for example if
# the environment variable stopped reaching the servers.  Unset (a test run
# by hand), there is nothing to compare with and no test is added.
package TimingSourceExpect;

use strict;
use warnings;
use Exporter 'import';
use Test::More;

our @EXPORT = qw(expect_tsc_state pg_major skip_all_from_major start_preloaded tsc_of wrappers_sample);

# expect_tsc_state(NODE [, DBNAME]): the extension must exist in DBNAME
sub expect_tsc_state
{
	my ($node, $dbname) = @_;
	my $want = $ENV{TS_EXPECT_TSC};
	return unless defined $want && $want ne '';
	my $got = $node->safe_psql($dbname // 'postgres',
		q{SELECT CASE WHEN available THEN 'available' ELSE coalesce(reason_unusable, '(no reason)') END
		    FROM timing_source_tsc()});
	is($got, $want, 'the server sees the TSC state this run expects: '
		  . ($want eq 'available' ? 'usable' : 'unusable'));
}

# pg_major(NODE): the server's major version as a number.  A release
# candidate's pg_version ("19rc1") orders below 19 in PostgreSQL::Version,
# so the leading digits are taken instead.
sub pg_major
{
	my ($node) = @_;
	my ($major) = ("" . $node->pg_version) =~ /^(\d+)/;
	return $major;
}

# skip_all_from_major(NODE, MAJOR, REASON): on MAJOR and later the whole
# file does not apply; say why in one counted skip and end the test.
sub skip_all_from_major
{
	my ($node, $from, $reason) = @_;
	return if pg_major($node) < $from;
  SKIP:
	{
		skip "PostgreSQL $from+: $reason", 1;
	}
	done_testing();
	exit 0;
}

# start_preloaded(NODE [, libraries => LIST] [, conf => TEXT]): init and
# start NODE with LIST (default timing_source) preloaded, serial plans and
# no JIT (whose compile time lands in the first timed node), TEXT appended
# after those, and the extension created; then expect_tsc_state.
sub start_preloaded
{
	my ($node, %opt) = @_;
	my $libraries = $opt{libraries} // 'timing_source';
	$node->init;
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = '$libraries'\n"
		  . "max_parallel_workers_per_gather = 0\n"
		  . "jit = off\n"
		  . ($opt{conf} // ''));
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION timing_source');
	expect_tsc_state($node);
}

# tsc_of(NODE): (whether the server's TSC is usable, its kHz or 0), noted
sub tsc_of
{
	my ($node) = @_;
	my ($tsc, $khz) = split /\|/, $node->safe_psql('postgres',
		'SELECT available, coalesce(frequency_khz, 0) FROM timing_source_tsc()');
	$tsc = $tsc eq 't';
	note $tsc ? "TSC usable at $khz kHz" : 'TSC unusable on this server';
	return ($tsc, $khz);
}

# wrappers_sample(NODE): whether the extension's wrappers time a sample of
# the calls (timing_source.sample_every > 1) on this server.  On 19 they
# do under core's clock, whichever it is; on 15-18 under the TSC or,
# where the session does not use it, the system clock, in every build that
# reads a counter (x86-64, arm64).  A build for another CPU has no
# wrappers on 15-18, and core times every call.  The extension must exist
# in the postgres database.
sub wrappers_sample
{
	my ($node) = @_;
	return 1 if pg_major($node) >= 19;
	my $reason = $node->safe_psql('postgres',
		q{SELECT coalesce(reason_unusable, '') FROM timing_source_tsc()});
	my $samples = $reason !~ /^This build of timing_source is not for x86-64 or arm64/;
	note $samples ? 'the wrappers sample on this server' : 'nothing samples on this server (no counter in this build)';
	return $samples;
}

1;
