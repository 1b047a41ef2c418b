#!/bin/bash
#
# scripts/majors.sh -- build and test timing_source against PostgreSQL majors
# that the host does not have, each in a throw-away Debian root made with
# debootstrap from Debian's own packages.
#
#   scripts/majors.sh prepare MAJOR...   create (or reuse) the cached root
#   scripts/majors.sh test MAJOR...      run the full suite inside the root
#   scripts/majors.sh run MAJOR CMD...   run CMD in a fresh copy of the root,
#                                        source tree in the working directory
#   scripts/majors.sh clean [MAJOR...]   remove cached roots
#   scripts/majors.sh list               majors this script knows
#
# Majors: 15 (Debian 12 bookworm; the host's own major, whose root serves as
# a clean root for installing the Debian package), 17 (Debian 13 trixie), 18
# (Debian forky), 19 (Debian sid, PostgreSQL from experimental; no pgTAP
# package).  The roots come from the Debian mirror the host's apt
# is configured with (its own release's entry); there is no built-in one.
#
# Cached roots live under $TS_MAJORS_CACHE (default /var/cache/timing_source),
# one directory per major, suite, mirror and package list; a root missing its
# stamp or whose packages are not all installed is rebuilt.  A test run never
# writes to the cached root: it runs on an overlay (cached root below, a
# throw-away directory above) inside private mount, PID and network
# namespaces, with /proc, /dev (bind), a tmpfs /dev/shm and /sys (read-only
# bind) mounted, so every mount and every process of the run ends with it;
# the mounts are also unmounted explicitly, and checked with findmnt
# afterwards.
#
# Host requirements (Debian 12): debootstrap (pulls in wget),
# debian-archive-keyring, gpgv, util-linux (unshare, findmnt, flock), tar,
# git; iproute2 for the loopback-only network namespace (without it runs
# share the host's network).
#
# Where overlayfs cannot be mounted (e.g. /var/tmp on overlayfs itself) the
# run copies the root instead (about 10 s more); TS_MAJORS_NO_OVERLAY=1
# forces that.  TS_MAJORS_CACHE, TS_MAJORS_MIRROR, TS_MAJORS_TIMEOUT
# (seconds per major, default 1500) and TS_MAJORS_TEST_ARGS (default
# --local) override the defaults.
#
# With TS_MAJORS_RESULTS=FILE, test appends one line per major to FILE:
#     MAJOR<TAB>PASS|FAIL<TAB>passed<TAB>failed<TAB>seconds<TAB>skipped
# (passed/failed/skipped empty when the run printed no summary line).
#
# With TS_MAJORS_SHARE=DIR (test and run), DIR is bind-mounted read-write
# at /build/share inside the root and TS_SHARE=/build/share is set there:
# test.sh --local leaves the Debian package it built in $TS_SHARE, and a
# run can read files put there (e.g. that package, to install it).
#
# Inside the root the project's own entry point runs:
#     bash scripts/test.sh $TS_MAJORS_TEST_ARGS      (default: --local)
# with the major's bindir first in PATH, and its "N passed, N failed" line is
# reported per major.
#
set -Eeuo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
# shared helpers: ts_log, ts_die, ts_packages, ts_source_tar; TS_ROOT
. "$(dirname "$SELF")/lib.sh"
TOP=$TS_ROOT
CACHE=${TS_MAJORS_CACHE:-/var/cache/timing_source}
TEST_ARGS=${TS_MAJORS_TEST_ARGS:---local}
TEST_TIMEOUT=${TS_MAJORS_TIMEOUT:-1500}
# bump when the way roots are built changes, so old caches are not reused
ROOT_FORMAT=1

now()
{
	date +%s
}

# ---------------------------------------------------------------------------
# per-major configuration

major_suite()
{
	case "$1" in
		15) echo bookworm ;;
		17) echo trixie ;;
		18) echo forky ;;
		19) echo sid ;;
		15-arm64) echo bookworm ;;
		*) ts_die "unknown major '$1' (known: 15 17 18 19 15-arm64)" ;;
	esac
}

# ---- arm64 (issue 10) -----------------------------------------------------
# A major key "M-arm64" is PostgreSQL M in a root of Debian's arm64 packages,
# run under qemu-user through binfmt_misc (qemu-user-static); the rest of
# this script only asks major_pg for the PostgreSQL major and major_arch for
# debootstrap's --arch.
major_pg()
{
	echo "${1%%-*}"
}

