#!/usr/bin/env bash
# scripts/test.sh -- set up, build, install, and run every test.
#
#   scripts/test.sh            PostgreSQL 15 here, then 17, 18 and 19 in Debian roots
#   scripts/test.sh --local    only the PostgreSQL whose pg_config is on PATH
#   scripts/test.sh --majors "17"   choose the other majors
#   scripts/test.sh --no-arm64      leave out PostgreSQL 15 for arm64 (emulated)
#
# Run as root on Debian.  Suites: clock core unit tests (prove), pg_regress
# (make installcheck), Perl TAP (prove), each against a
# throw-away cluster run by an unprivileged user; pg_regress runs
# twice where the TSC is usable: once as is, once with the TSC disabled, so
# that both the TSC and the fallback behaviour are checked on one machine.
#
# The last line is "N passed, N failed, N skipped"; the exit status is
# non-zero if anything failed.
set -uo pipefail

. "$(dirname "$0")/lib.sh"

local_only=0
majors="17 18 19"
arm64=1
while [ $# -gt 0 ]; do
	case $1 in
		--local) local_only=1 ;;
		--majors) majors=$2; shift ;;
		--no-arm64) arm64=0 ;;
		-h|--help) sed -n '2,15p' "$0"; exit 0 ;;
		*) ts_die "unknown argument: $1" ;;
	esac
	shift
done

trap ts_cleanup EXIT
trap 'exit 130' INT TERM

passed=0 failed=0 skipped=0
# the exact reasons the fallback clusters must report (src/tsclock.c)
notsc_reason="The TSC was disabled by the environment variable TIMING_SOURCE_DISABLE_TSC."
nox86_reason="This build of timing_source is not for x86-64 or arm64, so only the system clock is available."
summary=()
majors_ok=() majors_failed=()

# count_tap LOG: add the TAP and pg_regress results in LOG to the totals;
# prints "p f s" for this log.
count_results() {
	local log=$1 p f s
	p=$(grep -cE '^ok [0-9]+( |$)|\.\.\. ok ' "$log" | head -1)
	s=$(grep -ciE '^ok [0-9]+ # skip' "$log" | head -1)
	f=$(grep -cE '^not ok [0-9]+|\.\.\. FAILED' "$log" | head -1)
	echo "$((p - s)) $f $s"
}

# Minimum number of tests each suite must run (passed or failed; skips do
# not count), per run.  A suite that runs fewer -- it ran nothing, a test
# file went missing, or tests that used to run now skip -- gets one more
# failure, and so does a suite with no entry here.  These are the real counts of the current tests
# on this machine (x86-64 with a usable TSC), the same on PostgreSQL 15, 17
# and 18 (the roots run this script with --local, so the table applies
# there too).  A major whose count differs gets its own entry, "NAME@MAJOR",
# and a major on another architecture "NAME@MAJOR-ARCH" (uname -m)
# (18's EXPLAIN hook adds two checks of sampled timing to taptests).
# The TSC-disabled (_notsc) and TSC-compiled-out (_nox86) runs skip the TSC
# cases, so they have their own numbers; where the host's own TSC is
# unusable, the first run's regress and taptests are held to their
# _notsc numbers, as they then run exactly those tests.
#
# After adding, removing or splitting tests: run "bash scripts/test.sh",
# copy each suite's "passed" figure (plus "failed", if any) from the
# summary into this table, and commit the new numbers with the tests.
# Never set a number below the real count: the table is what catches a
# lost test.  A suite that runs more than its number gets a note in its log
# asking for the table to be raised.
declare -A suite_min=(
	[unit]=303
	[unit_noavx2]=223
	[unit_arm64]=223
	[build_nox86]=1
	[symbols]=2
	[pgxn]=18
	[pgxn_dist]=6
	[deb]=23
	[regress]=15
	[regress_case]=1
	[host_tsc]=1
	[taptests]=146
	[taptests@18]=148
	[fallback_notsc]=3
	[regress_notsc]=15
	[regress_case_notsc]=1
	[taptests_notsc]=116
	[fallback_nox86]=3
	[regress_nox86]=15
	[regress_case_nox86]=1
)
# PostgreSQL 19 (core owns timing_clock_source, the wrappers read core's
# clock): pg_regress's tests minus settings, which the Makefile leaves out
# there; the Perl tests minus the three stated skips (001, 060, 061); no
# fallback runs (see below)
suite_min[regress@19]=15
suite_min[taptests@19]=96

