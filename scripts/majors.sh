#!/bin/bash
#
# scripts/majors.sh -- run a command in a throw-away Debian root that has
# the PostgreSQL of one scripts/matrix target installed from Debian's own
# packages (debootstrap; emulated through qemu-user where the target's
# architecture is not the host's).
#
#   scripts/majors.sh run ID CMD...   run CMD as root in a fresh copy of the
#                                     root, the source tree as its working
#                                     directory (/build/timing_source)
#   scripts/majors.sh prepare ID...   create (or reuse) the cached root
#   scripts/majors.sh clean           remove every cached root
#
# ID is a target of scripts/matrix (its major, architecture and Debian
# release); the root gets its "build" and "test" packages.  The mirror is
# the one the host's apt uses for the host's own release (no built-in one;
# TS_MAJORS_MIRROR=URL overrides), and a root of the host's own release also
# gets the host's -updates and -security suites, so that its PostgreSQL is
# the host's minor release.  DEBIAN "SUITE+EXTRA" is a root of SUITE that
# takes PostgreSQL's own packages from EXTRA.
#
# Roots are cached under $TS_MAJORS_CACHE (default /var/cache/timing_source),
# keyed by everything they are made from.  A run never writes to the cached
# root: it runs on an overlay (a copy where overlayfs cannot be mounted, or
# with TS_MAJORS_NO_OVERLAY=1) in private mount and PID namespaces and, with
# iproute2, a loopback-only network namespace, so that every mount and
# process of the run ends with it.  The run sees /proc, /dev, a tmpfs
# /dev/shm and a read-only /sys, and the environment TS_IN_MAJORS_ROOT=1,
# CI, and TS_EMULATED=qemu-user when emulated.
#
#   TS_MAJORS_SHARE=DIR      DIR is bind-mounted read-write at /build/share,
#                            and TS_SHARE=/build/share is set
#   TS_MAJORS_BIND=SRC:DST   the host file SRC is bind-mounted over DST
#   TS_MAJORS_TIMEOUT=S      the run's time limit (default 2400 s)
#
# Host requirements (Debian 12): debootstrap, debian-archive-keyring,
# util-linux, iproute2; qemu-user-static and binfmt-support to emulate.
set -Eeuo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
. "$(dirname "$SELF")/lib.sh"
CACHE=${TS_MAJORS_CACHE:-/var/cache/timing_source}
TIMEOUT=${TS_MAJORS_TIMEOUT:-2400}
# bump when the way roots are made changes, so that old caches are not reused
ROOT_FORMAT=2