major_arch()
{
	case "$1" in
		*-arm64) echo arm64 ;;
		*) echo "" ;;
	esac
}

# A foreign root needs the kernel to run its binaries: binfmt_misc mounted,
# and an enabled qemu-aarch64 entry whose interpreter is opened at
# registration (flag F), so that it works inside the chroot.
check_foreign_arch()
{
	local arch=$1 f=/proc/sys/fs/binfmt_misc/qemu-aarch64
	[ -n "$arch" ] || return 0
	[ "$arch" = arm64 ] || ts_die "unsupported architecture '$arch'"
	[ "$(uname -m)" = aarch64 ] && return 0
	if [ ! -e /proc/sys/fs/binfmt_misc/status ]; then
		mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null ||
			ts_die "binfmt_misc is not mounted and cannot be (mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc)"
	fi
	if [ ! -e "$f" ]; then
		command -v update-binfmts >/dev/null &&
			update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
	fi
	[ -e "$f" ] || ts_die "no qemu-aarch64 entry in binfmt_misc (apt-get install qemu-user-static binfmt-support)"
	grep -qx enabled "$f" || ts_die "the qemu-aarch64 binfmt_misc entry is disabled (update-binfmts --enable qemu-aarch64)"
	grep -q '^flags:.*F' "$f" || ts_die "the qemu-aarch64 binfmt_misc entry lacks flag F, so it cannot work inside a chroot"
}

# Under qemu-user the root's processes run on the host's x86-64 kernel,
# whose clocksource ("tsc", "kvm-clock") says nothing about an arm64
# counter, and which the arm64 rule would take as "the kernel does not use
# the counter".  The run therefore shows every process in the root what an
# arm64 Linux kernel that uses its generic timer reports, arch_sys_counter,
# by bind-mounting a file over sysfs's current_clocksource inside the run's
# mount namespace (an environment variable would not reach the clusters
# that pg_ctlcluster starts with a cleaned environment in the deb suite).
# The other verdicts are checked by the unit tests and by t/061, which uses
# the TIMING_SOURCE_CLOCKSOURCE_FILE seam.  Sets INNER_CLOCKSOURCE to the
# file's host path, or empty; when set, the run also gets TS_EMULATED (the
# few checks with a wall-clock slack widen it: everything is 10-50 times
# slower under qemu-user).
INNER_CLOCKSOURCE=
emulated_clocksource()
{
	INNER_CLOCKSOURCE=
	[ "$(major_arch "$1")" = arm64 ] && [ "$(uname -m)" != aarch64 ] || return 0
	echo arch_sys_counter >"$RUNDIR/arm64_current_clocksource"
	INNER_CLOCKSOURCE=$RUNDIR/arm64_current_clocksource
}
# ---- end arm64 ------------------------------------------------------------

# what scripts/test.sh --local installs (lib.sh), so that its installed-or-not
# check passes inside a root that has no apt lists
major_packages()
{
	local m p
	m=$(major_pg "$1")
	p="$(ts_packages "$m") $(ts_deb_packages)"
	# pgTAP is not packaged for 19 (experimental) yet
	[ "$m" = 19 ] && p=$(echo " $p " | sed "s/ postgresql-$m-pgtap / /")
	# whatever else the test harness needs inside the root, one per line,
	# "@MAJOR@" standing for the major
	if [ -f "$TOP/scripts/chroot/packages" ]; then
		p="$p $(sed -e 's/#.*//' -e "s/@MAJOR@/$m/g" "$TOP/scripts/chroot/packages" | tr -s ' \n' '  ')"
	fi
	echo $p
}

