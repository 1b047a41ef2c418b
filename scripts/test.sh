#!/usr/bin/env bash
# scripts/test.sh -- build, install and run every test that scripts/matrix
# lists (docs/testing.md).
#
#   bash scripts/test.sh                   every target of the matrix
#   bash scripts/test.sh --target 17       only target 17 (repeatable)
#   bash scripts/test.sh --suite regress   only suites of that name, in every
#                                          configuration (repeatable)
#   bash scripts/test.sh --local           only the target of this machine's
#                                          PostgreSQL (pg_config on PATH) and
#                                          architecture, here (roots run this)
#   bash scripts/test.sh --list            targets, configurations and suites
#
# Run as root on Debian: it installs what is missing, builds, installs, and
# runs the suites against throw-away clusters of an unprivileged user.  The
# expected number of tests comes from the suites themselves (TAP plans, the
# files prove was given, the REGRESS list).  The last line is "N passed, N
# failed, N skipped"; the exit status is non-zero if anything failed.
set -uo pipefail

. "$(dirname "$0")/lib.sh"

want_targets=() want_suites=() local_only=0
while [ $# -gt 0 ]; do
	case $1 in
		--target) want_targets+=("$2"); shift ;;
		--suite) want_suites+=("$2"); shift ;;
		--local) local_only=1 ;;
		--list)
			ts_matrix target | while read -r id major arch debian where configs; do
				echo "$id: PostgreSQL $major, $arch, Debian $debian, $([ "$where" = host ] && echo "on this host" || echo "in a root")"
				for c in $configs; do
					echo "    $c: $(ts_matrix config | awk -v c="$c" '$1 == c { $1 = ""; print substr($0, 2) }')"
				done
				ts_matrix absent | awk -v t="$id" '$1 == t { $1 = ""; print "    (absent)" $0 }'
			done
			exit 0 ;;
		-h|--help) sed -n '2,18p' "$0"; exit 0 ;;
		*) ts_die "unknown argument: $1" ;;
	esac
	shift
done

trap ts_cleanup EXIT
trap 'exit 130' INT TERM

passed=0 failed=0 skipped=0 summary=()
# the exact reasons the fallback clusters must report (src/tsclock.c)
notsc_reason="The TSC was disabled by the environment variable TIMING_SOURCE_DISABLE_TSC."
nox86_reason="This build of timing_source is not for x86-64 or arm64, so only the system clock is available."

# add P F S: to the totals
add() {
	passed=$((passed + $1)) failed=$((failed + $2)) skipped=$((skipped + $3))
}

# skip_line WHAT REASON: one skip, with its reason, in the summary
skip_line() {
	ts_log "$1 skipped: $2"
	add 0 0 1
	summary+=("$(printf '%-28s skipped: %s' "$1" "$2")")
}