# target_get ID: sets MAJOR ARCH DEBIAN (SUITE+EXTRA) SUITE EXTRA for ID
target_get() {
	local id where
	read -r id MAJOR ARCH DEBIAN where _ < <(ts_matrix target | awk -v t="$1" '$1 == t') ||
		ts_die "no target '$1' in scripts/matrix (targets: $(ts_matrix target | awk '{ printf "%s ", $1 }'))"
	SUITE=${DEBIAN%%+*}
	EXTRA=
	[ "$SUITE" = "$DEBIAN" ] || EXTRA=${DEBIAN#*+}
}

emulated() {
	[ "$ARCH" != "$(dpkg --print-architecture)" ]
}

root_packages() {
	echo $(ts_packages build "$MAJOR") $(ts_packages test "$MAJOR")
}

# ---- the mirror and the apt sources --------------------------------------

host_codename() {
	(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
}

# the host's enabled "deb" sources as "URI SUITE" lines, from one-line
# sources.list files and deb822 *.sources files
host_apt_sources() {
	local f
	cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '
		$1 == "deb" {
			i = 2
			if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
			if (i + 1 <= NF) print $i, $(i + 1)
		}'
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
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

mirror() {
	local c=$(host_codename) uri
	[ -n "${TS_MAJORS_MIRROR:-}" ] && { echo "$TS_MAJORS_MIRROR"; return; }
	uri=$(host_apt_sources | awk -v c="$c" '$2 == c && $1 ~ /^(https?|file):/ { print $1; exit }')
	[ -n "$uri" ] || ts_die "no Debian mirror for this host's release ('${c:-unknown}') in /etc/apt; configure apt or set TS_MAJORS_MIRROR=URL"
	echo "$uri"
}

root_sources() {
	local m=$1
	echo "deb $m $SUITE main"
	[ -n "$EXTRA" ] && echo "deb $m $EXTRA main"
	if [ "$SUITE" = "$(host_codename)" ] && [ -z "${TS_MAJORS_MIRROR:-}" ]; then
		host_apt_sources | awk -v c="$SUITE" '$2 ~ ("^" c "-") { print "deb " $1 " " $2 " main" }' | sort -u
	fi
	return 0
}

root_dir() {
	local key
	key="format=$ROOT_FORMAT major=$MAJOR arch=$ARCH debian=$DEBIAN packages=$(root_packages) optional=$(ts_packages optional "$MAJOR") sources=$(root_sources "$(mirror)" | tr '\n' ';')"
	echo "$CACHE/roots/pg$MAJOR-$ARCH-$SUITE-$(echo "$key" | sha256sum | cut -c1-12)"
}

# ---- the namespace side ----------------------------------------------------
# majors.sh __inner MODE ROOT LOWER RUNDIR -- CMD...: PID 1 of a new PID
# namespace in a private mount namespace.  MODE direct: ROOT as it is (a
# root being made); overlay: ROOT becomes LOWER with RUNDIR/upper on top.

INNER_MOUNTS=()

inner_cleanup() {
	local rc=$? i
	trap - EXIT INT TERM ERR
	for ((i = ${#INNER_MOUNTS[@]} - 1; i >= 0; i--)); do
		umount "${INNER_MOUNTS[$i]}" 2>/dev/null || umount -l "${INNER_MOUNTS[$i]}" || rc=3
	done
	exit $rc
}

inner_mount() {
	mount "$@"
	INNER_MOUNTS+=("${*: -1}")
}

inner_main() {
	local mode=$1 root=$2 lower=$3 run=$4
	shift 5
	trap inner_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	mount --make-rprivate /
	[ -n "${TS_INNER_NETNS:-}" ] && ip link set lo up
	if [ "$mode" = overlay ]; then
		mkdir -p "$run/upper" "$run/work" "$root"
		if [ -z "${TS_MAJORS_NO_OVERLAY:-}" ] && mount -t overlay overlay \
			-o "lowerdir=$lower,upperdir=$run/upper,workdir=$run/work" "$root"; then
			INNER_MOUNTS+=("$root")
		else
			ts_log "no overlay mount here; copying the root instead"
			cp -a "$lower/." "$root/"
			cp -a "$run/upper/." "$root/"
		fi
	fi
	inner_mount -t proc proc "$root/proc"
	inner_mount --bind /dev "$root/dev"
	inner_mount -t tmpfs -o mode=1777,size=1g tmpfs "$root/dev/shm"
	inner_mount --bind /sys "$root/sys"
	mount -o remount,bind,ro "$root/sys"
	if [ -n "${TS_INNER_BIND:-}" ]; then
		inner_mount --bind "${TS_INNER_BIND%%:*}" "$root${TS_INNER_BIND#*:}"
	fi
	if [ -n "${TS_INNER_SHARE:-}" ]; then
		mkdir -p "$root/build/share"
		inner_mount --bind "$TS_INNER_SHARE" "$root/build/share"
	fi
	cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
	chroot "$root" /usr/bin/env -i \
		PATH="${TS_INNER_PATH:-/usr/sbin:/usr/bin:/sbin:/bin}" \
		HOME=/root LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=dumb \
		DEBIAN_FRONTEND=noninteractive CI="${CI:-}" TS_IN_MAJORS_ROOT=1 \
		${TS_INNER_SHARE:+TS_SHARE=/build/share} \
		${TS_INNER_EMULATED:+TS_EMULATED=qemu-user} \
		"$@"
}

# ---- prepare ---------------------------------------------------------------

check_emulation() {
	local f=/proc/sys/fs/binfmt_misc/qemu-aarch64
	emulated || return 0
	[ "$ARCH" = arm64 ] || ts_die "no emulation set up for $ARCH"
	[ -e /proc/sys/fs/binfmt_misc/status ] ||
		mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null ||
		ts_die "binfmt_misc is not mounted and cannot be"
	[ -e "$f" ] || update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
	[ -e "$f" ] || ts_die "no qemu-aarch64 entry in binfmt_misc (apt-get install qemu-user-static binfmt-support)"
	grep -qx enabled "$f" || ts_die "the qemu-aarch64 binfmt_misc entry is disabled"
	# F: the interpreter is opened at registration, so it works in a chroot
	grep -q '^flags:.*F' "$f" || ts_die "the qemu-aarch64 binfmt_misc entry lacks flag F"
}

root_ok() {
	local root=$1 p
	[ -f "$root/.timing_source-root" ] || return 1
	for p in $(root_packages); do
		[ "$(chroot "$root" dpkg-query -W -f '${db:Status-Abbrev}' "$p" 2>/dev/null | cut -c1-2)" = ii ] || return 1
	done
	chroot "$root" "/usr/lib/postgresql/$MAJOR/bin/pg_config" --version >/dev/null 2>&1
}

configure_root() {
	local tmp=$1 p
	root_sources "$(mirror)" >"$tmp/etc/apt/sources.list"
	if [ -n "$EXTRA" ]; then
		p="postgresql-$MAJOR postgresql-server-dev-$MAJOR postgresql-client-$MAJOR libpq5 libpq-dev"
		p="$p postgresql-common postgresql-client-common postgresql-common-dev"
		printf 'Package: %s\nPin: release a=%s\nPin-Priority: 500\n' "$p" "$EXTRA" \
			>"$tmp/etc/apt/preferences.d/postgresql"
	fi
	# a frozen mirror's Release files may be past their Valid-Until
	printf '%s\n' 'Acquire::Check-Valid-Until "false";' 'APT::Install-Recommends "false";' \
		'APT::Install-Suggests "false";' 'Dpkg::Use-Pty "false";' >"$tmp/etc/apt/apt.conf.d/90timing-source"
	printf 'path-exclude=/usr/share/%s/*\n' doc man info locale >"$tmp/etc/dpkg/dpkg.cfg.d/90timing-source"
	# no services started, no default cluster created
	printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
	chmod 755 "$tmp/usr/sbin/policy-rc.d"
	mkdir -p "$tmp/etc/postgresql-common"
	echo "create_main_cluster = false" >"$tmp/etc/postgresql-common/createcluster.conf"
}

# prepare_root ID: ROOT is the ready cached root; a shared lock on it is
# held on fd LOCKFD until the script ends, so that nothing rebuilds it
# under a run
prepare_root() {
	local tmp script t0 log
	target_get "$1"
	check_emulation
	ROOT=$(root_dir)
	mkdir -p "$CACHE/roots" "$CACHE/locks"
	exec {LOCKFD}>"$CACHE/locks/$(basename "$ROOT").lock"
	flock "$LOCKFD"
	if root_ok "$ROOT"; then
		touch "$ROOT/.timing_source-root"
	else
		command -v debootstrap >/dev/null || ts_die "debootstrap is not installed"
		tmp=$ROOT.tmp log=$CACHE/roots/$(basename "$ROOT").log
		rm -rf "$ROOT" "$tmp"
		# older debootstrap releases lack newer suite names; sid's script serves all
		script=/usr/share/debootstrap/scripts/$SUITE
		[ -e "$script" ] || script=/usr/share/debootstrap/scripts/sid
		ts_log "target $1: debootstrap --arch=$ARCH $SUITE, then PostgreSQL $MAJOR"
		t0=$(date +%s)
		if ! debootstrap --variant=minbase --arch="$ARCH" "$SUITE" "$tmp" "$(mirror)" "$script" >"$log" 2>&1 ||
			! configure_root "$tmp" ||
			! unshare --mount --pid --fork --kill-child --propagation private \
				-- bash "$SELF" __inner direct "$tmp" - - -- /bin/sh -c \
				"apt-get -q update && apt-get -q -y install $(root_packages) &&
				for p in $(ts_packages optional "$MAJOR"); do
					if apt-cache show \$p >/dev/null 2>&1; then apt-get -q -y install \$p || exit 1;
					else echo \"not in this release: \$p\"; fi
				done && apt-get clean" >>"$log" 2>&1; then
			tail -n 30 "$log" >&2
			rm -rf "$tmp"
			ts_die "target $1: making the root failed (log: $log)"
		fi
		rm -rf "$tmp/var/lib/apt/lists/"*_Packages 2>/dev/null || true
		: >"$tmp/.timing_source-root"
		mv "$tmp" "$ROOT"
		root_ok "$ROOT" || ts_die "target $1: the new root fails its checks"
		ts_log "target $1: root ready in $(($(date +%s) - t0)) s at $ROOT"
	fi
	flock -s "$LOCKFD"
}

# ---- run -------------------------------------------------------------------

RUNDIR= CHILD=

outer_exit() {
	local rc=$? mp
	trap - EXIT INT TERM HUP
	if [ -n "$CHILD" ]; then
		kill -TERM "$CHILD" 2>/dev/null || true
		wait "$CHILD" 2>/dev/null || true
	fi
	if [ -n "$RUNDIR" ] && [ -d "$RUNDIR" ]; then
		# the run's mounts lived in its own namespace: none may be left here
		while read -r mp; do
			[ -n "$mp" ] || continue
			ts_log "warning: $mp still mounted, unmounting"
			umount -l "$mp" || true
			rc=3
		done < <(findmnt -rn -o TARGET | awk -v d="$RUNDIR/" 'index($0 "/", d) == 1' | sort -r)
		rm -rf "$RUNDIR"
	fi
	exit $rc
}

run() {
	local netns= rc=0 d p alive
	prepare_root "$1"
	shift
	# runs killed outright leave their directory behind: remove those
	# whose processes ("pids", one a line, as every version of this script
	# writes them) are all gone; a live run's mounts are in its own
	# namespace, so findmnt here cannot tell
	for d in /var/tmp/timing_source-majors.*; do
		[ -f "$d/pids" ] || continue
		alive=0
		for p in $(cat "$d/pids"); do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && ! findmnt -rn -o TARGET | grep -q "^$d/" && rm -rf "$d"
	done
	RUNDIR=$(mktemp -d /var/tmp/timing_source-majors.XXXXXX)
	echo $$ >"$RUNDIR/pids"
	mkdir -p "$RUNDIR/upper/build/timing_source"
	ts_source_tar | tar -xf - -C "$RUNDIR/upper/build/timing_source"
	command -v ip >/dev/null 2>&1 && netns=--net
	# in the background, so that a signal interrupts the wait
	TS_INNER_SHARE=${TS_MAJORS_SHARE:+$(readlink -f "$TS_MAJORS_SHARE")} \
		TS_INNER_BIND=${TS_MAJORS_BIND:-} TS_INNER_NETNS=${netns:+1} \
		TS_INNER_EMULATED=$(emulated && echo 1) \
		TS_INNER_PATH="/usr/lib/postgresql/$MAJOR/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
		timeout --signal=TERM --kill-after=30 "$TIMEOUT" \
		unshare --mount --pid --fork --kill-child --propagation private $netns \
		-- bash "$SELF" __inner overlay "$RUNDIR/root" "$ROOT" "$RUNDIR" -- \
		/bin/sh -c 'cd /build/timing_source && exec "$@"' sh "$@" </dev/null &
	CHILD=$!
	wait "$CHILD" || rc=$?
	CHILD=
	[ "$rc" = 124 ] && ts_log "the run timed out after $TIMEOUT s"
	return "$rc"
}

usage() {
	sed -n '3,/^set -Eeuo/p' "$SELF" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 2
}

[ $# -ge 1 ] || usage
cmd=$1
shift
if [ "$cmd" = __inner ]; then
	inner_main "$@"
	exit
fi
trap outer_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
[ "$(id -u)" -eq 0 ] || ts_die "must run as root (debootstrap, chroot, mounts)"
[ -z "${TS_IN_MAJORS_ROOT:-}" ] || ts_die "already inside a root; refusing to nest"
case $cmd in
	run) [ $# -ge 2 ] || usage; run "$@" ;;
	prepare) for t in "$@"; do prepare_root "$t"; exec {LOCKFD}>&-; done ;;
	clean) rm -rf "$CACHE/roots" ;;
	*) usage ;;
esac
