# scripts/lib.sh -- shell functions shared by main.sh, test.sh, bench.sh and
# majors.sh.
#
# Sourced, not run.  Everything here runs as root (it installs packages and
# the extension); servers and tests run as the unprivileged user $TS_USER.

TS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TS_USER=${TS_USER:-postgres}
# PG_CONFIG from the environment wins; otherwise ts_install_deps picks the
# installed major's own pg_config (not Debian's /usr/bin/pg_config, which
# follows the newest server-dev package installed).
TS_PG_CONFIG_GIVEN=${PG_CONFIG:-}
PG_CONFIG=${PG_CONFIG:-pg_config}

# The records of one kind in scripts/matrix, comments and blank lines
# removed, the kind itself dropped: ts_matrix target | config | absent | packages
TS_MATRIX=${TS_MATRIX:-$TS_ROOT/scripts/matrix}
ts_matrix() {
	sed -e 's/#.*//' "$TS_MATRIX" | awk -v k="$1" '$1 == k { $1 = ""; sub(/^ +/, ""); print }'
}

# Debian packages of one group in scripts/matrix for a major:
#   ts_packages GROUP [MAJOR]
TS_PG_MAJOR_DEFAULT=15
ts_packages() {
	ts_matrix packages | awk -v g="$1" -v m="${2:-$TS_PG_MAJOR_DEFAULT}" '
		$1 == g { for (i = 2; i <= NF; i++) { gsub(/@MAJOR@/, m, $i); print $i } }' | tr '\n' ' '
}

ts_log() { printf '\n==== %s\n' "$*" >&2; }

ts_die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# The major of the pg_config on PATH, or the default where there is none.
ts_path_major() {
	local v
	v=$(pg_config --version 2>/dev/null | sed -E 's/[^0-9]*([0-9]+).*/\1/')
	echo "${v:-$TS_PG_MAJOR_DEFAULT}"
}

