#!/usr/bin/env bash
# scripts/bench.sh -- EXPLAIN ANALYZE overhead: TSC vs system clock, lean
# row counting, buffer accounting, sampled timing, and always-on auto_explain.
#
#   scripts/bench.sh [--short] [--reps N] [--csv DIR] [--no-pgbench]
#                    [--tpch | --tpch-only] [--tpch-scale S] [--tpch-rounds N] [--tpch-no-subtract]
#                    [--track | --no-track] [--track-proxy] [--track-every N] [--track-secs S] [--track-rounds N]
#                    [--pgbench-scale S] [--huge-pages]
#
# Without PGHOST/PGPORT in the environment (a fresh Debian machine, as
# root): installs the dependencies, builds and installs the extension,
# starts a throw-away cluster with the library preloaded, benchmarks, and
# stops the cluster again (scripts/lib.sh does the set-up).  With PGHOST or
# PGPORT set: benchmarks that server (the library must be preloaded, or
# loadable with LOAD by the connecting user; the pgbench part needs it
# preloaded and a superuser).
#
# Builds the seed workload in database ts_bench (kept between runs): a
# 100,000-row and a 5,000,000-row table (VACUUM FREEZE), and two 1,000-row
# tables for a nested loop.  Then for each query runs interleaved rounds of
#   plain      the query itself
#   off        EXPLAIN (ANALYZE, TIMING OFF, BUFFERS OFF), system source:
#              core's row counting, as stock PostgreSQL
#   lean       the same under the TSC source: timing_source's clock-less
#              row counting
#   system     EXPLAIN (ANALYZE, BUFFERS OFF), system clock
#   tsc        EXPLAIN (ANALYZE, BUFFERS OFF), TSC
#   sys+buf    EXPLAIN (ANALYZE, BUFFERS ON), system clock
#   tsc+buf    EXPLAIN (ANALYZE, BUFFERS ON), TSC (18's default EXPLAIN ANALYZE)
#   tsc/64     EXPLAIN (ANALYZE, BUFFERS OFF), TSC, timing_source.sample_every = 64
#   sys/64     the same under the system clock (where the build's wrappers
#              sample: every x86-64 and arm64 build)
# (without a usable TSC: plain, off, system, sys+buf and sys/64), rotating
# the order in every round.  Every variant is timed the same way: psql's
# client-side time of the whole statement (planning and the tiny
# EXPLAIN output included), so ratios to the plain query are fair.  It
# prints the medians, their ratios, and the cost of one clock read,
# (T - T_off) / (2 x rows through timed nodes).
#
# Then, in rounds of their own (also on 19, with the wrappers on):
# plain, sampled 1 in 64 without BUFFERS (s64), with BUFFERS and exact
# usage (s64+buf, the default), and with timing_source.sample_buffers
# (s64+est: scan nodes estimate usage from their sampled calls; where the
# server accepts it, 18 and later), and s64+est with
# timing_source.sample_budget = 4096 (s64+bgt), their medians and ratios
# to plain.
#
# The accuracy of sampled and of exact timing, under the TSC where it is
# usable, else under the system clock (where the wrappers sample): per
# query, the same EXPLAIN (ANALYZE, FORMAT JSON) exactly timed, with
# sample_every = 64, with TIMING OFF ("untimed": its Execution Time is the
# query without clock reads) and, three times a round, with
# sample_every = 256 ("ref"), interleaved.  For every plan node its total
# time (Actual Total Time x Actual Loops): medians for exact and sampled,
# the mean for ref.  References that do not carry exact timing's cost: the
# untimed Execution Time for the top node, the ref mean for the others
# (unbiased, its clock reads 1/256 of exact timing's).  Printed: the top
# node's exact, sampled and ref totals over untimed, and the largest
# deviation of sampled and of exact from the reference among nodes whose
# reference is >= 1 ms; where timing_source.subtract_overhead exists, the
# same for exact timing with it on ("subtracted"), its top node also
# paired by round (each round's over the same round's untimed run, the
# median of those: "pd").  Then the reference
# itself is checked: one scan under parents of growing per-row work (and
# alone), every mode's figure of the scan; a figure that grows with the
# parent's work counts part of it.
#
# With its own cluster, on x86-64 with AVX2 and the TSC usable: buffer
# usage kept by the wide (AVX2) wrappers against plain copies.  A second
# server, started with TIMING_SOURCE_DISABLE_AVX2, gets the same tables;
# rounds alternate the servers.  Each says at DEBUG2 how its nodes keep
# buffer usage; the table gives tsc, tsc+buf, lean and lean+buf on both,
# the cost of BUFFERS on each (t+buf/tsc, l+buf/lean), and the wide
# server's cost over the plain one's (w:p; two servers differ a little
# even without BUFFERS, so their times are not compared directly).
#
# Then pgbench -S (prepared statements, one client) with auto_explain
# instrumenting every query (log_analyze and log_timing on,
# log_min_duration far above any query, so nothing is logged): transactions
# per second with no auto_explain, and with it under the system clock and
# the TSC, interleaved.
#
# PostgreSQL 19 and later (core owns timing_clock_source and times nodes
# with its own TSC): the variants compare core's own instrumentation with
# the extension's wrappers, both on core's clock as core chose it
# (timing_clock_source is left alone), interleaved the same way:
#   plain      the query itself
#   core       EXPLAIN (ANALYZE, BUFFERS OFF), timing_source.node_wrappers off
#   ext        the same, node_wrappers on
#   core+buf   EXPLAIN (ANALYZE, BUFFERS ON), off    ext+buf   ... on
#   coreoff    EXPLAIN (ANALYZE, TIMING OFF, BUFFERS OFF), off
#   extoff     the same, on
#   coreoff+buf / extoff+buf   TIMING OFF with BUFFERS ON
#   ext/64     EXPLAIN (ANALYZE, BUFFERS OFF), on, sample_every = 64
# and prints the medians and the ratios extension/core (below 1: the
# extension's path is cheaper).  No pgbench part on 19.
#
# --tpch: also the TPC-H-shaped accuracy run (scripts/tpch/, after the
# rest); --tpch-only: only that (no seed tables, no pgbench).  22 analytic
# queries over eight tables generated in SQL (--tpch-scale S, default 0.05:
# a lineitem of 300,000 rows; kept in schema tpch of ts_bench, rebuilt when
# the generator or the scale changes), each in --tpch-rounds N (default
# 10, 4 with --short) interleaved rounds of plain, untimed, exact, exact
# with timing_source.subtract_overhead (left out with --tpch-no-subtract;
# otherwise the run stops if the setting does not exist), sampled 1 in 64
# and three runs at 1 in 128 (the reference), the per-node figures read with
# timing_source_explain_nodes().  For every node of >= 1 ms by reference:
# each mode's error, the sampled 95% interval's coverage, the shares of the
# plan, the overhead of each mode over plain, per query and overall, with
# the targets and the nodes that miss them; CSV in
# bench/results/bench-<time>-tpch-nodes.csv and -tpch-queries.csv.
# Parallel query is off for it.  On 15-18 it times with the TSC where the
# session can use it, else with the system clock (the report names which);
# a build without the wrappers (not x86-64 or arm64) cannot sample, and the
# run says so and stops.
#
# Tracking (scripts/track/overhead.sh), after the rest where the server
# has timing_source.track_nodes (a note and nothing else where it has not;
# --no-track leaves it out); --track: only that (the seed tables and
# pgbench's, and an error where the setting is missing).  On one server,
# interleaved, timing_source.track_nodes = top against none: pgbench -S
# and the TPC-B-like script (prepared, one client; --track-secs S seconds
# a run, default 5, 2 with --short; --track-rounds N rounds, default 5, 3
# with --short) and every bench query ($reps rounds), under the TSC and
# the system clock on 15-18, core's clock on 19; ratios top/none against
# the targets (tps >= 0.98, time <= 1.05), and a sweep of
# timing_source.track_sample_every (16, 64, 256, 1024) over the queries
# naming the smallest rate that meets the target.  --track-proxy:
# auto_explain with timing_source.sample_every instead of tracking (the
# instrumentation without the statistics).  --track-every N: the tracked
# runs count the nodes of 1 in N executions (timing_source.track_every,
# the opt-in alternative).  CSV in
# bench/results/bench-<time>-track.csv and -track-summary.csv.
# --pgbench-scale S: the scale pgbench's tables are built with (default
# 10; rebuilt when it differs).  BENCH_PIN=1: pin a running local server
# (PGHOST/PGPORT) and pgbench to CPU 0 for the pgbench parts, as the
# script does with its own cluster (see pin_start).
#
# --huge-pages: the throw-away cluster maps its shared memory in huge
# pages (huge_pages = on): reserves enough of them with the
# vm.nr_hugepages sysctl for the run and gives them back at its end (as
# root, without PGHOST/PGPORT).  Without them each new process (every
# parallel worker, every new session) faults in the shared buffers it
# touches a 4 kB page at a time, which on a virtual machine costs a
# parallel plan tens of milliseconds (docs/benchmark.md).  The CPU line
# says which kind of page the server's shared memory uses.
#
# --short (or BENCH_SHORT=1): 3 rounds instead of 7, and shorter pgbench
# runs, for the main job.  The CPU model heads the output and is in every
# CSV row: bench/results/bench-<time>.csv (every run),
# bench/results/bench-<time>-summary.csv, bench/results/bench-<time>-sampled.csv,
# bench/results/bench-<time>-usage.csv, bench/results/bench-<time>-pgbench.csv,
# bench/results/bench-<time>-sampled-buffers.csv (and -runs.csv).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
reps=${BENCH_REPS:-7}
pgb_secs=5 pgb_rounds=3
[ -n "${BENCH_SHORT:-}" ] && reps=3 pgb_secs=3 pgb_rounds=1
csvdir="$ROOT/bench/results"
do_pgbench=1
do_tpch=0 tpch_scale=0.05 tpch_subtract=1 tpch_rounds=
do_track=1 track_secs='' track_rounds='' pgb_scale=10
short=0
[ -n "${BENCH_SHORT:-}" ] && short=1
huge=0

