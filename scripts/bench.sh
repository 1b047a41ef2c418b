#!/usr/bin/env bash
# scripts/bench.sh -- EXPLAIN ANALYZE overhead: TSC vs system clock.
#
#   scripts/bench.sh [--short] [--reps N] [--csv DIR]
#
# Without PGHOST/PGPORT in the environment (a fresh Debian machine, as
# root): installs the dependencies, builds and installs the extension,
# starts a throw-away cluster with the library preloaded, benchmarks, and
# stops the cluster again (scripts/lib.sh does the set-up).  With PGHOST or
# PGPORT set: benchmarks that server (the library must be preloaded, or
# loadable with LOAD by the connecting user).
#
# Builds the seed workload in database ts_bench (kept between runs): a
# 100,000-row and a 5,000,000-row table (VACUUM FREEZE), and two 1,000-row
# tables for a nested loop.  Then for each query runs interleaved rounds of
#   plain      the query itself (client-side time, includes planning)
#   off        EXPLAIN (ANALYZE, TIMING OFF)      \
#   system     EXPLAIN ANALYZE, system clock       > server-side
#   tsc        EXPLAIN ANALYZE, TSC               /  "Execution Time"
# rotating the order in every round, and prints min and median, the ratios
# of the medians tsc/off, system/off, system/tsc, and the overhead per
# timed row, (T - T_off) / (2 x rows through timed nodes), i.e. the cost of
# one clock read (each node call reads the clock twice).
#
# --short (or BENCH_SHORT=1): 3 rounds instead of 7, for the main job.
# Results also go to CSV: bench/results/bench-<time>.csv (every run) and
# bench/results/bench-<time>-summary.csv.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
reps=${BENCH_REPS:-7}
[ -n "${BENCH_SHORT:-}" ] && reps=3
csvdir="$ROOT/bench/results"

while [ $# -gt 0 ]; do
	case $1 in
		--short) reps=3 ;;
		--reps) reps=$2; shift ;;
		--csv) csvdir=$2; shift ;;
		-h|--help) sed -n '2,29p' "$0"; exit 0 ;;
		*) echo "unknown argument: $1" >&2; exit 2 ;;
	esac
	shift
done
case $reps in
	''|*[!0-9]*|0) echo "--reps needs a positive number" >&2; exit 2 ;;
esac

# ---- set-up of a throw-away cluster when no server is given ----
if [ -z "${PGHOST:-}" ] && [ -z "${PGPORT:-}" ]; then
	[ -f "$ROOT/scripts/lib.sh" ] || {
		echo "scripts/lib.sh is missing: set PGHOST/PGPORT to benchmark a running server" >&2
		exit 1
	}
	. "$ROOT/scripts/lib.sh"
	ts_install_deps
	# installs go to the server's shared directories: one at a time
	exec 9>/tmp/timing_source-install.lock
	flock 9
	ts_build_install
	ts_workdir
	trap ts_cleanup EXIT
	trap 'exit 130' INT TERM
	ts_cluster_start bench <<-EOF
		jit = off
		max_worker_processes = 8
		max_parallel_workers = 4
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
if [ "$(psql_db -At -d postgres -c "SELECT count(*) FROM pg_database WHERE datname = 'ts_bench'")" = 0 ]; then
	psql_db -d postgres -c 'CREATE DATABASE ts_bench'
fi
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
seed t100k 100000 'CREATE TABLE t100k AS SELECT g AS id FROM generate_series(1, 100000) g'
seed t 5000000 'CREATE TABLE t AS SELECT g AS id FROM generate_series(1, 5000000) g'
seed nl_outer 1000 'CREATE TABLE nl_outer AS SELECT g AS id FROM generate_series(1, 1000) g'
seed nl_inner 1000 'CREATE TABLE nl_inner AS SELECT g AS id FROM generate_series(1, 1000) g'

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
if psql_db -At >/dev/null 2>&1 <<-EOF
	$setup_sql
	SET timing_clock_source = 'tsc';
EOF
then
	tsc_ok=1
else
	tsc_ok=0
	echo "note: the TSC is not usable on this machine; tsc columns are empty" >&2
fi

# name|session settings|query
queries=(
	"count(*) 100k|SET max_parallel_workers_per_gather = 0;|SELECT count(*) FROM t100k"
	"count(*) 5M|SET max_parallel_workers_per_gather = 0;|SELECT count(*) FROM t"
	"LIMIT 1 OFFSET 5M|SET max_parallel_workers_per_gather = 0;|SELECT * FROM t LIMIT 1 OFFSET 5000000"
	"nested loop 1M inner|SET max_parallel_workers_per_gather = 0; SET enable_hashjoin = off; SET enable_mergejoin = off;|SELECT count(*) FROM nl_outer o JOIN nl_inner i ON i.id <> o.id"
	"parallel count(*) 5M|SET max_parallel_workers_per_gather = 2; SET parallel_leader_participation = on;|SELECT count(*) FROM t"
)