# suite_minimum NAME: the minimum for this suite on this major and host
suite_minimum() {
	local name=$1 major=${pg_label#PG}
	if [ "${tsc_available:-t}" != t ]; then
		case $name in regress|taptests) name=${name}_notsc ;; esac
	fi
	# the unit tests of the AVX2 usage snapshots skip where they are not
	# built (other architectures) or the CPU has no AVX2
	if [ "$name" = unit ] && { [ "$(uname -m)" != x86_64 ] || ! grep -qw avx2 /proc/cpuinfo; }; then
		name=unit_noavx2
	fi
	if [ -n "${suite_min[$name@$major-$(uname -m)]:-}" ]; then
		echo "${suite_min[$name@$major-$(uname -m)]}"
	elif [ -n "${suite_min[$name@$major]:-}" ]; then
		echo "${suite_min[$name@$major]}"
	else
		echo "${suite_min[$name]:-}"
	fi
}

# run_suite NAME COMMAND...: run as the test user in the copied tree.
run_suite() {
	local name=$1 log rc p f s min
	shift
	log="$TS_WORK/$name.log"
	ts_log "suite $name"
	(cd "$TS_WORK/src" && ts_as_user "$@") 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	read -r p f s < <(count_results "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "suite $name exited with status $rc" >&2
		f=1
	fi
	if [ "$rc" -ne 0 ] && [ -f "$TS_WORK/src/${REGRESS_OUT:-.}/regression.diffs" ]; then
		cat "$TS_WORK/src/${REGRESS_OUT:-.}/regression.diffs"
	fi
	min=$(suite_minimum "$name")
	if [ -z "$min" ]; then
		echo "suite $name: no minimum test count recorded in scripts/test.sh (suite_min)" | tee -a "$log" >&2
		f=$((f + 1))
	elif [ $((p + f)) -lt "$min" ]; then
		echo "suite $name: $((p + f)) tests run (not skipped), fewer than the $min it must run (a lost test file, new skips, or nothing run)" | tee -a "$log" >&2
		f=$((f + 1))
	elif [ $((p + f)) -gt "$min" ]; then
		echo "note: suite $name ran $((p + f)) tests, more than its recorded minimum $min; raise suite_min in scripts/test.sh" | tee -a "$log" >&2
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	summary+=("$(printf '%-28s %4d passed, %d failed, %d skipped' "$pg_label $name" "$p" "$f" "$s")")
}

skip_suite() {
	local name=$1 why=$2
	ts_log "suite $name skipped: $why"
	skipped=$((skipped + 1))
	summary+=("$(printf '%-28s skipped: %s' "$pg_label $name" "$why")")
}

# fallback_check NAME REASON: the cluster just started must have no usable
# TSC, for exactly REASON, and its sessions must default to the system
# clock.  Run first on every fallback cluster, so that its suites cannot
# pass by re-running the TSC path (if TIMING_SOURCE_DISABLE_TSC stopped
# reaching the server, or -DTSCLOCK_NO_X86 stopped taking effect).
fallback_check() {
	local name=$1 want=$2 state
	state=$(ts_psql -d postgres -At -F '|' -c 'CREATE EXTENSION IF NOT EXISTS timing_source' \
		-c 'SELECT available, coalesce(reason_unusable, $$(none)$$), current_setting($$timing_clock_source$$) FROM timing_source_tsc()' 2>&1)
	run_suite "$name" bash -c '
		IFS="|" read -r available reason shown <<<"$1"
		check() { if [ "$2" = "$3" ]; then echo "ok $1 - $4"; else echo "not ok $1 - $4: got \"$2\", expected \"$3\""; fi; }
		check 1 "$available" f "timing_source_tsc().available is f"
		check 2 "$reason" "$2" "reason_unusable: $2"
		check 3 "$shown" "auto (system)" "timing_clock_source shows auto (system)"' \
		"$name" "$state" "$want"
}

# regress LABEL EXPECT: pg_regress (test/sql) against the current cluster;
# EXPECT is the TSC state its server must see (TS_EXPECT_TSC, checked by
# test/sql/init.sql).  With TS_SHARE set (a scripts/majors.sh root), the
# results are handed out too.
regress() {
	local label=$1 expect=$2
	mkdir -p "$TS_WORK/src/out_$label"
	chown "$TS_USER" "$TS_WORK/src/out_$label"
	# TAP_TESTS= : pg_regress only; the taptests suites run t/*.pl
	REGRESS_OUT="out_$label" run_suite "regress$label" \
		env TS_EXPECT_TSC="$expect" make -s installcheck PG_CONFIG="$PG_CONFIG" TAP_TESTS= \
		EXTRA_REGRESS_OPTS="--outputdir=out_$label"
	# instrument_bind has one expected output per TSC case (DEBUG messages
	# cannot be checked values): the run must have matched its own case's
	run_suite "regress_case$label" bash -c '
		want=test/expected/instrument_bind.out
		[ "$1" = available ] || want=test/expected/instrument_bind_1.out
		if cmp -s "$2/results/instrument_bind.out" "$want"; then
			echo "ok 1 - instrument_bind matched $want, the output for TSC state: $1"
		else
			echo "not ok 1 - instrument_bind did not match $want, the output for TSC state: $1"
		fi' regress_case "$expect" "out_$label"
	if [ -n "${TS_SHARE:-}" ] && [ -d "$TS_WORK/src/out_$label" ]; then
		mkdir -p "$TS_SHARE/regress$label"
		cp -r "$TS_WORK/src/out_$label"/. "$TS_SHARE/regress$label"/ 2>/dev/null || true
	fi
	return 0
}

if [ $local_only = 1 ]; then
	ts_install_deps "$(ts_path_major)" $(ts_deb_packages)
else
	# the other majors run in debootstrap roots with a loopback-only network
	ts_install_deps "$TS_PG_MAJOR_DEFAULT" $(ts_deb_packages) debootstrap debian-archive-keyring iproute2
	# arm64: cross-compiled unit tests under qemu-aarch64, and a root of
	# Debian's arm64 packages run under qemu-user through binfmt_misc
	[ $arm64 = 1 ] && ts_install_deps "$TS_PG_MAJOR_DEFAULT" gcc-aarch64-linux-gnu libc6-dev-arm64-cross \
		qemu-user-static binfmt-support
fi
pg_label="PG$("$PG_CONFIG" --version | sed -E 's/[^0-9]*([0-9]+).*/\1/')"
# Installs go to the server's shared directories: serialize concurrent runs
# on one machine (developers' worktrees); released before the other majors.
exec 9>/tmp/timing_source-install.lock
flock 9
ts_build_install || ts_die "build failed"
ts_workdir
ts_copy_tree

run_suite unit make -s unittest PG_CONFIG="$PG_CONFIG"
# arm64 (issue 10): the same unit tests cross-compiled, under qemu-aarch64
if [ $local_only = 0 ] && [ $arm64 = 1 ] && [ "$(uname -m)" != aarch64 ]; then
	run_suite unit_arm64 make -s unittest-arm64 PG_CONFIG="$PG_CONFIG" EXTRA_CFLAGS=-Werror
fi

# the whole extension must also build where there is no TSC (non-x86-64)
run_suite build_nox86 bash -c '
	rm -rf ../build_nox86 && cp -r . ../build_nox86 && cd ../build_nox86 && make -s clean &&
	if make -s EXTRA_CFLAGS="-DTSCLOCK_NO_X86 -Werror"; then
		echo "ok 1 - the extension builds with the TSC compiled out, no warnings"
	else
		echo "not ok 1 - the extension builds with the TSC compiled out, no warnings"
	fi'

# the installed library and the TSC-less one export only what PostgreSQL needs
run_suite symbols bash scripts/check_symbols.sh \
	"$("$PG_CONFIG" --pkglibdir)/timing_source.so" ../build_nox86/timing_source.so

# PGXN: META.json against the Meta Spec 1.0.0, versions in agreement with
# the control file; the release zip (git archive of HEAD, so only where
# the tree is a git checkout: the host run covers it) unpacks and builds.
run_suite pgxn bash scripts/pgxn.sh check
if git -C "$TS_ROOT" rev-parse --verify -q HEAD >/dev/null 2>&1; then
	mkdir -p "$TS_WORK/dist"
	if dist_zip=$(bash "$TS_ROOT/scripts/pgxn.sh" dist "$TS_WORK/dist"); then
		git -C "$TS_ROOT" ls-tree -r --name-only HEAD >"$TS_WORK/dist/files"
		chown -R "$TS_USER" "$TS_WORK/dist"
		run_suite pgxn_dist bash scripts/pgxn.sh dist-check "$dist_zip" "$TS_WORK/dist/files"
	else
		run_suite pgxn_dist echo "not ok 1 - scripts/pgxn.sh dist makes the release zip"
	fi
elif [ -z "${TS_IN_MAJORS_ROOT:-}" ]; then
	skip_suite pgxn_dist "not a git checkout: the release zip comes from git archive"
fi

# The Debian package (debian/), built for this major only, from a clean
# export of the tree; the full run installs it into a clean root (deb_install).
deb_dir=$TS_WORK/deb
if [ "$PG_CONFIG" = "/usr/lib/postgresql/${pg_label#PG}/bin/pg_config" ] &&
	command -v dpkg-buildpackage >/dev/null && command -v pg_buildext >/dev/null; then
	mkdir -p "$deb_dir/timing-source" "$deb_dir/out"
	ts_source_tar | tar -xf - -C "$deb_dir/timing-source"
	chown -R "$TS_USER" "$deb_dir"
	run_suite deb bash -c 'cd "$1" && bash scripts/deb.sh build "$2" "$3"' deb \
		"$deb_dir/timing-source" "${pg_label#PG}" "$deb_dir/out"
	# inside a scripts/majors.sh root: hand the package out
	[ -n "${TS_SHARE:-}" ] && cp "$deb_dir"/out/*.deb "$TS_SHARE"/
else
	skip_suite deb "not a Debian-packaged PostgreSQL ($PG_CONFIG) or no dpkg-buildpackage/pg_buildext"
fi

ts_cluster_start main </dev/null || ts_die "cannot start the test cluster"
tsc_available=$(ts_psql -d postgres -At -c 'CREATE EXTENSION IF NOT EXISTS timing_source' \
	-c 'SELECT available FROM timing_source_tsc()') ||
	ts_die "cannot ask the test cluster whether the TSC is usable"
main_tsc_state=$(ts_psql -d postgres -At \
	-c 'SELECT CASE WHEN available THEN $$available$$ ELSE reason_unusable END FROM timing_source_tsc()') ||
	ts_die "cannot ask the test cluster whether the TSC is usable"

# A host whose kernel trusts the TSC (an x86-64 CPU with RDTSCP and an
# invariant TSC, clocksource tsc) must get a usable TSC here.  Without this
# check a detection regression would only switch the suites below to the
# fallback's checks and pass.  There pg_regress's and the Perl tests'
# servers must see the TSC usable (TS_EXPECT_TSC=available, checked by
# test/sql/init.sql and t/TimingSourceExpect.pm); elsewhere the state the
# server reports is all there is to hold them to.
host_flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
host_clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || true)
host_tsc_why=
if [ "$(uname -m)" = x86_64 ] && [ "$host_clocksource" = tsc ] &&
	grep -qw rdtscp <<<"$host_flags" && grep -qw nonstop_tsc <<<"$host_flags" &&
	grep -qw constant_tsc <<<"$host_flags"; then
	host_tsc_why="the kernel trusts this TSC"
elif [ "$(uname -m)" = aarch64 ] &&
	[ "$(cat "${TIMING_SOURCE_CLOCKSOURCE_FILE:-/sys/devices/system/clocksource/clocksource0/current_clocksource}" 2>/dev/null)" = arch_sys_counter ]; then
	# arm64 (issue 10): a kernel that uses the generic timer's counter
	# (under qemu-user: the clocksource the emulated run shows the servers)
	host_tsc_why="the kernel uses the arm64 generic timer counter"
fi
if [ -n "$host_tsc_why" ]; then
	main_expect=available
	run_suite host_tsc bash -c '
		if [ "$1" = t ]; then
			echo "ok 1 - $2, and so does timing_source"
		else
			echo "not ok 1 - $2, but timing_source_tsc().available is \"$1\""
		fi' host_tsc "$tsc_available" "$host_tsc_why"
else
	main_expect=$main_tsc_state
	skip_suite host_tsc "this host has no invariant TSC with RDTSCP that the kernel uses as its clocksource"
fi
regress "" "$main_expect"

# t/*.pl as a user runs them: "make installcheck" with TAP_TESTS = 1 runs
# them through PGXS's prove_installcheck (REGRESS= : no pg_regress here)
perl_tap=(make -s installcheck PG_CONFIG="$PG_CONFIG" REGRESS= PROVE_FLAGS=-v)
# a server built without --enable-tap-tests (Debian's are built with it)
# would only print "TAP tests not enabled": enable PGXS's prove rule here
if ! grep -qE '^enable_tap_tests[[:space:]]*=[[:space:]]*yes' \
	"$(dirname "$("$PG_CONFIG" --pgxs)")/../Makefile.global"; then
	ts_log "this server was built without --enable-tap-tests; running t/*.pl with prove from PATH"
	perl_tap+=(enable_tap_tests=yes PROVE=prove)
fi
have_perl_tap=0
compgen -G "$TS_WORK/src/t/*.pl" >/dev/null && have_perl_tap=1
[ $have_perl_tap = 1 ] &&
	run_suite taptests env TS_EXPECT_TSC="$main_expect" "${perl_tap[@]}"

# PostgreSQL 19+: plan nodes are timed with core's clock, on core's own TSC
# decision (also through the extension's wrappers), which
# TIMING_SOURCE_DISABLE_TSC and the TSC-less build do not reach; what those
# runs would check of the extension (its diagnostics without a TSC) is the
# same code as on 15-18, checked there.
core_owns_why="PostgreSQL ${pg_label#PG} times plan nodes with core's clock and core's own TSC decision (the extension's wrappers read it too), which this switch does not reach; the extension's TSC-less diagnostics are checked on 15-18"
if [ "${pg_label#PG}" -ge 19 ]; then
	skip_suite "regress_notsc" "$core_owns_why"
elif [ "$tsc_available" = t ]; then
	TIMING_SOURCE_DISABLE_TSC=1 ts_cluster_start notsc </dev/null ||
		ts_die "cannot start the TSC-disabled cluster"
	fallback_check fallback_notsc "$notsc_reason"
	regress "_notsc" "$notsc_reason"
	# every server the Perl tests start inherits the switch, and each test
	# asserts that its server sees it (PGXS's prove_installcheck starts
	# from a clean tmp_check, so a failed test of the first run cannot
	# stop this one)
	[ $have_perl_tap = 1 ] &&
		run_suite taptests_notsc env TIMING_SOURCE_DISABLE_TSC=1 \
			TS_EXPECT_TSC="$notsc_reason" "${perl_tap[@]}"
else
	skip_suite "regress_notsc" "the TSC is not usable on this host, so the run above already covered the fallback; the TSC case cannot occur here"
fi

# The build with the TSC compiled out (what a non-x86-64 machine gets),
# installed and run through pg_regress; then the real build is
# put back.
if [ "${pg_label#PG}" -ge 19 ]; then
	skip_suite "regress_nox86" "$core_owns_why"
elif [ -f "$TS_WORK/build_nox86/timing_source.so" ]; then
	# should anything below fail, the exit trap puts the real build back
	trap 'ts_cleanup_clusters; make -C "$TS_ROOT" -s install PG_CONFIG="$PG_CONFIG" >/dev/null 2>&1; ts_cleanup' EXIT
	make -C "$TS_WORK/build_nox86" -s install PG_CONFIG="$PG_CONFIG" >/dev/null &&
		ts_cluster_start nox86 </dev/null ||
		ts_die "cannot install and start the build without TSC"
	fallback_check fallback_nox86 "$nox86_reason"
	regress "_nox86" "$nox86_reason"
	ts_cleanup_clusters
	make -C "$TS_ROOT" -s install PG_CONFIG="$PG_CONFIG" >/dev/null ||
		ts_die "cannot reinstall the build"
	trap ts_cleanup EXIT
else
	skip_suite "regress_nox86" "the build without TSC failed, see build_nox86"
fi

ts_cleanup_clusters
flock -u 9

# deb_install_suite MAJOR DIR: install the package built for MAJOR
# (DIR/*.deb) into a fresh overlay of the cached Debian root for MAJOR
# (scripts/majors.sh: PostgreSQL, no timing_source) and run its
# autopkgtests there (scripts/deb.sh install-check)
deb_install_suite() {
	local m=$1 dir=$2 log rc p f s
	log="$TS_WORK/deb_install$m.log"
	ts_log "suite deb_install: the PostgreSQL $m package in a clean Debian root"
	if compgen -G "$dir/postgresql-$m-timing-source_*.deb" >/dev/null; then
		TS_MAJORS_SHARE=$dir bash "$TS_ROOT/scripts/majors.sh" run "$m" \
			bash scripts/deb.sh install-check /build/share 2>&1 | tee "$log"
		rc=${PIPESTATUS[0]}
	else
		echo "not ok 1 - no postgresql-$m-timing-source package was built" | tee "$log"
		rc=1
	fi
	read -r p f s < <(count_results "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	summary+=("$(printf '%-28s %4d passed, %d failed, %d skipped' "PG$m deb_install" "$p" "$f" "$s")")
	[ "$f" -eq 0 ]
}

[ $local_only = 0 ] && deb_install_suite "${pg_label#PG}" "$deb_dir/out"
if [ "$failed" -eq 0 ]; then majors_ok+=("${pg_label#PG}"); else majors_failed+=("${pg_label#PG}"); fi

if [ $local_only = 0 ]; then
	for m in $majors; do
		if [ ! -f "$TS_ROOT/scripts/majors.sh" ]; then
			skip_suite "PG$m" "scripts/majors.sh is not there yet"
			continue
		fi
		ts_log "PostgreSQL $m in a Debian root"
		# majors.sh writes "MAJOR verdict passed failed seconds skipped"
		# to the results file; the run inside leaves its package in debs/M
		mkdir -p "$TS_WORK/debs/$m"
		TS_MAJORS_RESULTS="$TS_WORK/majors.results" TS_MAJORS_SHARE="$TS_WORK/debs/$m" \
			bash "$TS_ROOT/scripts/majors.sh" test "$m"
		rc=$?
		read -r verdict p f s < <(awk -F '\t' -v m="$m" '
			$1 == m { v = $2; p = $3 + 0; f = $4 + 0; s = $6 + 0 }
			END { print (v == "" ? "none" : v), p + 0, f + 0, s + 0 }' "$TS_WORK/majors.results" 2>/dev/null)
		verdict=${verdict:-none} p=${p:-0} f=${f:-0} s=${s:-0}
		if { [ "$rc" -ne 0 ] || [ "$verdict" != PASS ]; } && [ "$f" -eq 0 ]; then f=1; fi
		passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
		summary+=("$(printf '%-28s %4d passed, %d failed, %d skipped' "PG$m (all suites)" "$p" "$f" "$s")")
		deb_install_suite "$m" "$TS_WORK/debs/$m" || f=$((f + 1))
		if [ "$f" -eq 0 ]; then majors_ok+=("$m"); else majors_failed+=("$m"); fi
	done
fi

# ---- arm64 (issue 10) -----------------------------------------------------
# The full suite for PostgreSQL 15 from Debian 12's arm64 packages, in a
# root run under qemu-user through binfmt_misc (scripts/majors.sh major
# "15-arm64").  Its package is built and checked there (deb); installing it
# into a second emulated clean root (deb_install) is left out for time.
if [ $local_only = 0 ] && [ $arm64 = 1 ]; then
	ts_log "PostgreSQL 15 for arm64 in an emulated Debian root"
	mkdir -p "$TS_WORK/debs/15-arm64"
	TS_MAJORS_RESULTS="$TS_WORK/majors.results" TS_MAJORS_SHARE="$TS_WORK/debs/15-arm64" \
		bash "$TS_ROOT/scripts/majors.sh" test 15-arm64
	rc=$?
	read -r verdict p f s < <(awk -F '\t' '
		$1 == "15-arm64" { v = $2; p = $3 + 0; f = $4 + 0; s = $6 + 0 }
		END { print (v == "" ? "none" : v), p + 0, f + 0, s + 0 }' "$TS_WORK/majors.results" 2>/dev/null)
	verdict=${verdict:-none} p=${p:-0} f=${f:-0} s=${s:-0}
	if { [ "$rc" -ne 0 ] || [ "$verdict" != PASS ]; } && [ "$f" -eq 0 ]; then f=1; fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	summary+=("$(printf '%-28s %4d passed, %d failed, %d skipped' "PG15-arm64 (all suites)" "$p" "$f" "$s")")
	if [ "$f" -eq 0 ]; then majors_ok+=("15-arm64"); else majors_failed+=("15-arm64"); fi
fi
# ---- end arm64 ------------------------------------------------------------

echo
echo "==== summary"
printf '%s\n' "${summary[@]}"
echo "PostgreSQL majors passed: ${majors_ok[*]:-none}; failed: ${majors_failed[*]:-none}"
echo "${passed} passed, ${failed} failed, ${skipped} skipped"
[ "$failed" -eq 0 ]