while [ $# -gt 0 ]; do
	case $1 in
		--short) reps=3 pgb_secs=3 pgb_rounds=1 short=1 ;;
		--tpch) do_tpch=1 ;;
		--tpch-only) do_tpch=2 ;;
		--tpch-scale) tpch_scale=$2; shift ;;
		--tpch-rounds) tpch_rounds=$2; shift ;;
		--tpch-no-subtract) tpch_subtract=0 ;;
		--reps) reps=$2; shift ;;
		--csv) csvdir=$2; shift ;;
		--no-pgbench) do_pgbench=0 ;;
		--track) do_track=2 ;;
		--no-track) do_track=0 ;;
		--track-proxy) export TRACK_PROXY=1 ;;
		--track-every) export TRACK_EVERY=$2; shift ;;
		--track-secs) track_secs=$2; shift ;;
		--track-rounds) track_rounds=$2; shift ;;
		--pgbench-scale) pgb_scale=$2; shift ;;
		--huge-pages) huge=1 ;;
		-h|--help) sed -n '2,/^set -euo pipefail/{/^set /!p}' "$0"; exit 0 ;;
		*) echo "unknown argument: $1" >&2; exit 2 ;;
	esac
	shift
done
case $reps in
	''|*[!0-9]*|0) echo "--reps needs a positive number" >&2; exit 2 ;;
esac
[ "$huge" = 1 ] && { [ -n "${PGHOST:-}" ] || [ -n "${PGPORT:-}" ]; } &&
	{ echo "--huge-pages is for the script's own cluster: unset PGHOST and PGPORT, or configure huge pages on the server" >&2; exit 2; }
# the TPC-H run: 10 rounds, 4 with --short
[ -n "$tpch_rounds" ] || { tpch_rounds=10; [ "$short" = 1 ] && tpch_rounds=4; }
case $tpch_rounds in
	''|*[!0-9]*|0) echo "--tpch-rounds needs a positive number" >&2; exit 2 ;;
esac
# tracking's pgbench runs: 5 s x 5 rounds, 2 s x 3 with --short
[ -n "$track_secs" ] || { track_secs=5; [ "$short" = 1 ] && track_secs=2; }
[ -n "$track_rounds" ] || { track_rounds=5; [ "$short" = 1 ] && track_rounds=3; }
for v in "$track_secs" "$track_rounds" "$pgb_scale"; do
	case $v in
		''|*[!0-9]*|0) echo "--track-secs, --track-rounds and --pgbench-scale need a positive number" >&2; exit 2 ;;
	esac
done
[[ $tpch_scale =~ ^(0|[1-9][0-9]*)?(\.[0-9]+)?$ ]] && awk -v s="$tpch_scale" 'BEGIN { exit !(s > 0 && s <= 10) }' ||
	{ echo "--tpch-scale needs a number above 0, at most 10" >&2; exit 2; }

# --huge-pages: enough huge pages for the cluster's shared memory
# (shared_buffers, 256MB in scripts/lib.sh, and the rest, with room), on
# top of those already reserved; the old count comes back at the end.
huge_old=
reserve_huge_pages() {
	local kb need have
	kb=$(awk '/^Hugepagesize:/ { print $2 }' /proc/meminfo)
	[ -n "$kb" ] && [ "$kb" -gt 0 ] && [ -w /proc/sys/vm/nr_hugepages ] ||
		ts_die "--huge-pages: this kernel offers no huge pages to reserve (as root, vm.nr_hugepages)"
	huge_old=$(cat /proc/sys/vm/nr_hugepages)
	need=$(( (400 * 1024 + kb - 1) / kb ))
	echo $((huge_old + need)) >/proc/sys/vm/nr_hugepages
	have=$(cat /proc/sys/vm/nr_hugepages)
	[ "$have" -ge $((huge_old + need)) ] ||
		ts_die "--huge-pages: the kernel reserved $((have - huge_old)) of the $need huge pages of $kb kB needed (memory too fragmented or too small)"
}
release_huge_pages() {
	[ -n "$huge_old" ] && echo "$huge_old" >/proc/sys/vm/nr_hugepages
	return 0
}

# ---- set-up of a throw-away cluster when no server is given ----
if [ -z "${PGHOST:-}" ] && [ -z "${PGPORT:-}" ]; then
	[ -f "$ROOT/scripts/lib.sh" ] || {
		echo "scripts/lib.sh is missing: set PGHOST/PGPORT to benchmark a running server" >&2
		exit 1
	}
	. "$ROOT/scripts/lib.sh"
	# 19's pgTAP is not packaged: go on with what is installed
	ts_install_deps "$(ts_path_major)" ||
		echo "note: not every dependency could be installed; going on" >&2
	# installs go to the server's shared directories: one at a time
	exec 9>/tmp/timing_source-install.lock
	flock 9
	ts_build_install
	ts_workdir
	trap ts_cleanup EXIT
	trap 'exit 130' INT TERM
	huge_conf=
	if [ "$huge" = 1 ]; then
		# before reserving: a reservation that fails part-way gives back
		# what it got too
		trap 'ts_cleanup; release_huge_pages' EXIT
		reserve_huge_pages
		huge_conf='huge_pages = on'
	fi
	ts_cluster_start bench <<-EOF
		jit = off
		max_worker_processes = 8
		max_parallel_workers = 4
		$huge_conf
	EOF
	PSQL=(ts_as_user psql)
	ts_log "benchmark ($reps rounds per variant)"
else
	PSQL=(psql)
fi

psql_db() {
	"${PSQL[@]}" -X -q -v ON_ERROR_STOP=1 "$@"
}

# ---- seed workload ----
export PGDATABASE=ts_bench

table_rows() {
	if [ "$(psql_db -At -c "SELECT to_regclass('$1') IS NOT NULL")" = t ]; then
		psql_db -At -c "SELECT count(*) FROM $1"
	else
		echo -1
	fi
}

seed() {
	local name=$1 rows=$2 sql=$3
	if [ "$(table_rows "$name")" != "$rows" ]; then
		echo "creating $name ($rows rows)" >&2
		psql_db -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS $name" -c "$sql" -c "VACUUM (FREEZE, ANALYZE) $name"
	fi
}

# the database ts_bench and its tables, on the server PGHOST/PGPORT name
seed_workload() {
	if [ "$(psql_db -At -d postgres -c "SELECT count(*) FROM pg_database WHERE datname = 'ts_bench'")" = 0 ]; then
		psql_db -d postgres -c 'CREATE DATABASE ts_bench'
	fi
	# the TPC-H run alone needs none of the seed tables
	[ "$do_tpch" = 2 ] && return 0
	seed t100k 100000 'CREATE TABLE t100k AS SELECT g AS id FROM generate_series(1, 100000) g'
	seed t 5000000 'CREATE TABLE t AS SELECT g AS id FROM generate_series(1, 5000000) g'
	seed nl_outer 1000 'CREATE TABLE nl_outer AS SELECT g AS id FROM generate_series(1, 1000) g'
	seed nl_inner 1000 'CREATE TABLE nl_inner AS SELECT g AS id FROM generate_series(1, 1000) g'
}
seed_workload