variants=(plain off system tsc)
[ "$tsc_ok" = 1 ] || variants=(plain off system)

stamp=$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$csvdir"
raw_csv="$csvdir/bench-$stamp.csv"
sum_csv="$csvdir/bench-$stamp-summary.csv"
echo "query,variant,round,ms" >"$raw_csv"
echo "query,timed_rows,plain_min,plain_median,off_min,off_median,system_min,system_median,tsc_min,tsc_median,tsc_off,system_off,system_tsc,ns_per_read_system,ns_per_read_tsc" >"$sum_csv"

# one measured statement of a variant, preceded by a marker line
statement() {
	local variant=$1 round=$2 query=$3
	echo "\\echo @@ $variant $round"
	case $variant in
		plain) echo "$query;" ;;
		off) echo "SET timing_clock_source = 'system';"
			echo "EXPLAIN (ANALYZE, TIMING OFF) $query;" ;;
		system) echo "SET timing_clock_source = 'system';"
			echo "EXPLAIN (ANALYZE) $query;" ;;
		tsc) echo "SET timing_clock_source = 'tsc';"
			echo "EXPLAIN (ANALYZE) $query;" ;;
	esac
}

# print "variant round ms" for every measured statement of a psql log
parse_times() {
	awk '
		/^@@ / { v = $2; r = $3; done = 0; next }
		done || v == "" { next }
		v != "plain" && /Execution Time: / {
			sub(/.*Execution Time: /, ""); print v, r, $1; done = 1; next }
		v == "plain" && /^Time: / { print v, r, $2; done = 1; next }
	'
}

# min and median of numbers on stdin
min_median() {
	sort -g | awk '{ a[NR] = $1 }
		END { if (NR == 0) { print "", ""; exit }
			  m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
			  printf "%.3f %.3f\n", a[1], m }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print ""; else printf "%.2f", a / b }'; }
per_read() { awk -v t="$1" -v o="$2" -v n="$3" 'BEGIN { if (t == "" || n == 0) print ""; else printf "%.1f", (t - o) * 1e6 / (2 * n) }'; }

printf '\n%-22s %10s %17s %17s %17s %17s %7s %7s %7s %8s %8s\n' \
	query timed_rows "plain min/med" "off min/med" "system min/med" "tsc min/med" \
	tsc/off sys/off sys/tsc "ns/read" "ns/read"
printf '%-22s %10s %17s %17s %17s %17s %7s %7s %7s %8s %8s\n' \
	"" "" "(ms, client)" "(ms)" "(ms)" "(ms)" "" "" "" system tsc

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
		echo "\\timing on"
		echo "\\o /dev/null"
		echo "$query;"
		echo "\\o"
		for ((r = 1; r <= reps; r++)); do
			n=${#variants[@]}
			for ((k = 0; k < n; k++)); do
				statement "${variants[$(((k + r) % n))]}" "$r" "$query"
			done
		done
	)
	log=$(psql_db -A <<<"$script")
	times=$(parse_times <<<"$log")
	while read -r v r ms; do
		echo "\"$name\",$v,$r,$ms" >>"$raw_csv"
	done <<<"$times"

	declare -A mn=() md=()
	for v in plain off system tsc; do
		read -r mn[$v] md[$v] < <(awk -v v="$v" '$1 == v { print $3 }' <<<"$times" | min_median)
	done
	tsc_off=$(ratio "${md[tsc]}" "${md[off]}")
	sys_off=$(ratio "${md[system]}" "${md[off]}")
	sys_tsc=$(ratio "${md[system]}" "${md[tsc]}")
	ns_sys=$(per_read "${md[system]}" "${md[off]}" "$timed_rows")
	ns_tsc=$(per_read "${md[tsc]}" "${md[off]}" "$timed_rows")

	printf '%-22s %10s %8s/%-8s %8s/%-8s %8s/%-8s %8s/%-8s %7s %7s %7s %8s %8s\n' \
		"$name" "$timed_rows" "${mn[plain]}" "${md[plain]}" "${mn[off]}" "${md[off]}" \
		"${mn[system]}" "${md[system]}" "${mn[tsc]}" "${md[tsc]}" \
		"$tsc_off" "$sys_off" "$sys_tsc" "$ns_sys" "$ns_tsc"
	echo "\"$name\",$timed_rows,${mn[plain]},${md[plain]},${mn[off]},${md[off]},${mn[system]},${md[system]},${mn[tsc]},${md[tsc]},$tsc_off,$sys_off,$sys_tsc,$ns_sys,$ns_tsc" >>"$sum_csv"
	unset mn md
done

echo
echo "rounds per variant: $reps; ratios and ns/read from medians; ns/read = (T - T_off) / (2 x timed rows)"
echo "parallel query: timed rows are summed over all processes, time is wall time"
echo "CSV: $raw_csv"
echo "     $sum_csv"