# The host's enabled "deb" sources, one "URI SUITE" line per suite, from the
# one-line sources.list files and the deb822 *.sources files
# (TS_MAJORS_APT_DIR instead of /etc/apt: for testing this).
host_apt_sources()
{
	local etc=${TS_MAJORS_APT_DIR:-/etc/apt} f
	{
		cat "$etc/sources.list" 2>/dev/null || true
		cat "$etc"/sources.list.d/*.list 2>/dev/null || true
	} | awk '
		$1 == "deb" {
			i = 2
			if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
			if (i + 1 <= NF) print $i, $(i + 1)
		}'
	for f in "$etc"/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		# one stanza per paragraph
		awk '
			function flush(   n, m, u, v, a, b) {
				if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no") {
					n = split(uris, u, " "); m = split(suites, v, " ")
					for (a = 1; a <= n; a++) for (b = 1; b <= m; b++) print u[a], v[b]
				}
				types = suites = uris = ""; enabled = "yes"
			}
			BEGIN { enabled = "yes" }
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { flush(); next }
			{
				key = tolower($1); $1 = ""; sub(/^ +/, "")
				if (key == "types:") types = $0
				else if (key == "suites:") suites = $0
				else if (key == "uris:") uris = $0
				else if (key == "enabled:") enabled = $0
			}
			END { flush() }' "$f"
	done
}

host_codename()
{
	(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
}

# The Debian mirror apt uses on this host: the first source whose suite is
# the host's own release (VERSION_CODENAME).  No built-in default: only a
# mirror this machine is configured with (and so can reach) is used.
detect_mirror()
{
	local uri codename
	if [ -n "${TS_MAJORS_MIRROR:-}" ]; then
		echo "$TS_MAJORS_MIRROR"
		return
	fi
	codename=$(host_codename)
	uri=$(host_apt_sources | awk -v c="$codename" '$2 == c && $1 ~ /^(https?|file):/ { print $1; exit }')
	[ -n "$uri" ] || ts_die "no Debian mirror for this host's release ('${codename:-unknown}') in ${TS_MAJORS_APT_DIR:-/etc/apt}/sources.list, sources.list.d/*.list or *.sources; configure apt (or set TS_MAJORS_MIRROR=URL)"
	echo "$uri"
}

# apt sources of a root: its suite from the mirror; a root of the host's own
# release also gets the host's other suites of it (-updates, -security), so
# that its PostgreSQL is the same minor release as the host's, which a
# package built on the host depends on.
root_sources()
{
	local suite=$1 mirror=$2
	echo "deb $mirror $suite main"
	[ "$suite" = "$(host_codename)" ] && [ -z "${TS_MAJORS_MIRROR:-}" ] &&
		host_apt_sources | awk -v c="$suite" '$2 ~ ("^" c "-") { print "deb " $1 " " $2 " main" }' | sort -u
	return 0
}

root_key()
{
	local m=$1 suite mirror
	suite=$(major_suite "$m")
	mirror=$(detect_mirror)
	echo "format=$ROOT_FORMAT major=$m suite=$suite mirror=$mirror packages=$(major_packages "$m")" \
		"sources=$(root_sources "$suite" "$mirror" | tr '\n' ';')"
}

root_dir()
{
	local m=$1 hash
	hash=$(root_key "$m" | sha256sum | cut -c1-12)
	echo "$CACHE/roots/pg$m-$(major_suite "$m")-$hash"
}

# A cached root is usable when its stamp matches and every package is
# installed and configured.
root_ok()
{
	local m=$1 root=$2 p st
	[ -f "$root/.timing_source-root" ] || return 1
	[ "$(cat "$root/.timing_source-root")" = "$(root_key "$m")" ] || return 1
	[ -x "$root/usr/lib/postgresql/$(major_pg "$m")/bin/pg_config" ] || return 1
	for p in $(major_packages "$m"); do
		st=$(chroot "$root" dpkg-query -W -f '${db:Status-Abbrev}' "$p" 2>/dev/null) || return 1
		[ "${st:0:2}" = "ii" ] || return 1
	done
	chroot "$root" "/usr/lib/postgresql/$(major_pg "$m")/bin/pg_config" --version >/dev/null 2>&1 || return 1
}

# ---------------------------------------------------------------------------
# namespace side: run a command in a root with /proc, /dev, /dev/shm mounted.
# Called as: majors.sh __inner MODE ROOTDIR LOWER RUNDIR -- CMD...
# MODE "direct": ROOTDIR is used as is (root being built);
# MODE "overlay": ROOTDIR becomes an overlay of LOWER with RUNDIR/upper on top.
# Runs as PID 1 of a new PID namespace in a private mount namespace.

INNER_MOUNTS=()

inner_cleanup()
{
	local rc=$? i mp
	trap - EXIT INT TERM ERR
	for ((i = ${#INNER_MOUNTS[@]} - 1; i >= 0; i--)); do
		mp=${INNER_MOUNTS[$i]}
		if findmnt -rn --mountpoint "$mp" >/dev/null 2>&1; then
			umount "$mp" 2>/dev/null || umount -l "$mp" || ts_log "warning: could not unmount $mp"
		fi
	done
	for mp in "${INNER_MOUNTS[@]}"; do
		if findmnt -rn --mountpoint "$mp" >/dev/null 2>&1; then
			ts_log "error: $mp still mounted"
			rc=3
		fi
	done
	exit $rc
}

inner_mount()
{
	local mp=${*: -1}
	mount "$@"
	INNER_MOUNTS+=("$mp")
}

inner_main()
{
	local mode=$1 root=$2 lower=$3 run=$4
	shift 4
	[ "$1" = "--" ] && shift
	trap inner_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM

	# belt and braces: nothing mounted here may propagate to the host
	mount --make-rprivate /
	if [ -n "${TS_INNER_NETNS:-}" ]; then
		ip link set lo up
	fi

	if [ "$mode" = overlay ]; then
		mkdir -p "$run/upper" "$run/work" "$root"
		if [ -z "${TS_MAJORS_NO_OVERLAY:-}" ] && mount -t overlay overlay \
			-o "lowerdir=$lower,upperdir=$run/upper,workdir=$run/work" "$root"; then
			INNER_MOUNTS+=("$root")
		else
			# e.g. /var/tmp itself on overlayfs: a plain copy is slower
			# but equivalent
			ts_log "overlay mount failed; copying the root instead"
			cp -a "$lower/." "$root/"
			cp -a "$run/upper/." "$root/"
		fi
	fi
	inner_mount -t proc proc "$root/proc"
	inner_mount --bind /dev "$root/dev"
	inner_mount -t tmpfs -o mode=1777,size=1g tmpfs "$root/dev/shm"
	# read-only /sys: the clock code reads the kernel's current_clocksource
	inner_mount --bind /sys "$root/sys"
	mount -o remount,bind,ro "$root/sys"
	if [ -n "${TS_INNER_CLOCKSOURCE:-}" ]; then
		# arm64 under qemu-user: see emulated_clocksource
		inner_mount --bind "$TS_INNER_CLOCKSOURCE" \
			"$root/sys/devices/system/clocksource/clocksource0/current_clocksource"
	fi
	if [ -n "${TS_INNER_SHARE:-}" ]; then
		mkdir -p "$root/build/share"
		inner_mount --bind "$TS_INNER_SHARE" "$root/build/share"
	fi
	if [ -f /etc/resolv.conf ]; then
		cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
	fi

	chroot "$root" /usr/bin/env -i \
		PATH="${TS_INNER_PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}" \
		HOME=/root LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=dumb \
		DEBIAN_FRONTEND=noninteractive CI="${CI:-}" TS_IN_MAJORS_ROOT=1 \
		${TS_INNER_SHARE:+TS_SHARE=/build/share} \
		${TS_INNER_CLOCKSOURCE:+TS_EMULATED=qemu-user} \
		"$@"
}

# Run CMD inside ROOT in fresh namespaces.  --kill-child makes the whole
# namespace (and so every mount and process in it) die with unshare.
in_namespace()
{
	unshare --mount --pid --fork --kill-child --propagation private \
		-- bash "$SELF" __inner "$@"
}

# ---------------------------------------------------------------------------
# prepare

configure_root()
{
	local m=$1 root=$2 suite=$3 mirror=$4
	root_sources "$suite" "$mirror" >"$root/etc/apt/sources.list"
	if [ "$m" = 19 ]; then
		# 19 is only in experimental; take just PostgreSQL from there
		echo "deb $mirror experimental main" >>"$root/etc/apt/sources.list"
		cat >"$root/etc/apt/preferences.d/pg19" <<EOF
Package: postgresql-19 postgresql-server-dev-19 postgresql-client-19 libpq5 libpq-dev postgresql-common postgresql-client-common postgresql-common-dev
Pin: release a=experimental
Pin-Priority: 500
EOF
	fi
	# a frozen mirror's Release files may be past their Valid-Until
	cat >"$root/etc/apt/apt.conf.d/90timing-source" <<EOF
Acquire::Check-Valid-Until "false";
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Dpkg::Use-Pty "false";
EOF
	# no documentation, manual pages or translations: smaller, faster
	cat >"$root/etc/dpkg/dpkg.cfg.d/90timing-source" <<EOF
path-exclude=/usr/share/doc/*
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
EOF
	# never start services inside the root, never create a default cluster
	printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
	chmod 755 "$root/usr/sbin/policy-rc.d"
	mkdir -p "$root/etc/postgresql-common"
	echo "create_main_cluster = false" >"$root/etc/postgresql-common/createcluster.conf"
}

prepare_one()
{
	local m=$1 suite mirror root tmp script t0 t1 t2 lockfd arch
	suite=$(major_suite "$m")
	arch=$(major_arch "$m")
	check_foreign_arch "$arch"
	mirror=$(detect_mirror)
	root=$(root_dir "$m")
	mkdir -p "$CACHE/roots" "$CACHE/locks"
	exec {lockfd}>"$CACHE/locks/pg$m.lock"
	flock "$lockfd"

	if root_ok "$m" "$root"; then
		ts_log "PostgreSQL $m: reusing cached root $root"
		# the stamp's age is the time since the root was last used
		touch "$root/.timing_source-root"
		exec {lockfd}>&-
		return 0
	fi
	[ -d "$root" ] && ts_log "PostgreSQL $m: cached root $root is incomplete or broken, rebuilding"

	command -v debootstrap >/dev/null || ts_die "debootstrap is not installed (apt-get install debootstrap)"
	tmp="$root.tmp"
	rm -rf "$root" "$tmp"

	# older debootstrap releases do not know newer suite names; sid's
	# script serves every current suite
	script=/usr/share/debootstrap/scripts/$suite
	[ -e "$script" ] || script=/usr/share/debootstrap/scripts/sid

	ts_log "PostgreSQL $m: debootstrap --variant=minbase $suite from $mirror"
	t0=$(now)
	if ! debootstrap --variant=minbase ${arch:+--arch="$arch"} "$suite" "$tmp" "$mirror" "$script" >"$CACHE/roots/pg$m.debootstrap.log" 2>&1; then
		tail -n 30 "$CACHE/roots/pg$m.debootstrap.log" >&2
		rm -rf "$tmp"
		ts_die "PostgreSQL $m: debootstrap failed (log: $CACHE/roots/pg$m.debootstrap.log)"
	fi
	t1=$(now)
	ts_log "PostgreSQL $m: debootstrap took $((t1 - t0)) s"

	configure_root "$m" "$tmp" "$suite" "$mirror"
	# shellcheck disable=SC2046
	if ! in_namespace direct "$tmp" - - -- /bin/sh -c \
		"apt-get -q update && apt-get -q -y install $(major_packages "$m") && apt-get clean" \
		>"$CACHE/roots/pg$m.install.log" 2>&1; then
		tail -n 30 "$CACHE/roots/pg$m.install.log" >&2
		rm -rf "$tmp"
		ts_die "PostgreSQL $m: package installation failed (log: $CACHE/roots/pg$m.install.log)"
	fi
	rm -rf "$tmp/var/lib/apt/lists/"*_Packages "$tmp/var/lib/apt/lists/"*_Translation-* 2>/dev/null || true
	t2=$(now)
	ts_log "PostgreSQL $m: package installation took $((t2 - t1)) s"

	root_key "$m" >"$tmp/.timing_source-root"
	mv "$tmp" "$root"
	root_ok "$m" "$root" || ts_die "PostgreSQL $m: freshly built root fails its checks"

	# Drop roots of this major built with another key (an old package list
	# etc.) once unused for a week: checkouts of other branches on this
	# machine may still be using theirs.
	for old in "$CACHE/roots/pg$m-$suite-"*; do
		[ -d "$old" ] && [ "$old" != "$root" ] || continue
		if [ -f "$old/.timing_source-root" ]; then
			[ -n "$(find "$old/.timing_source-root" -mtime +7)" ] && rm -rf "$old"
		else
			[ -n "$(find "$old" -maxdepth 0 -mtime +1)" ] && rm -rf "$old"
		fi
	done
	ts_log "PostgreSQL $m: root ready at $root ($(du -sh "$root" | cut -f1)), $((t2 - t0)) s"
	exec {lockfd}>&-
}

# ---------------------------------------------------------------------------
# test / run

RUNDIR=
CHILD=
TAILPID=

# Remove this run's directory, after checking that none of the run's mounts
# (which lived in the run's own namespace) leaked into ours.
cleanup_rundir()
{
	local mp leaked=0
	[ -n "$RUNDIR" ] && [ -d "$RUNDIR" ] || return 0
	while read -r mp; do
		[ -n "$mp" ] || continue
		ts_log "warning: $mp still mounted, unmounting"
		umount -l "$mp" || true
		leaked=1
	done < <(findmnt -rn -o TARGET | awk -v d="$RUNDIR/" 'index($0 "/", d) == 1' | sort -r)
	rm -rf "$RUNDIR"
	RUNDIR=
	return $leaked
}

outer_exit()
{
	local rc=$?
	trap - EXIT INT TERM HUP
	if [ -n "$CHILD" ]; then
		kill -TERM "$CHILD" 2>/dev/null || true
		wait "$CHILD" 2>/dev/null || true
	fi
	[ -n "$TAILPID" ] && kill "$TAILPID" 2>/dev/null || true
	cleanup_rundir || rc=3
	exit $rc
}

# Runs whose script was killed outright (SIGKILL) leave their directory;
# remove those whose processes are all gone.
sweep_stale_runs()
{
	local d p alive
	for d in /var/tmp/timing_source-majors.*; do
		[ -d "$d" ] || continue
		alive=0
		for p in $(cat "$d/pids" 2>/dev/null); do
			kill -0 "$p" 2>/dev/null && alive=1
		done
		[ $alive -eq 0 ] && ! findmnt -rn -o TARGET | grep -q "^$d/" && rm -rf "$d"
	done
	return 0
}

# run_in_copy MAJOR LOGFILE CMD...: fresh overlay of the cached root with the
# source tree at /build/timing_source; CMD runs there as root.
run_in_copy()
{
	local m=$1 logfile=$2 root lockfd rc netns try
	shift 2
	root=$(root_dir "$m")
	sweep_stale_runs
	RUNDIR=$(mktemp -d /var/tmp/timing_source-majors.XXXXXX)
	echo $$ >"$RUNDIR/pids"

	mkdir -p "$RUNDIR/upper/build/timing_source"
	ts_source_tar | tar -xf - -C "$RUNDIR/upper/build/timing_source"
	: >"$logfile"
	emulated_clocksource "$m"

	# Hold the major's lock shared for the whole run, so that nothing
	# rebuilds or removes the root under it.  Between prepare_one and here
	# another run may have rebuilt or removed it: then prepare it again.
	exec {lockfd}<"$CACHE/locks/pg$m.lock"
	flock -s "$lockfd"
	for try in 1 2 3; do
		root_ok "$m" "$root" && break
		exec {lockfd}>&-
		[ "$try" = 3 ] && ts_die "PostgreSQL $m: the cached root $root keeps disappearing (another run rebuilding it?)"
		ts_log "PostgreSQL $m: the cached root went away before the run; preparing it again"
		prepare_one "$m"
		exec {lockfd}<"$CACHE/locks/pg$m.lock"
		flock -s "$lockfd"
	done
	# Own network namespace (loopback only) where iproute2 is there to bring
	# its loopback up: the root's servers then cannot collide with ports in
	# use on the host, and the tests cannot reach out.
	netns=
	if command -v ip >/dev/null 2>&1; then
		netns=--net
	fi
	# in the background, so that a signal interrupts the wait below
	TS_INNER_SHARE=${TS_MAJORS_SHARE:+$(readlink -f "$TS_MAJORS_SHARE")} \
		TS_INNER_CLOCKSOURCE=$INNER_CLOCKSOURCE \
		TS_INNER_NETNS=${netns:+1} TS_INNER_PATH="/usr/lib/postgresql/$(major_pg "$m")/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
		timeout --signal=TERM --kill-after=30 "$TEST_TIMEOUT" \
		unshare --mount --pid --fork --kill-child --propagation private $netns \
		-- bash "$SELF" __inner overlay "$RUNDIR/root" "$root" "$RUNDIR" -- \
		/bin/sh -c 'cd /build/timing_source && exec "$@"' sh "$@" \
		>"$logfile" 2>&1 </dev/null &
	CHILD=$!
	echo "$CHILD" >>"$RUNDIR/pids"
	tail -n +1 -f --pid="$CHILD" "$logfile" &
	TAILPID=$!
	rc=0
	wait "$CHILD" || rc=$?
	CHILD=
	wait "$TAILPID" || true
	TAILPID=
	exec {lockfd}>&-
	cleanup_rundir || rc=3
	return "$rc"
}

test_one()
{
	local m=$1 logfile t0 t1 rc summary verdict pgver
	prepare_one "$m"
	logfile=$(mktemp /tmp/timing_source-majors-pg$m.XXXXXX.log)
	pgver=$(chroot "$(root_dir "$m")" "/usr/lib/postgresql/$(major_pg "$m")/bin/pg_config" --version 2>/dev/null) || pgver="PostgreSQL $m"
	ts_log "PostgreSQL $m: running 'bash scripts/test.sh $TEST_ARGS' in a fresh $(major_suite "$m") root ($pgver)"
	t0=$(now)
	rc=0
	# shellcheck disable=SC2086
	run_in_copy "$m" "$logfile" bash scripts/test.sh $TEST_ARGS || rc=$?
	t1=$(now)
	summary=$(grep -E '^([A-Za-z]+: )?[0-9]+ passed, [0-9]+ failed' "$logfile" | tail -n1 || true)
	rm -f "$logfile"
	if [ "$rc" -eq 0 ] && [ -n "$summary" ]; then
		verdict=PASS
	else
		verdict=FAIL
		[ -n "$summary" ] || summary="no summary line"
		[ "$rc" -eq 124 ] && summary="$summary; timed out after $TEST_TIMEOUT s"
	fi
	if [ -n "${TS_MAJORS_RESULTS:-}" ]; then
		# machine-readable: major verdict passed failed seconds skipped
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$m" "$verdict" \
			"$(echo "$summary" | sed -n 's/.*\b\([0-9][0-9]*\) passed.*/\1/p')" \
			"$(echo "$summary" | sed -n 's/.*\b\([0-9][0-9]*\) failed.*/\1/p')" \
			"$((t1 - t0))" \
			"$(echo "$summary" | sed -n 's/.*\b\([0-9][0-9]*\) skipped.*/\1/p')" >>"$TS_MAJORS_RESULTS"
	fi
	RESULTS+=("PostgreSQL $m ($pgver, Debian $(major_suite "$m")): $verdict ($summary; exit $rc) in $((t1 - t0)) s")
	[ "$verdict" = PASS ]
}

# ---------------------------------------------------------------------------

usage()
{
	sed -n '3,/^set -Eeuo/p' "$SELF" | sed -e '$d' -e 's/^# \{0,1\}//'
	exit 2
}

[ $# -ge 1 ] || usage
cmd=$1
shift

if [ "$cmd" = __inner ]; then
	inner_main "$@"
	exit $?
fi

# a signal stops the run: timeout passes it on to unshare, whose death
# kills the run's whole PID namespace (--kill-child)
trap outer_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

[ "$(id -u)" -eq 0 ] || ts_die "must run as root (debootstrap, chroot, mounts)"
[ -z "${TS_IN_MAJORS_ROOT:-}" ] || ts_die "already inside a majors root; refusing to nest"

case "$cmd" in
	prepare)
		[ $# -ge 1 ] || usage
		for m in "$@"; do
			prepare_one "$m"
		done
		;;
	test)
		[ $# -ge 1 ] || usage
		RESULTS=()
		passed=()
		failed=()
		for m in "$@"; do
			major_suite "$m" >/dev/null
			if test_one "$m"; then passed+=("$m"); else failed+=("$m"); fi
		done
		for r in "${RESULTS[@]}"; do
			echo "majors: $r"
		done
		echo "majors: passed: ${passed[*]:-none}; failed: ${failed[*]:-none}"
		[ ${#failed[@]} -eq 0 ]
		;;
	run)
		[ $# -ge 2 ] || usage
		m=$1
		shift
		prepare_one "$m"
		logfile=$(mktemp /tmp/timing_source-majors-run.XXXXXX.log)
		rc=0
		run_in_copy "$m" "$logfile" "$@" || rc=$?
		rm -f "$logfile"
		exit $rc
		;;
	clean)
		if [ $# -eq 0 ]; then
			rm -rf "$CACHE/roots"
		else
			for m in "$@"; do
				rm -rf "$CACHE/roots/pg$m-$(major_suite "$m")-"*
			done
		fi
		;;
	list)
		for m in 15 17 18 19 15-arm64; do
			echo "$m $(major_suite "$m"): $(major_packages "$m")"
		done
		;;
	*)
		usage
		;;
esac