cpu=$(sed -nE 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -1)
cpu=${cpu:-$(uname -m)}
ncpu=$(nproc 2>/dev/null || echo '?')
pgver=$(psql_db -At -c 'SHOW server_version')
pgnum=$(psql_db -At -c 'SHOW server_version_num')
clocksrc=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)
# what the server's shared memory is mapped with: huge_pages_status (17
# and later) says; before, only huge_pages = on is sure of it
hugepg=$(psql_db -At -c "SELECT coalesce(current_setting('huge_pages_status', true),
		CASE current_setting('huge_pages') WHEN 'on' THEN 'on' WHEN 'off' THEN 'off' ELSE 'unknown (huge_pages = try)' END)")
hugepg="huge pages $hugepg"
stamp=$(date -u +%Y%m%d-%H%M%S)

# samp_clock SETUP: on 15-18, the clock the extension's sampled timing
# runs on in a session of this server: "tsc" where the session can use the
# TSC, else "system" where the wrappers sample under the system clock (a
# build that reads a counter: x86-64, arm64), else nothing (a build for
# another CPU has no wrappers there, and core times every call).  Creates
# the extension in ts_bench for timing_source_tsc()'s reason.
samp_clock() {
	local reason
	if psql_db -At >/dev/null 2>&1 <<<"$1
SET timing_clock_source = 'tsc';"; then
		echo tsc
		return 0
	fi
	reason=$(psql_db -qAt -c 'SET client_min_messages = warning' -c 'CREATE EXTENSION IF NOT EXISTS timing_source' \
		-c 'ALTER EXTENSION timing_source UPDATE' -c "SELECT coalesce(reason_unusable, '') FROM timing_source_tsc()") ||
		return 0
	case $reason in
		'This build of timing_source is not for x86-64 or arm64'*) ;;
		*) echo system ;;
	esac
}

# "TSC" or "system clock", for headings
clock_name() { [ "$1" = tsc ] && echo TSC || echo 'system clock'; }

# ---- the TPC-H-shaped accuracy run (scripts/tpch/) ----
# On 15-18 it runs on the clock sampled timing uses (samp_clock); on 19
# the wrappers (node_wrappers on) on core's clock.
tpch_section() {
	local tsetup clock_sql src
	. "$ROOT/scripts/tpch/accuracy.sh"
	if [ "$pgnum" -ge 190000 ]; then
		tsetup="SET jit = off;
SELECT current_setting('timing_source.node_wrappers', true) IS NULL AS need_load \\gset
\\if :need_load
LOAD 'timing_source';
\\endif"
		clock_sql="SET timing_source.node_wrappers = on;"
		tpch_clock="core's clock (timing_clock_source: $(psql_db -At -c 'SHOW timing_clock_source'))"
	else
		tsetup="SET jit = off;
SELECT current_setting('timing_clock_source', true) IS NULL AS need_load \\gset
\\if :need_load
LOAD 'timing_source';
\\endif"
		src=$(samp_clock "$tsetup")
		if [ -z "$src" ]; then
			echo "TPC-H accuracy run: sampled timing needs the node wrappers, which this build of timing_source does not have on PostgreSQL $pgver (not x86-64 or arm64); not run" >&2
			return 1
		fi
		[ "$src" = tsc ] ||
			echo "TPC-H accuracy run: the TSC is not usable on this machine; every mode times with the system clock" >&2
		clock_sql="SET timing_clock_source = '$src';"
		tpch_clock="the $(clock_name "$src")"
	fi
	psql_db -c 'SET client_min_messages = warning' -c 'CREATE EXTENSION IF NOT EXISTS timing_source' \
		-c 'ALTER EXTENSION timing_source UPDATE'
	tpch_load "$tpch_scale"
	setup_sql=$tsetup tpch_run "$tpch_rounds" "$tpch_subtract" "$clock_sql"
}

if [ "$do_tpch" = 2 ]; then
	tpch_section
	exit $?
fi

# min and median of numbers on stdin
min_median() {
	sort -g | awk '{ a[NR] = $1 }
		END { if (NR == 0) { print "", ""; exit }
			  m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
			  printf "%.3f %.3f\n", a[1], m }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print ""; else printf "%.2f", a / b }'; }
# (a / b) / (c / d): one ratio over another
ratio2() { awk -v a="$1" -v b="$2" -v c="$3" -v d="$4" 'BEGIN { if (a == "" || b == "" || c == "" || d == "" || b == 0 || c == 0) print ""; else printf "%.2f", (a / b) / (c / d) }'; }

# print "variant round ms" for every measured statement of a psql log
parse_times() {
	awk '
		/^@@ / { v = $2; r = $3; done = 0; next }
		done || v == "" { next }
		/^Time: / { print v, r, $2; done = 1; next }
	'
}

# set_medians TIMES VARIANT...: from "variant round ms" lines, set md[VARIANT]
# (an associative array of the caller's) to each variant's median
set_medians() {
	local times=$1 v
	shift
	for v in "$@"; do
		read -r _ md[$v] < <(awk -v v="$v" '$1 == v { print $3 }' <<<"$times" | min_median)
	done
}

# run_rounds NAME SCRIPT VARIANT...: run a psql script of measured
# statements, append each one's time to the raw CSV, and set md[VARIANT]
# (an associative array of the caller's) to each variant's median
run_rounds() {
	local name=$1 script=$2 log times v r ms
	shift 2
	log=$(psql_db -A <<<"$script" 2>&1)
	times=$(parse_times <<<"$log")
	while read -r v r ms; do
		echo "\"$cpu\",\"$pgver\",\"$name\",$v,$r,$ms" >>"$raw_csv"
	done <<<"$times"
	set_medians "$times" "$@"
}

# name|session settings|query
queries=(
	"count(*) 100k|SET max_parallel_workers_per_gather = 0;|SELECT count(*) FROM t100k"
	"count(*) 5M|SET max_parallel_workers_per_gather = 0;|SELECT count(*) FROM t"
	"LIMIT 1 OFFSET 5M|SET max_parallel_workers_per_gather = 0;|SELECT * FROM t LIMIT 1 OFFSET 5000000"
	"nested loop 1M inner|SET max_parallel_workers_per_gather = 0; SET enable_hashjoin = off; SET enable_mergejoin = off;|SELECT count(*) FROM nl_outer o JOIN nl_inner i ON i.id <> o.id"
	"parallel count(*) 5M|SET max_parallel_workers_per_gather = 2; SET parallel_leader_participation = on;|SELECT count(*) FROM t"
)

# ---- pgbench: the binary, its tables, and pinning ----
pgbench_bin=
[ -n "${PG_BINDIR:-}" ] && [ -x "$PG_BINDIR/pgbench" ] && pgbench_bin="$PG_BINDIR/pgbench"
[ -n "$pgbench_bin" ] || pgbench_bin=$(command -v pgbench || true)
[ -n "$pgbench_bin" ] && [ -x "$pgbench_bin" ] || pgbench_bin=
pin=() pinned=
pgb() { "${PSQL[@]:0:${#PSQL[@]}-1}" "${pin[@]}" "$pgbench_bin" "$@"; }
# pgbench's tables at --pgbench-scale (the branches are as many as the scale)
pgb_init() {
	local have=
	[ "$(psql_db -At -c "SELECT to_regclass('pgbench_branches') IS NOT NULL")" = t ] &&
		have=$(psql_db -At -c 'SELECT count(*) FROM pgbench_branches')
	if [ "$have" != "$pgb_scale" ]; then
		echo "initializing pgbench tables (scale $pgb_scale)" >&2
		pgb -i -q -s "$pgb_scale" ts_bench >/dev/null 2>&1
	fi
}
# One client's round trips: on a virtual machine whose idle vCPUs halt,
# a client and a backend on different CPUs wait for each other's
# wake-up (measured here: 17,000 tps instead of 64,000, every mode
# alike), which hides what the instrumentation costs.  With its own
# cluster (or, with BENCH_PIN=1, a local server whose data directory it
# can read) the script puts the server and pgbench on one CPU for the
# pgbench parts (pin_start, pin_end).
pin_start() {
	local pidfile=
	pin=() pinned=
	if [ -n "${TS_WORK:-}" ]; then
		pidfile=$TS_WORK/bench/data/postmaster.pid
	elif [ "${BENCH_PIN:-}" = 1 ]; then
		pidfile=$(psql_db -At -c 'SHOW data_directory')/postmaster.pid
	fi
	if [ -n "$pidfile" ] && [ -f "$pidfile" ] && command -v taskset >/dev/null; then
		pm_pid=$(head -1 "$pidfile")
		if taskset -a -p -c 0 "$pm_pid" >/dev/null 2>&1; then
			pin=(taskset -c 0) pinned=1
			echo "pgbench part: server and client pinned to CPU 0" >&2
		fi
	fi
}
pin_end() {
	[ -n "$pinned" ] && taskset -a -p -c "0-$(($(nproc) - 1))" "$pm_pid" >/dev/null 2>&1
	pin=()
	return 0
}