# selected SUITE...: whether any of these suites is to run (--suite)
selected() {
	local s w
	[ ${#want_suites[@]} -eq 0 ] && return 0
	for s in "$@"; do
		for w in "${want_suites[@]}"; do [ "$s" = "$w" ] && return 0; done
	done
	return 1
}

config_suites() {
	ts_matrix config | awk -v c="$1" '$1 == c { $1 = ""; print substr($0, 2) }'
}

# tally KIND EXPECT LOG: "passed failed skipped" of a suite's log, where
# KIND says what printed it and EXPECT what it must have run:
#   tap      TAP; EXPECT unused: the plan ("1..N") must match the results
#   prove    prove -v; EXPECT: how many test files it was given (each
#            file's own plan prove checks itself)
#   regress  pg_regress; EXPECT: how many tests the REGRESS list has
# Every mismatch, and a suite that ran nothing (or only skips), is one more
# failure, said on stderr.  The skips' reasons go to LOG.skips, counted.
tally() {
	awk -v kind="$1" -v expect="$2" -v skips="$3.skips" '
		function problem(msg) { print "suite problem: " msg > "/dev/stderr"; bad++ }
		function skip(why) { s++; sub(/^[ -]+/, "", why); reasons[why == "" ? "(no reason given)" : why]++ }
		kind != "regress" && /^(not )?ok [0-9]+/ {
			results++
			if (match($0, /# *[Ss][Kk][Ii][Pp]/)) skip(substr($0, RSTART + RLENGTH))
			else if (match($0, /# *TODO/)) skip("TODO" substr($0, RSTART + RLENGTH))
			else if (/^not ok/) f++
			else p++
		}
		kind != "regress" && /^1\.\.[0-9]+/ {
			plans++; planned += substr($1, 4)
			if (match($0, /# *[Ss][Kk][Ii][Pp]/)) { skipped_files++; skip(substr($0, RSTART + RLENGTH)) }
		}
		kind == "prove" && /^Files=[0-9]+, Tests=[0-9]+/ {
			split($0, a, /[=,]/); files = a[2] + 0; tests = a[4] + 0; summaries++
		}
		kind == "regress" && /All [0-9]+ tests passed/ {
			match($0, /All [0-9]+/); total = substr($0, RSTART + 4, RLENGTH - 4) + 0; summaries++
		}
		kind == "regress" && /[0-9]+ of [0-9]+ tests failed/ {
			match($0, /[0-9]+ of [0-9]+/); split(substr($0, RSTART, RLENGTH), a, / of /)
			f = a[1] + 0; total = a[2] + 0; summaries++
		}
		END {
			if (kind == "tap") {
				if (plans != 1) problem("the output has " plans + 0 " plan lines (1..N), not one")
				else if (planned != results) problem("planned " planned " tests, ran " results + 0)
			} else if (kind == "prove") {
				if (summaries != 1) problem("no prove summary (Files=N, Tests=M)")
				else if (files != expect) problem("prove ran " files " test files, was given " expect)
				else if (tests != results) problem("prove counted " tests " tests, the output shows " results + 0)
			} else {
				if (summaries != 1) problem("no pg_regress summary line (All N tests passed / N of M tests failed)")
				else if (total != expect) problem("pg_regress ran " total " tests, the REGRESS list has " expect)
				p = total - f
			}
			if (p + f == 0) problem("no test ran (only skips, or nothing)")
			for (r in reasons) printf "%d\t%s\n", reasons[r], r > skips
			print p + 0, f + bad, s + 0
		}' "$3"
}

# run_suite NAME KIND EXPECT COMMAND...: run COMMAND as the test user in the
# copied tree, count its results (tally), add them to the totals and the
# summary, the skips' reasons below it
run_suite() {
	local name=$1 kind=$2 expect=$3 log rc p f s t0 n why
	shift 3
	log=$TS_WORK/$name.log
	ts_log "suite $name"
	t0=$(date +%s)
	(cd "$TS_WORK/src" && ts_as_user "$@") 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	read -r p f s < <(tally "$kind" "$expect" "$log" 2> >(tee -a "$log" >&2))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "suite $name exited with status $rc" | tee -a "$log" >&2
		f=1
	fi
	add "$p" "$f" "$s"
	summary+=("$(printf '%-28s %4d passed, %d failed, %d skipped  (%d s)' "$label $name" "$p" "$f" "$s" "$(($(date +%s) - t0))")")
	[ -s "$log.skips" ] && while IFS=$'\t' read -r n why; do
		summary+=("$(printf '%-28s   %d skipped: %s' "" "$n" "$why")")
	done <"$log.skips"
	[ "$f" -eq 0 ]
}

# ---- the suites: suite_NAME SUFFIX (SUFFIX: "" or _CONFIG) -------------------

# make_prereqs TARGET: the files a rule of the Makefile depends on
make_prereqs() {
	make -C "$TS_WORK/src" -pnq PG_CONFIG="$PG_CONFIG" "$1" 2>/dev/null |
		awk -v t="$1:" '$1 == t { $1 = ""; print substr($0, 2); exit }'
}

# the REGRESS list of the Makefile for this PostgreSQL
regress_list() {
	make -C "$TS_WORK/src" -s -f Makefile -f - PG_CONFIG="$PG_CONFIG" ts-print-regress <<<'ts-print-regress: ; @echo $(REGRESS)'
}

suite_unit() {
	run_suite unit prove "$(make_prereqs unittest | wc -w)" make -s unittest PG_CONFIG="$PG_CONFIG"
}

suite_unit_arm64() {
	if [ "$(uname -m)" = aarch64 ]; then
		skip_line "$label unit_arm64" "this host is arm64: the unit suite above ran the arm64 code natively"
		return
	fi
	run_suite unit_arm64 prove "$(make_prereqs unittest-arm64 | wc -w)" \
		make -s unittest-arm64 PG_CONFIG="$PG_CONFIG" EXTRA_CFLAGS=-Werror
}

# the whole extension must also build where there is no counter
build_nox86() {
	rm -rf ../build_nox86 && cp -r . ../build_nox86 && cd ../build_nox86 && make -s clean &&
		make -s EXTRA_CFLAGS="-DTSCLOCK_NO_X86 -Werror"
}
suite_build_nox86() {
	run_suite build_nox86 tap - bash -c "$(declare -f build_nox86)"'
		if build_nox86; then r=ok; else r="not ok"; fi
		echo "$r 1 - the extension builds with the TSC compiled out, no warnings"; echo 1..1'
}

# the installed library and the counter-less one export only what PostgreSQL needs
suite_symbols() {
	run_suite symbols tap - bash scripts/check_symbols.sh \
		"$("$PG_CONFIG" --pkglibdir)/timing_source.so" ../build_nox86/timing_source.so
}

suite_pgxn() {
	run_suite pgxn tap - bash scripts/pgxn.sh check
}

# the release zip is a git archive of HEAD
suite_pgxn_dist() {
	local zip
	if ! git -C "$TS_ROOT" rev-parse --verify -q HEAD >/dev/null 2>&1; then
		skip_line "$label pgxn_dist" "not a git checkout: the release zip is made by git archive"
		return
	fi
	mkdir -p "$TS_WORK/dist"
	git -C "$TS_ROOT" ls-tree -r --name-only HEAD >"$TS_WORK/dist/files"
	if zip=$(bash "$TS_ROOT/scripts/pgxn.sh" dist "$TS_WORK/dist"); then
		chown -R "$TS_USER" "$TS_WORK/dist"
		run_suite pgxn_dist tap - bash scripts/pgxn.sh dist-check "$zip" "$TS_WORK/dist/files"
	else
		run_suite pgxn_dist tap - echo -e "not ok 1 - scripts/pgxn.sh dist makes the release zip\n1..1"
	fi
}

# the Debian package, for this major only, from a clean export of the tree;
# in a root it is handed out for the deb_install configuration
suite_deb() {
	local d=$TS_WORK/deb
	if [ "$PG_CONFIG" != "/usr/lib/postgresql/$major/bin/pg_config" ] ||
		! command -v dpkg-buildpackage >/dev/null || ! command -v pg_buildext >/dev/null; then
		skip_line "$label deb" "not a Debian-packaged PostgreSQL ($PG_CONFIG), or no dpkg-buildpackage/pg_buildext"
		return
	fi
	rm -rf "$d" && mkdir -p "$d/timing-source" "$d/out"
	ts_source_tar | tar -xf - -C "$d/timing-source"
	chown -R "$TS_USER" "$d"
	run_suite deb tap - bash -c 'cd "$1" && bash scripts/deb.sh build "$2" "$3"' deb \
		"$d/timing-source" "$major" "$d/out"
	[ -n "${TS_SHARE:-}" ] && cp "$d"/out/*.deb "$TS_SHARE"/ 2>/dev/null
	return 0
}

# pg_regress on the configuration's cluster; the tests of the input
# directory that this major's REGRESS list leaves out are counted as skips
suite_regress() {
	local sfx=${1:-} out=out${1:-} list dir t left=
	list=$(regress_list)
	dir=$TS_WORK/src
	[ -d "$dir/test/sql" ] && dir=$dir/test
	for t in "$dir"/sql/*.sql; do
		t=$(basename "$t" .sql)
		case " $list " in *" $t "*) ;; *) [[ $t == timing_source--* ]] || left="$left $t" ;; esac
	done
	[ -n "$left" ] && skip_line "$label regress$sfx:$left" "not in the REGRESS list for PostgreSQL $major"
	mkdir -p "$TS_WORK/src/$out"
	chown "$TS_USER" "$TS_WORK/src/$out"
	run_suite "regress$sfx" regress "$(wc -w <<<"$list")" env TS_EXPECT_TSC="$expect_tsc" \
		make -s installcheck PG_CONFIG="$PG_CONFIG" TAP_TESTS= EXTRA_REGRESS_OPTS="--outputdir=$out" ||
		cat "$TS_WORK/src/$out/regression.diffs" 2>/dev/null ||
		cat "$TS_WORK/src/regression.diffs" 2>/dev/null  # a REGRESS_OPTS with its own --outputdir
	suite_regress_variants "$sfx" "$dir/expected" "$TS_WORK/src/$out/results"
	if [ -n "${TS_SHARE:-}" ]; then
		mkdir -p "$TS_SHARE/regress$sfx" && cp -r "$TS_WORK/src/$out/." "$TS_SHARE/regress$sfx/" 2>/dev/null
	fi
	return 0
}

# A test with alternate expected outputs (output that cannot be a checked
# value, such as DEBUG messages) must have matched its own case's, where
# pg_regress accepts any: NAME.out for a server whose TSC is usable;
# NAME_2.out, where the test has one, for 15-18 without the TSC in a build
# with the wrappers (they time with the system clock there); NAME_1.out
# otherwise (a build without the counter, or 19 without the TSC)
suite_regress_variants() {
	local sfx=$1 exp=$2 res=$3 f t want n=0 lines=
	for f in "$exp"/*_1.out; do
		[ -e "$f" ] || continue
		t=$(basename "$f" _1.out)
		want=$exp/$t.out
		if [ "$expect_tsc" != available ]; then
			want=$f
			[ -e "$exp/${t}_2.out" ] && [ "$major" -lt 19 ] &&
				[ "$expect_tsc" != "$nox86_reason" ] && want=$exp/${t}_2.out
		fi
		n=$((n + 1))
		if cmp -s "$res/$t.out" "$want"; then
			lines+="ok $n - $t matched $(basename "$want"), the output for TSC state: $expect_tsc"$'\n'
		else
			lines+="not ok $n - $t did not match $(basename "$want"), the output for TSC state: $expect_tsc"$'\n'
		fi
	done
	[ $n -eq 0 ] && return 0
	run_suite "regress_variants$sfx" tap - printf '%s1..%d\n' "$lines" "$n"
}

# t/*.pl as a user runs them: "make installcheck" with TAP_TESTS = 1 runs
# them through PGXS's prove_installcheck (REGRESS= : no pg_regress here);
# every server they start inherits the configuration's environment, and
# each test checks that its server sees the TSC state TS_EXPECT_TSC names
suite_taptests() {
	local sfx=${1:-} cmd=(make -s installcheck PG_CONFIG="$PG_CONFIG" REGRESS= "PROVE_FLAGS=-v --timer")
	# under qemu the Perl tests take many minutes per configuration,
	# which CI's time limit cannot hold twice; without the TSC
	# they run code that is the same on every architecture, checked
	# natively on every amd64 major, and this configuration's fallback
	# and pg_regress still run here
	if [ "$sfx" = _notsc ] && [ -n "${TS_EMULATED:-}" ]; then
		skip_line "$label taptests$sfx" "an emulated CPU: the TSC-disabled Perl tests are architecture-independent and run natively on every amd64 major"
		return
	fi
	# a server built without --enable-tap-tests (Debian's are built with it)
	if ! grep -qE '^enable_tap_tests[[:space:]]*=[[:space:]]*yes' \
		"$(dirname "$("$PG_CONFIG" --pgxs)")/../Makefile.global"; then
		cmd+=(enable_tap_tests=yes PROVE=prove)
	fi
	run_suite "taptests$sfx" prove "$(cd "$TS_WORK/src" && ls t/*.pl 2>/dev/null | wc -l)" \
		env TS_EXPECT_TSC="$expect_tsc" ${disable_tsc:+TIMING_SOURCE_DISABLE_TSC=1} "${cmd[@]}"
}

# host_trusted_counter: what makes this host's kernel trust its counter
# (x86-64: an invariant TSC with RDTSCP as the clocksource; arm64: the
# generic timer), or nothing
host_trusted_counter() {
	local flags cs
	flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
	cs=$(cat "${TIMING_SOURCE_CLOCKSOURCE_FILE:-/sys/devices/system/clocksource/clocksource0/current_clocksource}" 2>/dev/null)
	if [ "$(uname -m)" = x86_64 ] && [ "$cs" = tsc ] && grep -qw rdtscp <<<"$flags" &&
		grep -qw nonstop_tsc <<<"$flags" && grep -qw constant_tsc <<<"$flags"; then
		echo "the kernel trusts this TSC"
	elif [ "$(uname -m)" = aarch64 ] && [ "$cs" = arch_sys_counter ]; then
		echo "the kernel uses the arm64 generic timer counter"
	fi
}

# Such a host must get a usable TSC; otherwise a detection regression would
# only switch the suites to their no-TSC checks and pass (the tsc
# configuration's suites also expect it usable there: config_start)
suite_host_tsc() {
	local what
	what=$(host_trusted_counter)
	if [ -z "$what" ]; then
		skip_line "$label host_tsc" "this host's kernel does not use an invariant TSC (or the arm64 counter) as its clocksource"
		return
	fi
	run_suite host_tsc tap - bash -c '
		if [ "$1" = t ]; then echo "ok 1 - $2, and so does timing_source"
		else echo "not ok 1 - $2, but timing_source_tsc().available is \"$1\""; fi; echo 1..1' \
		host_tsc "$tsc_available" "$what"
}

# The cluster just started must have no usable TSC, for exactly the
# configuration's reason, and its sessions must default to the system
# clock; so that its suites cannot pass by re-running the TSC path
suite_fallback() {
	local state
	state=$(ts_psql -d postgres -At -F '|' -c 'CREATE EXTENSION IF NOT EXISTS timing_source' \
		-c 'SELECT available, coalesce(reason_unusable, $$(none)$$), current_setting($$timing_clock_source$$) FROM timing_source_tsc()' 2>&1)
	run_suite "fallback${1:-}" tap - bash -c '
		IFS="|" read -r available reason shown <<<"$1"
		check() { if [ "$2" = "$3" ]; then echo "ok $1 - $4"; else echo "not ok $1 - $4: got \"$2\", expected \"$3\""; fi; }
		check 1 "$available" f "timing_source_tsc().available is f"
		check 2 "$reason" "$2" "reason_unusable: $2"
		check 3 "$shown" "auto (system)" "timing_clock_source shows auto (system)"
		echo 1..3' fallback "$state" "$expect_tsc"
}

# ---- the configurations: config_start NAME sets up its cluster (returns
# non-zero with a skip when it does not apply here), config_stop NAME ends it

config_start() {
	disable_tsc= expect_tsc=$main_tsc_state
	# where the kernel trusts the counter the servers must find it usable,
	# whatever the probe server said (test/sql/init.sql and
	# t/TimingSourceExpect.pm check TS_EXPECT_TSC)
	[ -n "$(host_trusted_counter)" ] && expect_tsc=available
	case $1 in
		tree) ;;
		tsc) ts_cluster_start tsc </dev/null || ts_die "cannot start the test cluster" ;;
		notsc)
			if [ "$tsc_available" != t ]; then
				skip_line "$label notsc" "the TSC is not usable here, so the tsc configuration already ran the fallback"
				return 1
			fi
			disable_tsc=1 expect_tsc=$notsc_reason
			TIMING_SOURCE_DISABLE_TSC=1 ts_cluster_start notsc </dev/null ||
				ts_die "cannot start the TSC-disabled cluster" ;;
		nox86)
			[ -f "$TS_WORK/build_nox86/timing_source.so" ] ||
				(cd "$TS_WORK/src" && ts_as_user bash -c "$(declare -f build_nox86); build_nox86") >/dev/null ||
				ts_die "the build without the counter failed"
			# should anything fail from here on, the exit trap puts the real build back
			trap 'ts_cleanup_clusters; make -C "$TS_ROOT" -s install PG_CONFIG="$PG_CONFIG" >/dev/null 2>&1; ts_cleanup' EXIT
			make -C "$TS_WORK/build_nox86" -s install PG_CONFIG="$PG_CONFIG" >/dev/null &&
				ts_cluster_start nox86 </dev/null ||
				ts_die "cannot install and start the build without the counter"
			expect_tsc=$nox86_reason ;;
		*) ts_die "scripts/matrix: no configuration '$1' in scripts/test.sh" ;;
	esac
}

config_stop() {
	ts_cleanup_clusters
	if [ "$1" = nox86 ]; then
		make -C "$TS_ROOT" -s install PG_CONFIG="$PG_CONFIG" >/dev/null || ts_die "cannot reinstall the build"
		trap ts_cleanup EXIT
	fi
}

# run_here ID CONFIG...: a target's configurations on this machine (the
# packages are installed and $TS_WORK made)
run_here() {
	local id=$1 c s
	shift
	label=PG$id
	# installs go to the server's shared directories: serialize concurrent
	# runs on one machine (developers' worktrees)
	exec 9>/tmp/timing_source-install.lock
	flock 9
	ts_build_install || ts_die "build failed"
	ts_copy_tree
	# what the servers of the tsc configuration see
	ts_cluster_start probe </dev/null || ts_die "cannot start the test cluster"
	tsc_available=$(ts_psql -d postgres -At -c 'CREATE EXTENSION IF NOT EXISTS timing_source' \
		-c 'SELECT available FROM timing_source_tsc()') &&
		main_tsc_state=$(ts_psql -d postgres -At \
			-c 'SELECT CASE WHEN available THEN $$available$$ ELSE reason_unusable END FROM timing_source_tsc()') ||
		ts_die "cannot ask the test cluster whether the TSC is usable"
	ts_cleanup_clusters
	for c in "$@"; do
		[ "$c" = deb_install ] && continue
		# shellcheck disable=SC2046
		selected $(config_suites "$c") || continue
		config_start "$c" || continue
		for s in $(config_suites "$c"); do
			selected "$s" || continue
			case $c in tree|tsc) "suite_$s" ;; *) "suite_$s" "_$c" ;; esac
		done
		config_stop "$c"
	done
	absent_skips "$id" local
	exec 9>&-
}

# absent_skips ID local|deb_install: the matrix's absent configurations
# of ID, as skips
absent_skips() {
	local t c why
	while read -r t c why; do
		[ "$t" = "$1" ] || continue
		if [ "$2" = deb_install ]; then [ "$c" = deb_install ] || continue
		else [ "$c" != deb_install ] || continue; fi
		# shellcheck disable=SC2046
		selected $(config_suites "$c") && skip_line "PG$1 $c" "$why"
	done < <(ts_matrix absent)
}

# ---- the targets -----------------------------------------------------------

# in_root ID LOG CMD...: CMD in a fresh root of target ID, sharing
# $share; a foreign arm64 root is shown what an arm64 kernel that uses
# its generic timer reports as its clocksource, as the host's says
# nothing about an arm64 counter (t/061 covers the other verdicts)
in_root() {
	local id=$1 log=$2 bind=
	shift 2
	if [ "$arch" = arm64 ] && [ "$(uname -m)" != aarch64 ]; then
		echo arch_sys_counter >"$share/.clocksource"
		bind=$share/.clocksource:/sys/devices/system/clocksource/clocksource0/current_clocksource
	fi
	TS_MAJORS_SHARE=$share TS_MAJORS_BIND=$bind bash "$TS_ROOT/scripts/majors.sh" run "$id" "$@" 2>&1 | tee "$log"
	return "${PIPESTATUS[0]}"
}

# deb_install ID DEBDIR: the package the target built, installed into a
# clean root of the target, and its autopkgtests run there
deb_install() {
	local id=$1 p f s t0 rc
	t0=$(date +%s)
	ts_log "suite deb_install: the PostgreSQL $major package in a clean root of target $id"
	share=$2
	if compgen -G "$share/postgresql-$major-timing-source_*.deb" >/dev/null; then
		in_root "$id" "$TS_WORK/deb_install$id.log" bash scripts/deb.sh install-check /build/share
		rc=$?
	else
		echo -e "not ok 1 - the deb suite left a postgresql-$major-timing-source package\n1..1" | tee "$TS_WORK/deb_install$id.log"
		rc=1
	fi
	read -r p f s < <(tally tap - "$TS_WORK/deb_install$id.log")
	[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	add "$p" "$f" "$s"
	summary+=("$(printf '%-28s %4d passed, %d failed, %d skipped  (%d s)' "PG$id deb_install" "$p" "$f" "$s" "$(($(date +%s) - t0))")")
}

# a root target: this script with --local inside, its summary handed out
run_in_root() {
	local id=$1 log p f s args=() w rc
	share=$TS_WORK/share$id
	mkdir -p "$share"
	for w in "${want_suites[@]}"; do args+=(--suite "$w"); done
	ts_log "target $id: PostgreSQL $major ($arch) in a Debian $debian root"
	log=$TS_WORK/target$id.log
	in_root "$id" "$log" bash scripts/test.sh --local "${args[@]}"
	rc=$?
	if read -r p f s < <(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$log" | tail -n1 |
		awk '{ print $1, $3, $5 }') && [ -f "$share/summary" ]; then
		mapfile -t -O ${#summary[@]} summary <"$share/summary"
	else
		p=0 f=1 s=0
		summary+=("$(printf '%-28s no summary from the root (exit status %d): counted as a failure' "PG$id" "$rc")")
	fi
	[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	add "$p" "$f" "$s"
}

# target_get ID: sets major arch debian where configs
target_get() {
	read -r _ major arch debian where configs < <(ts_matrix target | awk -v t="$1" '$1 == t') ||
		ts_die "no target '$1' in scripts/matrix (see --list)"
}

if [ $local_only = 1 ]; then
	major=$("$PG_CONFIG" --version 2>/dev/null | sed -E 's/[^0-9]*([0-9]+).*/\1/')
	major=${major:-$(ts_path_major)} arch=$(dpkg --print-architecture)
	id=$(ts_matrix target | awk -v m="$major" -v a="$arch" '$2 == m && $3 == a { print $1; exit }')
	if [ -n "$id" ]; then
		target_get "$id"
	else
		# a PostgreSQL of one's own (PG_CONFIG=...): the configurations of
		# the first target of this architecture
		own=$major
		id=$(ts_matrix target | awk -v a="$arch" '$3 == a { print $1; exit }')
		[ -n "$id" ] || ts_die "scripts/matrix has no target for $arch"
		target_get "$id"
		ts_log "PostgreSQL $own on $arch is no target of scripts/matrix: running target $id's configurations ($configs)"
		major=$own id=$own
	fi
	ts_install_deps "$major" $(ts_packages test "$major") \
		$([[ " $configs " == *" tree "* ]] && ts_packages tree "$major")
	ts_install_optional "$major"
	ts_workdir
	# shellcheck disable=SC2086
	run_here "$id" $configs
else
	[ ${#want_targets[@]} -eq 0 ] && mapfile -t want_targets < <(ts_matrix target | awk '{ print $1 }')
	# what the host needs for these targets
	pkgs=()
	for t in "${want_targets[@]}"; do
		target_get "$t"
		if [ "$where" = host ]; then
			pkgs+=($(ts_packages build "$major") $(ts_packages test "$major"))
			[[ " $configs " == *" tree "* ]] && pkgs+=($(ts_packages tree "$major"))
		fi
		{ [ "$where" = root ] || [[ " $configs " == *" deb_install "* ]]; } && pkgs+=($(ts_packages root))
		[ "$arch" = "$(dpkg --print-architecture)" ] || pkgs+=($(ts_packages emulate))
	done
	ts_install_deps "$TS_PG_MAJOR_DEFAULT" "${pkgs[@]}"
	for t in "${want_targets[@]}"; do
		target_get "$t"
		[ "$where" = host ] && ts_install_optional "$major"
	done
	ts_workdir
	# Make the roots (debootstrap and apt: mostly waiting on the mirror and
	# the disk) while the host's suites run, at the lowest priority, as the
	# emulated root's package scripts take a core and the suites have
	# timing checks; a run waits on its root's lock for one still being made.
	roots=()
	for t in "${want_targets[@]}"; do
		target_get "$t"
		{ [ "$where" = root ] || { [[ " $configs " == *" deb_install "* ]] && selected deb_install; }; } && roots+=("$t")
	done
	if [ ${#roots[@]} -gt 0 ]; then
		ts_log "making the roots of ${roots[*]} in the background (log: $TS_WORK/roots.log)"
		nice -n 19 ionice -c 3 bash "$TS_ROOT/scripts/majors.sh" prepare "${roots[@]}" >"$TS_WORK/roots.log" 2>&1 &
	fi
	for t in "${want_targets[@]}"; do
		target_get "$t"
		if [ "$where" = host ]; then
			# shellcheck disable=SC2086
			run_here "$t" $configs
			share=$TS_WORK/deb/out
		else
			run_in_root "$t"
		fi
		if [[ " $configs " == *" deb_install "* ]] && selected deb_install; then
			deb_install "$t" "$share"
		fi
		absent_skips "$t" deb_install
	done
fi

[ -n "${TS_SHARE:-}" ] && printf '%s\n' "${summary[@]}" >"$TS_SHARE/summary"
echo
echo "==== summary"
printf '%s\n' "${summary[@]}"
echo "${passed} passed, ${failed} failed, ${skipped} skipped"
[ "$failed" -eq 0 ]
