# scripts/tpch/accuracy.sh -- the TPC-H accuracy run of scripts/bench.sh
# (--tpch, --tpch-only).  Sourced by bench.sh, which provides psql_db,
# setup_sql, cpu, pgver, pgnum, csvdir, stamp and tpch_clock (the clock, as
# the heading names it).
#
# tpch_load SCALE: the schema tpch of ts_bench, rebuilt only when the
# generator (schema.sql, data.sql, keys.sql) or the scale changed; the
# stamp in tpch.meta is a hash of those files and the scale.
#
# tpch_run: per query of queries.sql, interleaved rounds (the order
# rotating every round) of
#   plain     the query           untimed   EXPLAIN (ANALYZE, TIMING OFF)
#   exact     every call timed    exactsub  the same, subtract_overhead on
#   sampled   1 in TPCH_SAMPLE    ref       1 in TPCH_REF (128), TPCH_REFS (3) a round
#   checked   sampled, with the same run's exact totals (the estimator's check)
#   profile   untimed, a timer at TPCH_PROFILE_HZ (2000) counting the nodes
#             in progress, TPCH_PROFILES (3) a round: the reference of shares
# each a call of pg_temp.tpch_measure (runner.sql); then report.sql.
TPCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

tpch_stamp() {
	{ cat "$TPCH_DIR/schema.sql" "$TPCH_DIR/data.sql" "$TPCH_DIR/keys.sql"; echo "scale $1"; } |
		md5sum | cut -c1-32
}

tpch_load() {
	local scale=$1 want have t
	want=$(tpch_stamp "$scale")
	have=$(psql_db -At -c "SELECT CASE WHEN to_regclass('tpch.meta') IS NOT NULL THEN 'yes' END" )
	[ "$have" = yes ] && have=$(psql_db -At -c 'SELECT stamp FROM tpch.meta')
	if [ "$have" = "$want" ]; then
		return 0
	fi
	echo "building the TPC-H-shaped data, scale $scale" >&2
	# the stamp goes in last, in the same transaction as the data: a load
	# that fails leaves no stamp and is redone next time
	psql_db -v scale="$scale" -c 'SET client_min_messages = warning' -f "$TPCH_DIR/schema.sql" >/dev/null
	psql_db -v scale="$scale" <<-EOF >/dev/null
		SET client_min_messages = warning;
		BEGIN;
		\i $TPCH_DIR/data.sql
		\i $TPCH_DIR/keys.sql
		INSERT INTO tpch.meta (stamp, scale) VALUES ('$want', $scale);
		COMMIT;
	EOF
	for t in region nation supplier part partsupp customer orders lineitem; do
		psql_db -c "VACUUM (FREEZE, ANALYZE) tpch.$t"
	done
}

# the queries as "id|title|text on one line"
tpch_queries() {
	awk '
		/^-- Q[0-9][0-9]: / { id = substr($2, 2, 2) + 0; title = substr($0, 9); q = ""; inq = 1; next }
		/^[[:space:]]*--/ { next }
		inq {
			q = q (q == "" ? "" : " ") $0
			if ($0 ~ /;[[:space:]]*$/) {
				sub(/;[[:space:]]*$/, "", q); gsub(/\t/, " ", q); gsub(/\|/, " ", title)
				printf "%d|%s|%s\n", id, title, q; inq = 0
			}
		}' "$TPCH_DIR/queries.sql"
}