# ---- tracking (scripts/track/overhead.sh) ----
. "$ROOT/scripts/track/overhead.sh"
# the part of a whole run: left out, with a note, where the server has no tracking
track_part() {
	[ "$do_track" = 1 ] || return 0
	track_section || echo "(tracking benchmark not run)" >&2
	return 0
}
if [ "$do_track" = 2 ]; then
	track_section
	exit $?
fi

# ---- PostgreSQL 19+: core's instrumentation vs the extension's wrappers ----
bench19() {
	local setup19 entry name settings query script v r n k
	local -a variants19=(plain core ext corebuf extbuf coreoff extoff coreoffbuf extoffbuf ext64)
	local -a rows=()
	local raw_csv="$csvdir/bench-$stamp.csv" sum_csv="$csvdir/bench-$stamp-summary.csv"
	local clock
	setup19="SET jit = off;
SELECT current_setting('timing_source.node_wrappers', true) IS NULL AS need_load \\gset
\\if :need_load
LOAD 'timing_source';
\\endif"
	clock=$(psql_db -At -c 'SHOW timing_clock_source')
	echo
	echo "CPU: $cpu ($ncpu CPUs), clocksource $clocksrc; PostgreSQL $pgver, timing_clock_source $clock, $hugepg; $reps rounds per variant"
	mkdir -p "$csvdir"
	echo "cpu,postgresql,query,variant,round,ms" >"$raw_csv"
	echo "cpu,postgresql,query,plain,core,ext,corebuf,extbuf,coreoff,extoff,coreoffbuf,extoffbuf,ext64,ext_core,extbuf_corebuf,extoff_coreoff,extoffbuf_coreoffbuf,ext64_core" >"$sum_csv"
	for entry in "${queries[@]}"; do
		IFS='|' read -r name settings query <<<"$entry"
		script=$(
			echo "$setup19"
			echo "$settings"
			echo "\\o /dev/null"
			echo "$query;"
			echo "\\timing on"
			n=${#variants19[@]}
			for ((r = 1; r <= reps; r++)); do
				for ((k = 0; k < n; k++)); do
					v=${variants19[$(((k + r) % n))]}
					case $v in
						core*) echo "SET timing_source.node_wrappers = off;" ;;
						*) echo "SET timing_source.node_wrappers = on;" ;;
					esac
					case $v in
						ext64) echo "SET timing_source.sample_every = 64;" ;;
						*) echo "SET timing_source.sample_every = 1;" ;;
					esac
					echo "\\echo @@ $v $r"
					case $v in
						plain) echo "$query;" ;;
						core | ext | ext64) echo "EXPLAIN (ANALYZE, BUFFERS OFF) $query;" ;;
						corebuf | extbuf) echo "EXPLAIN (ANALYZE, BUFFERS ON) $query;" ;;
						coreoff | extoff) echo "EXPLAIN (ANALYZE, TIMING OFF, BUFFERS OFF) $query;" ;;
						coreoffbuf | extoffbuf) echo "EXPLAIN (ANALYZE, TIMING OFF, BUFFERS ON) $query;" ;;
					esac
				done
			done
			echo "\\o"
		)
		declare -A md=()
		run_rounds "$name" "$script" "${variants19[@]}"
		rows+=("$(printf '%-22s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s | %6s %6s %6s %6s %6s' "$name" \
			"${md[plain]}" "${md[core]}" "${md[ext]}" "${md[corebuf]}" "${md[extbuf]}" \
			"${md[coreoff]}" "${md[extoff]}" "${md[coreoffbuf]}" "${md[extoffbuf]}" "${md[ext64]}" \
			"$(ratio "${md[ext]}" "${md[core]}")" "$(ratio "${md[extbuf]}" "${md[corebuf]}")" \
			"$(ratio "${md[extoff]}" "${md[coreoff]}")" "$(ratio "${md[extoffbuf]}" "${md[coreoffbuf]}")" \
			"$(ratio "${md[ext64]}" "${md[core]}")")")
		echo "\"$cpu\",\"$pgver\",\"$name\",${md[plain]},${md[core]},${md[ext]},${md[corebuf]},${md[extbuf]},${md[coreoff]},${md[extoff]},${md[coreoffbuf]},${md[extoffbuf]},${md[ext64]},$(ratio "${md[ext]}" "${md[core]}"),$(ratio "${md[extbuf]}" "${md[corebuf]}"),$(ratio "${md[extoff]}" "${md[coreoff]}"),$(ratio "${md[extoffbuf]}" "${md[coreoffbuf]}"),$(ratio "${md[ext64]}" "${md[core]}")" >>"$sum_csv"
		unset md
	done
	echo
	echo "Medians in ms, client-side time of the whole statement; core = timing_source.node_wrappers off, ext = on;"
	echo "ratios extension/core of the medians (below 1: the extension's path is cheaper):"
	printf '%-22s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s | %6s %6s %6s %6s %6s\n' query plain core ext core+buf ext+buf coreoff extoff 'coff+buf' 'eoff+buf' 'ext/64' \
		exact +buf off off+buf '/64'
	printf '%s\n' "${rows[@]}"
	echo
	echo "rounds per variant: $reps; ext/64 is compared with core's exact timing"
	setup19_sb=$setup19
	echo "CSV: $raw_csv"
	echo "     $sum_csv"
}

# ---- sampled timing with BUFFERS (18's default EXPLAIN ANALYZE) ----
# sampled_buffers SETUP CLOCK_SQL: interleaved rounds of plain, sampled
# (1 in 64) without BUFFERS, with BUFFERS and exact usage (the default),
# with timing_source.sample_buffers (usage estimated from the sampled
# calls; where the server accepts the setting, 18 and later), and the same
# with timing_source.sample_budget = 4096 as well (s64bgt: a long node's
# timed calls thinned; usage exact where sample_buffers is refused), each
# query in a session of its own; prints the medians and their ratios to
# plain.
sampled_buffers() {
	local setup=$1 clock_sql=$2 entry name settings query script r k n v est=1
	local -a sbv=(plain s64 s64buf s64est s64bgt)
	local sb_csv="$csvdir/bench-$stamp-sampled-buffers.csv" raw_csv="$csvdir/bench-$stamp-sampled-buffers-runs.csv"
	local -a rows=()
	psql_db -At >/dev/null 2>&1 <<<"$setup
$clock_sql
SET timing_source.sample_buffers = on;" || { est=0; sbv=(plain s64 s64buf s64bgt); }
	echo "cpu,postgresql,query,variant,round,ms" >"$raw_csv"
	echo "cpu,postgresql,query,plain,s64,s64buf,s64est,s64bgt,s64_plain,s64buf_plain,s64est_plain,s64bgt_plain" >"$sb_csv"
	for entry in "${queries[@]}"; do
		IFS='|' read -r name settings query <<<"$entry"
		script=$(
			echo "$setup"
			echo "$settings"
			echo "$clock_sql"
			echo "\\o /dev/null"
			echo "$query;"
			echo "\\timing on"
			n=${#sbv[@]}
			for ((r = 1; r <= reps; r++)); do
				for ((k = 0; k < n; k++)); do
					v=${sbv[$(((k + r) % n))]}
					case $v in
						plain) echo "SET timing_source.sample_every = 1;" ;;
						*) echo "SET timing_source.sample_every = 64;" ;;
					esac
					[ "$est" = 1 ] && case $v in
						s64est | s64bgt) echo "SET timing_source.sample_buffers = on;" ;;
						*) echo "SET timing_source.sample_buffers = off;" ;;
					esac
					case $v in
						s64bgt) echo "SET timing_source.sample_budget = 4096;" ;;
						*) echo "SET timing_source.sample_budget = 0;" ;;
					esac
					echo "\\echo @@ $v $r"
					case $v in
						plain) echo "$query;" ;;
						s64) echo "EXPLAIN (ANALYZE, BUFFERS OFF) $query;" ;;
						*) echo "EXPLAIN (ANALYZE, BUFFERS ON) $query;" ;;
					esac
				done
			done
			echo "\\o"
		)
		declare -A md=()
		run_rounds "$name" "$script" "${sbv[@]}"
		rows+=("$(printf '%-22s %8s %8s %8s %8s %8s | %8s %8s %8s %8s' "$name" \
			"${md[plain]}" "${md[s64]}" "${md[s64buf]}" "${md[s64est]:-}" "${md[s64bgt]}" \
			"$(ratio "${md[s64]}" "${md[plain]}")" "$(ratio "${md[s64buf]}" "${md[plain]}")" \
			"$(ratio "${md[s64est]:-}" "${md[plain]}")" "$(ratio "${md[s64bgt]}" "${md[plain]}")")")
		echo "\"$cpu\",\"$pgver\",\"$name\",${md[plain]},${md[s64]},${md[s64buf]},${md[s64est]:-},${md[s64bgt]},$(ratio "${md[s64]}" "${md[plain]}"),$(ratio "${md[s64buf]}" "${md[plain]}"),$(ratio "${md[s64est]:-}" "${md[plain]}"),$(ratio "${md[s64bgt]}" "${md[plain]}")" >>"$sb_csv"
		unset md
	done
	echo
	echo "Sampled timing (1 in 64) with BUFFERS: exact usage (the default), timing_source.sample_buffers"
	echo "(usage estimated from the sampled calls$([ "$est" = 1 ] || echo '; not accepted by this server, empty')) and that with"
	echo "timing_source.sample_budget = 4096 (s64+bgt$([ "$est" = 1 ] || echo ', usage exact')); medians in ms of $reps rounds, ratios to plain:"
	printf '%-22s %8s %8s %8s %8s %8s | %8s %8s %8s %8s\n' query plain s64 's64+buf' 's64+est' 's64+bgt' 's64/' 's64+buf/' 's64+est/' 's64+bgt/'
	printf '%-22s %8s %8s %8s %8s %8s | %8s %8s %8s %8s\n' '' '' '' '' '' '' plain plain plain plain
	printf '%s\n' "${rows[@]}"
	echo "CSV: $sb_csv"
	echo "     $raw_csv"
}