# Install what is missing (apt-get update only when something is).
#   ts_install_deps MAJOR [EXTRA_PACKAGE...]
ts_install_deps() {
	local major=${1:-$TS_PG_MAJOR_DEFAULT} missing=() p
	[ "$(id -u)" = 0 ] || ts_die "run as root: it installs packages and the extension"
	[ $# -gt 0 ] && shift
	for p in $(ts_packages build "$major") "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		ts_log "installing ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		# not fatal: a server of one's own (PG_CONFIG=...) has no packages
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
			ts_log "warning: could not install ${missing[*]}"
	fi
	id "$TS_USER" >/dev/null 2>&1 || useradd --system --create-home "$TS_USER"
	if [ -z "$TS_PG_CONFIG_GIVEN" ] && [ -x "/usr/lib/postgresql/$major/bin/pg_config" ]; then
		PG_CONFIG=/usr/lib/postgresql/$major/bin/pg_config
	fi
	PG_BINDIR=$("$PG_CONFIG" --bindir)
	export PG_BINDIR
}

# Install the "optional" packages of a major that this machine's apt
# sources have and that are not installed yet (apt-get update only when one
# is missing); inside a root made by scripts/majors.sh they were installed,
# where the release has them, when the root was made.
#   ts_install_optional MAJOR
ts_install_optional() {
	local p missing=() have=()
	[ -n "${TS_IN_MAJORS_ROOT:-}" ] && return 0
	for p in $(ts_packages optional "$1"); do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	for p in "${missing[@]}"; do
		apt-cache show "$p" >/dev/null 2>&1 && have+=("$p")
	done
	[ ${#have[@]} -eq 0 ] && return 0
	ts_log "installing ${have[*]}"
	apt-get install -y -qq --no-install-recommends "${have[@]}" >/dev/null ||
		ts_log "warning: could not install ${have[*]}"
}

# Build with warnings as errors and install into the server's directories.
ts_build_install() {
	ts_log "building and installing timing_source ($("$PG_CONFIG" --version))"
	# chained: "make install" would otherwise rebuild what -Werror refused
	make -C "$TS_ROOT" -s clean PG_CONFIG="$PG_CONFIG" >/dev/null &&
		make -C "$TS_ROOT" -s PG_CONFIG="$PG_CONFIG" EXTRA_CFLAGS=-Werror &&
		make -C "$TS_ROOT" -s install PG_CONFIG="$PG_CONFIG" EXTRA_CFLAGS=-Werror >/dev/null
}

# Run a command as $TS_USER with the server's binaries first on PATH and
# the connection settings (and TIMING_SOURCE_DISABLE_TSC) passed through.
ts_as_user() {
	local envs=(PATH="$PG_BINDIR:$PATH" PG_CONFIG="$PG_CONFIG") v
	for v in PGHOST PGPORT PGUSER PGDATABASE TIMING_SOURCE_DISABLE_TSC TIMING_SOURCE_DISABLE_AVX2; do
		[ -n "${!v:-}" ] && envs+=("$v=${!v}")
	done
	runuser -u "$TS_USER" -- env "${envs[@]}" "$@"
}

# A private scratch directory owned by $TS_USER, removed by ts_cleanup.
ts_workdir() {
	TS_WORK=$(mktemp -d /tmp/timing_source.XXXXXX)
	chown "$TS_USER" "$TS_WORK"
	chmod 700 "$TS_WORK"
}

# The source tree as a tar on stdout: tracked files plus untracked files
# that are not ignored, as they are in the working tree now; outside git,
# everything but the build products.
ts_source_tar() {
	if git -C "$TS_ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		(cd "$TS_ROOT" && git ls-files -z -co --exclude-standard |
			while IFS= read -r -d '' f; do
				[ -e "$f" ] && printf '%s\0' "$f"
			done | tar --null -T - -cf -)
	else
		(cd "$TS_ROOT" && tar --exclude=.git --exclude='*.o' --exclude='*.so' \
			--exclude='*.bc' --exclude=results --exclude=tmp_check -cf - .)
	fi
}

# Copy the source tree into $TS_WORK/src for tests that write files
# (pg_regress results, tmp_check).
ts_copy_tree() {
	mkdir -p "$TS_WORK/src"
	ts_source_tar | tar -xf - -C "$TS_WORK/src"
	chown -R "$TS_USER" "$TS_WORK/src"
}

# Start a throw-away cluster in $TS_WORK/$1, socket only (no TCP), with
# the library preloaded.  Extra "name = value" settings on stdin.
# Port 55432, or $TS_CLUSTER_PORT (a second cluster).  Sets PGHOST, PGPORT,
# PGUSER for the caller.
ts_cluster_start() {
	local name=$1 dir="$TS_WORK/$1" extra
	extra=$(cat)
	mkdir -p "$dir/sock"
	chown -R "$TS_USER" "$dir"
	ts_as_user initdb -D "$dir/data" -U postgres -A trust --no-sync -E UTF8 \
		--locale=C >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; return 1; }
	cat >>"$dir/data/postgresql.conf" <<-EOF
		listen_addresses = ''
		port = ${TS_CLUSTER_PORT:-55432}
		unix_socket_directories = '$dir/sock'
		shared_preload_libraries = 'timing_source'
		fsync = off
		synchronous_commit = off
		full_page_writes = off
		shared_buffers = 256MB
		max_parallel_workers_per_gather = 2
		$extra
	EOF
	ts_as_user pg_ctl -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null 9>&- ||
		{ cat "$dir/server.log" >&2; return 1; }
	TS_CLUSTERS="${TS_CLUSTERS:-} $dir"
	export PGHOST="$dir/sock" PGPORT=${TS_CLUSTER_PORT:-55432} PGUSER=postgres
}

# Stop every cluster we started.
ts_cleanup_clusters() {
	local d
	for d in ${TS_CLUSTERS:-}; do
		[ -f "$d/data/postmaster.pid" ] &&
			ts_as_user pg_ctl -D "$d/data" -m immediate -w stop >/dev/null 2>&1
	done
	TS_CLUSTERS=
	return 0
}

# Stop the clusters and remove the scratch directory.  Used as an EXIT
# trap, so it runs on failure and interruption too.
ts_cleanup() {
	ts_cleanup_clusters
	[ -n "${TS_WORK:-}" ] && [ -d "$TS_WORK" ] && [ -z "${TS_KEEP_WORK:-}" ] && rm -rf "$TS_WORK"
	return 0
}

# psql as $TS_USER against the current cluster.
ts_psql() {
	ts_as_user psql -X -q -v ON_ERROR_STOP=1 "$@"
}