# tpch_run ROUNDS SUBTRACT(1|0) CLOCK_SQL
tpch_run() {
	local rounds=$1 subtract=$2 clock_sql=$3
	local sample=${TPCH_SAMPLE:-64} ref=${TPCH_REF:-128} refs=${TPCH_REFS:-3} ref_se_max=${TPCH_REF_SE_MAX:-2}
	local hz=${TPCH_PROFILE_HZ:-2000} profiles=${TPCH_PROFILES:-3}
	local -a modes=(plain untimed exact sampled checked)
	local id title q script r k n m log start
	[ "$subtract" = 1 ] && modes+=(exactsub)
	for ((k = 0; k < refs; k++)); do modes+=(ref); done
	for ((k = 0; k < profiles; k++)); do modes+=(profile); done
	n=${#modes[@]}

	local pre="$setup_sql
$clock_sql
SET max_parallel_workers_per_gather = 0;
\\set sample $sample
\\set ref $ref
\\set subtract $subtract
\\set profile_hz $hz
\\i $TPCH_DIR/runner.sql"

	# what the run needs, checked once, each with a message that says what
	# is missing instead of a figure computed without it
	psql_db -At <<-EOF >/dev/null || exit 1
		$setup_sql
		DO \$\$
		BEGIN
			IF to_regprocedure('timing_source_explain_nodes(text, integer)') IS NULL THEN
				RAISE EXCEPTION 'the TPC-H accuracy run needs timing_source_explain_nodes(text, integer)'
					USING DETAIL = format('Extension version in this database: %s.',
										  coalesce((SELECT extversion FROM pg_extension WHERE extname = 'timing_source'), 'none')),
						  HINT = 'Install timing_source 1.4 or later and run ALTER EXTENSION timing_source UPDATE in ts_bench.';
			END IF;
			IF $subtract = 1 AND current_setting('timing_source.subtract_overhead', true) IS NULL THEN
				RAISE EXCEPTION 'the exact-with-overhead-subtracted mode needs the setting timing_source.subtract_overhead'
					USING HINT = 'Use a timing_source that has it, or leave the mode out with --tpch-no-subtract.';
			END IF;
		END \$\$;
	EOF

	psql_db -q <<-EOF >/dev/null
		$pre
		TRUNCATE tpch_run.obs;
		DROP TABLE IF EXISTS tpch_run.queries;
		CREATE TABLE tpch_run.queries (q int PRIMARY KEY, title text NOT NULL);
	EOF
	start=$SECONDS
	while IFS='|' read -r id title q; do
		echo "TPC-H accuracy: Q$(printf '%02d' "$id") $title" >&2
		script=$(
			echo "$pre"
			echo "INSERT INTO tpch_run.queries VALUES ($id, \$t\$$title\$t\$);"
			# warm-up: run 0, left out of the report
			echo "SELECT pg_temp.tpch_measure($id, \$q\$$q\$q\$, 'plain', 0);"
			echo "SELECT pg_temp.tpch_measure($id, \$q\$$q\$q\$, 'exact', 0);"
			# a backend's first subtracted run also calibrates probing
			[ "$subtract" = 1 ] &&
				echo "SELECT pg_temp.tpch_measure($id, \$q\$$q\$q\$, 'exactsub', 0);"
			for ((r = 1; r <= rounds; r++)); do
				for ((k = 0; k < n; k++)); do
					m=${modes[$(((k + r) % n))]}
					echo "SELECT pg_temp.tpch_measure($id, \$q\$$q\$q\$, '$m', $r);"
				done
			done
		)
		log=$(psql_db -q -At <<<"$script" 2>&1) || { echo "$log" >&2; exit 1; }
	done < <(tpch_queries)

	echo
	echo "TPC-H-shaped accuracy run: CPU $cpu ($ncpu CPUs), clocksource $clocksrc; PostgreSQL $pgver, ${hugepg:-huge pages unknown}; nodes timed with ${tpch_clock:-the TSC}"
	echo "scale $(psql_db -At -c 'SELECT scale FROM tpch.meta'), $rounds rounds; sampled 1 in $sample, $rounds runs a query;" \
		"reference: untimed Execution Time (top node), mean of $((rounds * refs)) runs at 1 in $ref (inner nodes, judged where its standard error is <= $ref_se_max%);" \
		"shares also against a profile of $((rounds * profiles)) untimed runs at $hz Hz;" \
		"$((SECONDS - start)) s"
	[ "$subtract" = 1 ] || echo "exact with overhead subtracted (exsub): not run (--tpch-no-subtract)"
	psql_db -q <<-EOF
		SELECT set_config('tpch.sample', '$sample', false) AS s, set_config('tpch.ref_se_max', '$ref_se_max', false) AS r,
			   set_config('tpch.ref', '$ref', false) AS f \\gset
		\\set ref $ref
		\\set ref_se_max $ref_se_max
		\\i $TPCH_DIR/report.sql
	EOF
	mkdir -p "$csvdir"
	tpch_nodes_csv="$csvdir/bench-$stamp-tpch-nodes.csv"
	tpch_queries_csv="$csvdir/bench-$stamp-tpch-queries.csv"
	psql_db --csv -c "SELECT '$cpu' AS cpu, '$pgver' AS postgresql, * FROM tpch_run.node_stats ORDER BY q, node_id" >"$tpch_nodes_csv"
	psql_db --csv -c "SELECT '$cpu' AS cpu, '$pgver' AS postgresql, * FROM tpch_run.query_stats ORDER BY q = 0, q" >"$tpch_queries_csv"
	echo "CSV: $tpch_nodes_csv"
	echo "     $tpch_queries_csv"
}