if [ "$pgnum" -ge 190000 ]; then
	bench19
	sampled_buffers "$setup19_sb" "SET timing_source.node_wrappers = on;"
	track_part
	# a machine without the TSC gets the note and the rest of the bench
	[ "$do_tpch" = 1 ] && { tpch_section || true; }
	exit 0
fi

# The session's settings: library loaded, TSC usable?
setup_sql="SET jit = off;
SELECT current_setting('timing_clock_source', true) IS NULL AS need_load \\gset
\\if :need_load
LOAD 'timing_source';
\\endif"
tsc_ok=$(psql_db -At <<-EOF
	$setup_sql
	SELECT CASE WHEN set_config('timing_clock_source', 'system', false) IS NOT NULL
	       THEN 'loaded' END;
EOF
)
[ "$tsc_ok" = loaded ] || { echo "timing_source cannot be loaded" >&2; exit 1; }
# sampled timing's clock: the TSC, else the system clock, else none
samp_src=$(samp_clock "$setup_sql")
if [ "$samp_src" = tsc ]; then
	tsc_ok=1
else
	tsc_ok=0
	echo "note: the TSC is not usable on this machine; tsc columns are empty" >&2
	[ -n "$samp_src" ] ||
		echo "note: this build of timing_source has no node wrappers here (not x86-64 or arm64), so nothing samples; sys/64 is empty" >&2
fi


echo
echo "CPU: $cpu ($ncpu CPUs), clocksource $clocksrc; PostgreSQL $pgver, $hugepg; $reps rounds per variant"

variants=(plain off lean system tsc sysbuf tscbuf tsc64 sys64)
[ "$tsc_ok" = 1 ] || variants=(plain off system sysbuf sys64)
[ -n "$samp_src" ] || variants=(plain off system sysbuf)

mkdir -p "$csvdir"
raw_csv="$csvdir/bench-$stamp.csv"
sum_csv="$csvdir/bench-$stamp-summary.csv"
pgb_csv="$csvdir/bench-$stamp-pgbench.csv"
acc_csv="$csvdir/bench-$stamp-sampled.csv"
echo "cpu,postgresql,query,variant,round,ms" >"$raw_csv"
echo "cpu,postgresql,query,timed_rows,plain,off,lean,system,tsc,sysbuf,tscbuf,tsc64,off_plain,lean_plain,tsc_plain,tsc_lean,sys_tsc,tscbuf_tsc,sysbuf_tscbuf,tsc64_lean,tsc64_plain,ns_per_read_system,ns_per_read_tsc,sys64,sys64_plain" >"$sum_csv"

# one measured statement of a variant: its settings first, then a marker
# line, then the statement, whose client-side time is taken
statement() {
	local variant=$1 round=$2 query=$3 src=system opts="ANALYZE, BUFFERS OFF" every=1
	case $variant in
		plain) opts= ;;
		off) opts="ANALYZE, TIMING OFF, BUFFERS OFF" ;;
		lean) src=tsc opts="ANALYZE, TIMING OFF, BUFFERS OFF" ;;
		system) ;;
		tsc) src=tsc ;;
		sysbuf) opts="ANALYZE, BUFFERS ON" ;;
		tscbuf) src=tsc opts="ANALYZE, BUFFERS ON" ;;
		tsc64) src=tsc every=64 ;;
		sys64) every=64 ;;
	esac
	echo "SET timing_clock_source = '$src';"
	echo "SET timing_source.sample_every = $every;"
	echo "\\echo @@ $variant $round"
	if [ -n "$opts" ]; then
		echo "EXPLAIN ($opts) $query;"
	else
		echo "$query;"
	fi
}



per_read() { awk -v t="$1" -v o="$2" -v n="$3" 'BEGIN { if (t == "" || o == "" || n == 0) print ""; else printf "%.1f", (t - o) * 1e6 / (2 * n) }'; }

declare -a table1 table2
for entry in "${queries[@]}"; do
	IFS='|' read -r name settings query <<<"$entry"

	# rows through timed nodes: sum of rows x loops over the plan
	timed_rows=$(psql_db -At <<-EOF
		$setup_sql
		$settings
		CREATE FUNCTION pg_temp.rows_through(q text) RETURNS numeric LANGUAGE plpgsql AS \$\$
		DECLARE d jsonb;
		BEGIN
			EXECUTE 'EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) ' || q INTO d;
			RETURN (SELECT sum((p ->> 'Actual Rows')::numeric * (p ->> 'Actual Loops')::numeric)
					FROM jsonb_path_query(d, 'strict \$.**?(exists(@."Actual Loops"))') AS p);
		END \$\$;
		SELECT pg_temp.rows_through(\$q\$$query\$q\$);
	EOF
	)

	# warm-up, then interleaved rounds, the order rotating every round
	script=$(
		echo "$setup_sql"
		echo "$settings"
		echo "\\o /dev/null"
		echo "$query;"
		echo "\\timing on"
		for ((r = 1; r <= reps; r++)); do
			n=${#variants[@]}
			for ((k = 0; k < n; k++)); do
				statement "${variants[$(((k + r) % n))]}" "$r" "$query"
			done
		done
		echo "\\o"
	)
	declare -A md=()
	run_rounds "$name" "$script" plain off lean system tsc sysbuf tscbuf tsc64 sys64
	off_plain=$(ratio "${md[off]}" "${md[plain]}")
	lean_plain=$(ratio "${md[lean]}" "${md[plain]}")
	tsc_plain=$(ratio "${md[tsc]}" "${md[plain]}")
	tsc_lean=$(ratio "${md[tsc]}" "${md[lean]}")
	sys_tsc=$(ratio "${md[system]}" "${md[tsc]}")
	tscbuf_tsc=$(ratio "${md[tscbuf]}" "${md[tsc]}")
	sysbuf_tscbuf=$(ratio "${md[sysbuf]}" "${md[tscbuf]}")
	tsc64_lean=$(ratio "${md[tsc64]}" "${md[lean]}")
	tsc64_plain=$(ratio "${md[tsc64]}" "${md[plain]}")
	sys64_plain=$(ratio "${md[sys64]}" "${md[plain]}")
	ns_sys=$(per_read "${md[system]}" "${md[off]}" "$timed_rows")
	ns_tsc=$(per_read "${md[tsc]}" "${md[lean]}" "$timed_rows")

	table1+=("$(printf '%-22s %10s %8s %8s %8s %8s %8s %8s %8s %8s %8s' "$name" "$timed_rows" \
		"${md[plain]}" "${md[off]}" "${md[lean]}" "${md[system]}" "${md[tsc]}" \
		"${md[sysbuf]}" "${md[tscbuf]}" "${md[tsc64]}" "${md[sys64]}")")
	table2+=("$(printf '%-22s %9s %9s %9s %8s %8s %9s %9s %9s %9s %9s %7s %7s' "$name" \
		"$off_plain" "$lean_plain" "$tsc_plain" "$tsc_lean" "$sys_tsc" "$tscbuf_tsc" \
		"$sysbuf_tscbuf" "$tsc64_lean" "$tsc64_plain" "$sys64_plain" "$ns_sys" "$ns_tsc")")
	echo "\"$cpu\",\"$pgver\",\"$name\",$timed_rows,${md[plain]},${md[off]},${md[lean]},${md[system]},${md[tsc]},${md[sysbuf]},${md[tscbuf]},${md[tsc64]},$off_plain,$lean_plain,$tsc_plain,$tsc_lean,$sys_tsc,$tscbuf_tsc,$sysbuf_tscbuf,$tsc64_lean,$tsc64_plain,$ns_sys,$ns_tsc,${md[sys64]},$sys64_plain" >>"$sum_csv"
	unset md
done

echo
echo "Medians in ms, client-side time of the whole statement:"
printf '%-22s %10s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n' query timed_rows plain off lean system tsc 'sys+buf' 'tsc+buf' 'tsc/64' 'sys/64'
printf '%s\n' "${table1[@]}"
echo
echo "Ratios of the medians (off = core's TIMING OFF, lean = timing_source's), and ns per clock read:"
printf '%-22s %9s %9s %9s %8s %8s %9s %9s %9s %9s %9s %7s %7s\n' query off/plain lean/plain tsc/plain tsc/lean sys/tsc 'tsc+buf/' 'sys+buf/' 'tsc64/' 'tsc64/' 'sys64/' ns/read ns/read
printf '%-22s %9s %9s %9s %8s %8s %9s %9s %9s %9s %9s %7s %7s\n' '' '' '' '' '' '' tsc 'tsc+buf' lean plain plain system tsc
printf '%s\n' "${table2[@]}"

[ -n "$samp_src" ] && sampled_buffers "$setup_sql" "SET timing_clock_source = '$samp_src';"

# ---- accuracy of sampled timing (1 in 64) and of exact timing, against
# references that carry no exact timing's cost ----
# Per plan node (in plan order, which is the same in every run of a
# query): total time = Actual Total Time x Actual Loops.  Rounds
# interleave exact, sampled (1 in 64), untimed (TIMING OFF), exact with
# timing_source.subtract_overhead on (where the setting exists) and three
# reference runs sampled at 1 in 256.  References: the untimed Execution
# Time (median) for the top node; for the others the mean of the reference
# runs, an unbiased estimate (calls chosen at random, each counting 256
# times) whose clock reads cost 1/256 of exact timing's.
if [ -n "$samp_src" ]; then
	# exact with overhead subtracted: where the setting exists (the
	# wrappers that sample time exact plans too, with either clock)
	can_sub=false
	[ "$(psql_db -At -c "SELECT current_setting('timing_source.subtract_overhead', true) IS NOT NULL")" = t ] &&
		can_sub=true
	echo "cpu,postgresql,query,nodes,top_exact_over_untimed,top_sampled_over_untimed,top_ref_over_untimed,worst_node_sampled_vs_ref_pct,worst_node_exact_vs_ref_pct,nodes_over_1ms,top_subtracted_over_untimed,worst_node_subtracted_vs_ref_pct,top_subtracted_over_untimed_paired" >"$acc_csv"
	declare -a table3
	for entry in "${queries[@]}"; do
		IFS='|' read -r name settings query <<<"$entry"
		acc=$(psql_db -At -F ' ' <<-EOF
			$setup_sql
			$settings
			SET timing_clock_source = '$samp_src';
			CREATE FUNCTION pg_temp.node_totals(q text, every int) RETURNS float8[] LANGUAGE plpgsql AS \$\$
			DECLARE d jsonb;
			BEGIN
				-- every = 0: TIMING OFF, and only the Execution Time;
				-- every = -1: exact, with the estimated timing cost subtracted
				PERFORM set_config('timing_source.sample_every', greatest(every, 1)::text, false);
				IF $can_sub THEN
					PERFORM set_config('timing_source.subtract_overhead', (every < 0)::text, false);
				END IF;
				IF every = 0 THEN
					EXECUTE 'EXPLAIN (ANALYZE, TIMING OFF, BUFFERS OFF, FORMAT JSON) ' || q INTO d;
					RETURN ARRAY[(d -> 0 ->> 'Execution Time')::float8];
				END IF;
				EXECUTE 'EXPLAIN (ANALYZE, BUFFERS OFF, FORMAT JSON) ' || q INTO d;
				RETURN ARRAY(SELECT (p ->> 'Actual Total Time')::float8 * (p ->> 'Actual Loops')::float8
							   FROM jsonb_path_query(d, 'strict \$.**?(exists(@."Actual Loops"))') AS p);
			END \$\$;
			CREATE TEMP TABLE runs (r int, every int, totals float8[]);
			SELECT pg_temp.node_totals(\$q\$$query\$q\$, 1) IS NOT NULL AS warm \gset
			DO \$\$
			DECLARE
				-- the subtracted mode only where the setting exists (its
				-- column is empty otherwise)
				order_ int[] := CASE WHEN $can_sub
								THEN ARRAY[1, 64, 0, 256, -1, 256, 256] ELSE ARRAY[1, 64, 0, 256, 256, 256] END;
				n int := cardinality(order_);
			BEGIN
				FOR r IN 1..$reps LOOP
					FOR k IN 0..n - 1 LOOP
						INSERT INTO runs SELECT r, order_[1 + (k + r) % n], pg_temp.node_totals(\$q\$$query\$q\$, order_[1 + (k + r) % n]);
					END LOOP;
				END LOOP;
			END \$\$;
			WITH per_node AS (
				SELECT n, percentile_cont(0.5) WITHIN GROUP (ORDER BY t) FILTER (WHERE every = 1) AS exact,
						  percentile_cont(0.5) WITHIN GROUP (ORDER BY t) FILTER (WHERE every = 64) AS sampled,
						  avg(t) FILTER (WHERE every = 256) AS ref_mean,
						  percentile_cont(0.5) WITHIN GROUP (ORDER BY t) FILTER (WHERE every = -1) AS subtracted
				  FROM runs, unnest(totals) WITH ORDINALITY AS u(t, n)
				 WHERE every <> 0
				 GROUP BY n),
			untimed AS (
				SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY totals[1]) AS ms FROM runs WHERE every = 0),
			-- each round's subtracted top node over the same round's
			-- untimed run: what the machine's slow and fast phases,
			-- which the medians of separate runs can straddle, leave alone
			paired AS (
				SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY s.totals[1] / u.totals[1]) AS ratio
				  FROM runs s JOIN runs u USING (r)
				 WHERE s.every = -1 AND u.every = 0),
			ref AS (
				SELECT n, exact, sampled, ref_mean, subtracted,
					   CASE WHEN n = 1 THEN (SELECT ms FROM untimed) ELSE ref_mean END AS reference
				  FROM per_node)
			SELECT count(*),
				   to_char(max(exact / reference) FILTER (WHERE n = 1), 'FM0.000'),
				   to_char(max(sampled / reference) FILTER (WHERE n = 1), 'FM0.000'),
				   to_char(max(ref_mean / reference) FILTER (WHERE n = 1), 'FM0.000'),
				   to_char(coalesce(max(abs(sampled / reference - 1) * 100) FILTER (WHERE reference >= 1), 0), 'FM990.0'),
				   to_char(coalesce(max(abs(exact / reference - 1) * 100) FILTER (WHERE reference >= 1), 0), 'FM990.0'),
				   count(*) FILTER (WHERE reference >= 1),
				   coalesce(to_char(max(subtracted / reference) FILTER (WHERE n = 1), 'FM0.000'), '-'),
				   coalesce(to_char(max(abs(subtracted / reference - 1) * 100) FILTER (WHERE reference >= 1), 'FM990.0'), '-'),
				   coalesce((SELECT to_char(ratio, 'FM0.000') FROM paired), '-')
			  FROM ref;
		EOF
		)
		read -r nodes exact_untimed samp_untimed ref_untimed worst_s worst_e big sub_untimed worst_sub sub_paired <<<"$acc"
		table3+=("$(printf '%-22s %6s %12s %12s %12s %12s %12s %12s %12s %12s %10s' "$name" "$nodes" "$exact_untimed" \
			"$sub_untimed" "$sub_paired" "$samp_untimed" "$ref_untimed" "$worst_s" "$worst_e" "$worst_sub" "$big")")
		echo "\"$cpu\",\"$pgver\",\"$name\",$nodes,$exact_untimed,$samp_untimed,$ref_untimed,$worst_s,$worst_e,$big,${sub_untimed/#-/},${worst_sub/#-/},${sub_paired/#-/}" >>"$acc_csv"
	done
	echo
	echo "Sampled (1 in 64) and exact timing, $(clock_name "$samp_src"), against references without exact timing's cost, per-node total time,"
	echo "medians of $reps runs each; untimed = Execution Time under TIMING OFF (the top node's reference), ref = mean of"
	echo "$((3 * reps)) runs sampled at 1 in 256 (the other nodes' reference; its top node against untimed checks it):"
	echo "subtracted = exact with timing_source.subtract_overhead on ('-': the setting does not exist here); pd = paired:"
	echo "the median of each round's subtracted top node over the same round's untimed run:"
	printf '%-22s %6s %12s %12s %12s %12s %12s %12s %12s %12s %10s\n' query nodes 'top exact/' 'subtracted/' 'subtracted/' 'top sampled/' 'top ref/' \
		'worst node' 'worst node' 'worst node' 'nodes'
	printf '%-22s %6s %12s %12s %12s %12s %12s %12s %12s %12s %10s\n' '' '' untimed untimed 'untimed, pd' untimed untimed 'sampled %' 'exact %' \
		'subtracted %' '>= 1 ms'
	printf '%s\n' "${table3[@]}"
	echo "(a fuller accuracy run, with error bars and overhead subtraction, over 22 analytic queries: --tpch)"
fi

# ---- the same scan under parents of growing per-row work ----
# The inner nodes' reference (sampled at 1 in 256) is only as good as the
# sampled calls it adds up.  The scan of t100k does the same work whatever
# its parent (an Aggregate) does with each row: count(*), a numeric sum,
# an md5 of every row.  So the scan's figure of a mode should not move with
# the parent; where it grows, the mode is counting part of the parent's
# work as the scan's.  The scan alone, at the top, anchors them: its
# untimed time is the scan's work and the executor's loop around it.
# Rounds interleave exact, subtracted (where the setting exists), sampled
# 1 in 64 and 1 in 256, and untimed (the top node's Execution Time);
# medians.
if [ -n "$samp_src" ]; then
	parent_csv="$csvdir/bench-$stamp-parent.csv"
	echo "cpu,postgresql,parent,untimed_ms,exact_scan_ms,subtracted_scan_ms,sampled64_scan_ms,sampled256_scan_ms,exact_top_ms,subtracted_top_ms,sampled64_top_ms,sampled256_top_ms" >"$parent_csv"
	declare -a table_parent
	for entry in "none (scan alone)|id" "count(*)|count(*)" "sum(numeric)|sum(id::numeric)" "sum(md5 length)|sum(length(md5(id::text)))"; do
		IFS='|' read -r pname agg <<<"$entry"
		row=$(psql_db -At -F ' ' <<-EOF
			$setup_sql
			SET max_parallel_workers_per_gather = 0;
			SET timing_clock_source = '$samp_src';
			-- every = 0: TIMING OFF (the Execution Time twice); -1: exact,
			-- overhead subtracted; otherwise sampled 1 in every: the top
			-- node's total and its child's (the top's again if it is the
			-- scan)
			CREATE FUNCTION pg_temp.scan_under(every int) RETURNS float8[] LANGUAGE plpgsql AS \$\$
			DECLARE d jsonb;
			BEGIN
				PERFORM set_config('timing_source.sample_every', greatest(every, 1)::text, false);
				IF $can_sub THEN
					PERFORM set_config('timing_source.subtract_overhead', (every < 0)::text, false);
				END IF;
				IF every = 0 THEN
					EXECUTE 'EXPLAIN (ANALYZE, TIMING OFF, BUFFERS OFF, FORMAT JSON) SELECT $agg FROM t100k' INTO d;
					RETURN ARRAY[(d -> 0 ->> 'Execution Time')::float8, (d -> 0 ->> 'Execution Time')::float8];
				END IF;
				EXECUTE 'EXPLAIN (ANALYZE, BUFFERS OFF, FORMAT JSON) SELECT $agg FROM t100k' INTO d;
				RETURN ARRAY[(d -> 0 -> 'Plan' ->> 'Actual Total Time')::float8,
							 (coalesce(d -> 0 -> 'Plan' -> 'Plans' -> 0, d -> 0 -> 'Plan') ->> 'Actual Total Time')::float8];
			END \$\$;
			CREATE TEMP TABLE runs (every int, top float8, scan float8);
			SELECT pg_temp.scan_under(1) IS NOT NULL AS warm \gset
			DO \$\$
			DECLARE
				order_ int[] := CASE WHEN $can_sub THEN ARRAY[1, 64, 0, 256, -1] ELSE ARRAY[1, 64, 0, 256] END;
				n int := cardinality(order_);
				t float8[];
			BEGIN
				FOR r IN 1..3 * $reps LOOP
					FOR k IN 0..n - 1 LOOP
						t := pg_temp.scan_under(order_[1 + (k + r) % n]);
						INSERT INTO runs VALUES (order_[1 + (k + r) % n], t[1], t[2]);
					END LOOP;
				END LOOP;
			END \$\$;
			CREATE FUNCTION pg_temp.med(want int, want_top bool) RETURNS text LANGUAGE sql AS
				\$\$ SELECT coalesce(to_char(percentile_cont(0.5) WITHIN GROUP (ORDER BY CASE WHEN want_top THEN r.top ELSE r.scan END),
										'FM999990.000'), '-') FROM runs r WHERE r.every = want \$\$;
			SELECT pg_temp.med(0, true), pg_temp.med(1, false), pg_temp.med(-1, false), pg_temp.med(64, false),
				   pg_temp.med(256, false), pg_temp.med(1, true), pg_temp.med(-1, true), pg_temp.med(64, true),
				   pg_temp.med(256, true);
		EOF
		)
		read -r untimed e_scan s_scan p64_scan p256_scan e_top s_top p64_top p256_top <<<"$row"
		table_parent+=("$(printf '%-18s %9s %9s %11s %9s %9s %9s %11s %9s %9s' "$pname" "$untimed" \
			"$e_scan" "$s_scan" "$p64_scan" "$p256_scan" "$e_top" "$s_top" "$p64_top" "$p256_top")")
		echo "\"$cpu\",\"$pgver\",\"$pname\",$untimed,$e_scan,${s_scan/#-/},$p64_scan,$p256_scan,$e_top,${s_top/#-/},$p64_top,$p256_top" >>"$parent_csv"
	done
	echo
	echo "One scan of t100k under an Aggregate of growing per-row work, $(clock_name "$samp_src"), medians of $((3 * reps)) runs, ms:"
	echo "the scan does the same work under each parent, so a mode whose scan figure grows with the parent's work"
	echo "counts part of the parent's as the scan's (exact includes its own clock reads; subtracted removes them):"
	printf '%-18s %9s %9s %11s %9s %9s %9s %11s %9s %9s\n' parent untimed 'exact' 'subtracted' 'sampled' 'sampled' 'exact' 'subtracted' 'sampled' 'sampled'
	printf '%-18s %9s %9s %11s %9s %9s %9s %11s %9s %9s\n' '' '' scan scan '1/64 scan' '1/256 scan' top top '1/64 top' '1/256 top'
	printf '%s\n' "${table_parent[@]}"
fi

# ---- buffer usage: the wide (AVX2) wrappers against plain copies ----
# Only with its own cluster, on x86-64 with AVX2 and a usable TSC: a second
# server, the same but started with TIMING_SOURCE_DISABLE_AVX2, gets the
# same tables.  Rounds alternate the servers (the order swapping every
# round), each round one psql session per server that warms up and then
# runs the variants in rotating order.
if [ -n "${TS_WORK:-}" ] && [ "$tsc_ok" = 1 ] && [ "$(uname -m)" = x86_64 ] &&
	grep -qw avx2 /proc/cpuinfo; then
	usage_csv="$csvdir/bench-$stamp-usage.csv"
	wide_host=$PGHOST wide_port=$PGPORT
	TS_CLUSTER_PORT=55433 TIMING_SOURCE_DISABLE_AVX2=1 ts_cluster_start bench_plain <<-EOF
		jit = off
		max_worker_processes = 8
		max_parallel_workers = 4
	EOF
	declare -A srv_host=([wide]=$wide_host [plain]=$PGHOST) srv_port=([wide]=$wide_port [plain]=$PGPORT)
	seed_workload
	export PGHOST=$wide_host PGPORT=$wide_port

	# each server says (DEBUG2) how its nodes keep buffer usage
	usage_way() {
		PGHOST=$1 PGPORT=$2 psql_db -At 2>&1 <<-EOF | sed -nE 's/.*timing_source: buffer\/WAL usage kept with (AVX2 for [0-9]+ plan nodes, with plain copies for [0-9]+).*/\1/p'
			$setup_sql
			SET timing_clock_source = 'tsc';
			SET client_min_messages = debug2;
			EXPLAIN (ANALYZE, BUFFERS ON) SELECT count(*) FROM t100k;
		EOF
	}
	echo
	echo "Buffer usage, wide wrappers (AVX2) against plain copies: second server started with TIMING_SOURCE_DISABLE_AVX2"
	echo "  main server:   kept with $(usage_way "${srv_host[wide]}" "${srv_port[wide]}")"
	echo "  second server: kept with $(usage_way "${srv_host[plain]}" "${srv_port[plain]}")"

	uvariants=(tsc tscbuf lean leanbuf)
	echo "cpu,postgresql,query,server,variant,round,ms" >"$usage_csv"
	declare -a table4
	for entry in "${queries[@]}"; do
		IFS='|' read -r name settings query <<<"$entry"
		times=
		for ((r = 1; r <= reps; r++)); do
			order="wide plain"
			((r % 2 == 0)) && order="plain wide"
			for srv in $order; do
				script=$(
					echo "$setup_sql"
					echo "$settings"
					echo "SET timing_clock_source = 'tsc';"
					echo "\\o /dev/null"
					echo "EXPLAIN (ANALYZE, BUFFERS ON) $query;"
					echo "\\timing on"
					n=${#uvariants[@]}
					for ((k = 0; k < n; k++)); do
						v=${uvariants[$(((k + r) % n))]}
						echo "\\echo @@ $v $r"
						case $v in
							tsc) echo "EXPLAIN (ANALYZE, BUFFERS OFF) $query;" ;;
							tscbuf) echo "EXPLAIN (ANALYZE, BUFFERS ON) $query;" ;;
							lean) echo "EXPLAIN (ANALYZE, TIMING OFF, BUFFERS OFF) $query;" ;;
							leanbuf) echo "EXPLAIN (ANALYZE, TIMING OFF, BUFFERS ON) $query;" ;;
						esac
					done
					echo "\\o"
				)
				log=$(PGHOST=${srv_host[$srv]} PGPORT=${srv_port[$srv]} psql_db -A <<<"$script" 2>&1)
				while read -r v rr ms; do
					[ -n "$v" ] || continue
					times+="${srv}_$v $rr $ms"$'\n'
					echo "\"$cpu\",\"$pgver\",\"$name\",$srv,$v,$rr,$ms" >>"$usage_csv"
				done < <(parse_times <<<"$log")
			done
		done
		declare -A md=()
		set_medians "$times" "${uvariants[@]/#/wide_}" "${uvariants[@]/#/plain_}"
		table4+=("$(printf '%-22s %8s %8s %8s %8s | %8s %8s %8s %8s | %6s %6s %6s %6s | %6s %6s' "$name" \
			"${md[wide_tsc]}" "${md[wide_tscbuf]}" "${md[wide_lean]}" "${md[wide_leanbuf]}" \
			"${md[plain_tsc]}" "${md[plain_tscbuf]}" "${md[plain_lean]}" "${md[plain_leanbuf]}" \
			"$(ratio "${md[wide_tscbuf]}" "${md[wide_tsc]}")" "$(ratio "${md[plain_tscbuf]}" "${md[plain_tsc]}")" \
			"$(ratio "${md[wide_leanbuf]}" "${md[wide_lean]}")" "$(ratio "${md[plain_leanbuf]}" "${md[plain_lean]}")" \
			"$(ratio2 "${md[wide_tscbuf]}" "${md[wide_tsc]}" "${md[plain_tscbuf]}" "${md[plain_tsc]}")" \
			"$(ratio2 "${md[wide_leanbuf]}" "${md[wide_lean]}" "${md[plain_leanbuf]}" "${md[plain_lean]}")")")
		unset md
	done
	echo "Medians in ms of $reps rounds; w = main server (AVX2), p = second server (plain copies); what BUFFERS"
	echo "costs on each server (two servers differ a little even without BUFFERS), and the wide one's cost over the plain one's:"
	printf '%-22s %8s %8s %8s %8s | %8s %8s %8s %8s | %6s %6s %6s %6s | %6s %6s\n' query \
		'w tsc' 'w t+buf' 'w lean' 'w l+buf' 'p tsc' 'p t+buf' 'p lean' 'p l+buf' \
		'tbuf/' 'tbuf/' 'lbuf/' 'lbuf/' 'tbuf' 'lbuf'
	printf '%-22s %8s %8s %8s %8s | %8s %8s %8s %8s | %6s %6s %6s %6s | %6s %6s\n' '' \
		'' '' '' '' '' '' '' '' 'tsc w' 'tsc p' 'lean w' 'lean p' 'w:p' 'w:p'
	printf '%s\n' "${table4[@]}"
fi

# ---- always-on auto_explain under pgbench -S ----
if [ "$do_pgbench" = 1 ] && [ -n "$pgbench_bin" ]; then
	pgb_init
	modes=(none system)
	[ "$tsc_ok" = 1 ] && modes+=(tsc)
	pin_start
	echo "cpu,postgresql,mode,round,tps" >"$pgb_csv"
	declare -A tps_all=()
	for ((r = 1; r <= pgb_rounds; r++)); do
		for ((k = 0; k < ${#modes[@]}; k++)); do
			mode=${modes[$(((k + r) % ${#modes[@]}))]}
			case $mode in
				none) opts="-c timing_clock_source=system" ;;
				*) opts="-c session_preload_libraries=auto_explain -c auto_explain.log_min_duration=3600000 -c auto_explain.log_analyze=on -c auto_explain.log_timing=on -c timing_clock_source=$mode" ;;
			esac
			tps=$(pgb -n -S -M prepared -c 1 -j 1 -T "$pgb_secs" "dbname=ts_bench options='$opts'" 2>/dev/null |
				sed -nE 's/^tps = ([0-9.]+).*/\1/p' | head -1)
			echo "\"$cpu\",\"$pgver\",$mode,$r,$tps" >>"$pgb_csv"
			tps_all[$mode]+="$tps "
		done
	done
	pin_end
	echo
	echo "pgbench -S, prepared, 1 client, ${pgb_secs} s x $pgb_rounds rounds: auto_explain (log_analyze, log_timing) on every query"
	[ -n "$pinned" ] && echo "(server and client on one CPU)"
	printf '%-8s %10s %10s\n' mode 'tps (med)' 'vs none'
	declare -A tmed=()
	for mode in "${modes[@]}"; do
		tmed[$mode]=$(tr ' ' '\n' <<<"${tps_all[$mode]}" | grep . | min_median | awk '{ print $2 }')
	done
	for mode in "${modes[@]}"; do
		printf '%-8s %10s %10s\n' "$mode" "${tmed[$mode]}" "$(ratio "${tmed[$mode]}" "${tmed[none]}")"
	done
fi

track_part

# a machine without the TSC gets the note and the rest of the bench
[ "$do_tpch" = 1 ] && { tpch_section || true; }

echo
echo "rounds per variant: $reps; ratios and ns/read from medians; ns/read = (T - T_off) / (2 x timed rows), T_off = off for system, lean for tsc"
echo "parallel query: timed rows are summed over all processes, time is wall time"
echo "CSV: $raw_csv"
echo "     $sum_csv"
[ -f "$pgb_csv" ] && echo "     $pgb_csv"
[ -f "$acc_csv" ] && echo "     $acc_csv"
[ -f "${usage_csv:-}" ] && echo "     $usage_csv"
[ -f "${tpch_nodes_csv:-}" ] && echo "     $tpch_nodes_csv" && echo "     $tpch_queries_csv"
exit 0
