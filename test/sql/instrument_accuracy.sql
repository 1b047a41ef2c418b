--
-- Accuracy of per-node times under the TSC against the system clock.
-- Only verdicts are printed; every bound is stated next to its check.
--
-- Host dependence: where the TSC is unusable the checks run with the
-- system clock only, and 'tsc' must be refused with the reason.
--
-- PostgreSQL 19 and later: timing_clock_source is core's; the same
-- checks then apply to the extension's wrappers reading core's clock.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS timing_source;
RESET client_min_messages;

SELECT CASE WHEN available THEN 'tsc' ELSE 'system' END AS src
FROM timing_source_tsc() \gset
SELECT ts_set_tsc() AS tsc_accepted_exactly_where_usable;
RESET timing_clock_source;

CREATE FUNCTION pg_temp.explain_json(query text, source text)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
	result jsonb;
BEGIN
	PERFORM set_config('timing_clock_source', source, true);
	EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || query INTO result;
	RETURN result -> 0;
END
$$;

--
-- pg_sleep(0.2): the Result node's total is within 2% of 200 ms, and it
-- agrees with the executor's own system-clock measurement of the whole
-- query ("Execution Time", which contains it) to within 1 ms, so a TSC
-- frequency off by 0.5% still fails.  A sleep may overshoot, and executor
-- start-up and shutdown outside the node may stall, when the machine is
-- busy (an emulated CPU once took over 0.5 ms in three tries running), so
-- each source gets five tries and the best one counts.
--
CREATE FUNCTION pg_temp.sleep_check(source text)
RETURNS TABLE (within_2_percent bool, matches_execution_time bool)
LANGUAGE plpgsql AS $$
DECLARE
	d jsonb;
	node float8;
	exec float8;
	best_dev float8 := 'Infinity';
	best_gap float8 := 'Infinity';
BEGIN
	FOR i IN 1..5 LOOP
		d := pg_temp.explain_json('SELECT pg_sleep(0.2)', source);
		node := (d #>> '{Plan,Actual Total Time}')::float8;
		exec := (d ->> 'Execution Time')::float8;
		best_dev := least(best_dev, abs(node - 200.0));
		IF node <= exec + 0.001 THEN
			best_gap := least(best_gap, exec - node);
		END IF;
		EXIT WHEN best_dev <= 4.0 AND best_gap < 1.0;
	END LOOP;
	within_2_percent := best_dev <= 4.0;
	matches_execution_time := best_gap < 1.0;
	RETURN NEXT;
END
$$;

SELECT * FROM pg_temp.sleep_check(:'src');
SELECT * FROM pg_temp.sleep_check('system');

--
-- A scan of 1M rows under an aggregate.  Under both clocks: identical rows
-- and loops, child total not above the parent's, and the Seq Scan's share
-- of the Aggregate's time the same within 0.15 (the share is about 0.6
-- under either clock on the development machine; each clock's own reading
-- overhead lands partly in the child and partly in the parent, so the
-- shares are not expected to agree exactly).  Median of three runs each.
--
CREATE TABLE ts_big AS SELECT g AS id FROM generate_series(1, 1000000) g;
VACUUM (FREEZE, ANALYZE) ts_big;
SET max_parallel_workers_per_gather = 0;
SET jit = off;
SELECT count(*) FROM ts_big;

CREATE FUNCTION pg_temp.scan_runs(source text)
RETURNS TABLE (agg_rows float8, agg_loops float8, scan_rows float8,
			   scan_loops float8, agg_total float8, scan_total float8)
LANGUAGE plpgsql AS $$
DECLARE
	d jsonb;
BEGIN
	FOR i IN 1..3 LOOP
		d := pg_temp.explain_json('SELECT count(*) FROM ts_big', source);
		agg_rows := (d #>> '{Plan,Actual Rows}')::float8;
		agg_loops := (d #>> '{Plan,Actual Loops}')::float8;
		agg_total := (d #>> '{Plan,Actual Total Time}')::float8;
		scan_rows := (d #>> '{Plan,Plans,0,Actual Rows}')::float8;
		scan_loops := (d #>> '{Plan,Plans,0,Actual Loops}')::float8;
		scan_total := (d #>> '{Plan,Plans,0,Actual Total Time}')::float8;
		RETURN NEXT;
	END LOOP;
END
$$;

CREATE TEMP TABLE runs AS
SELECT 'tsc' AS source, * FROM pg_temp.scan_runs(:'src')
UNION ALL
SELECT 'system', * FROM pg_temp.scan_runs('system');

-- rows and loops: the same in every run under both clocks
SELECT count(DISTINCT (agg_rows, agg_loops, scan_rows, scan_loops)) AS shapes,
	   min(agg_rows) AS agg_rows, min(scan_rows) AS scan_rows,
	   min(scan_loops) AS scan_loops
FROM runs;

-- child within parent, positive times
SELECT source, bool_and(scan_total <= agg_total) AS child_within_parent,
	   bool_and(scan_total > 0) AS positive
FROM runs GROUP BY source ORDER BY source;

-- share of the scan in the aggregate's time.  Under an emulator
-- (TS_EMULATED, set by scripts/majors.sh for the arm64 root under
-- qemu-user) the clocks' costs differ far more than natively (system 190
-- ns, counter 47 ns per read; natively 26 and 15 ns), and the shares with
-- them: 0.56 and 0.69 measured there, so the bound is 0.25
\set emulated ''
\getenv emulated TS_EMULATED
SELECT abs(t.share - s.share) <= CASE WHEN :'emulated' = '' THEN 0.15 ELSE 0.25 END
	AS shares_agree
FROM (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY scan_total / agg_total) AS share
	  FROM runs WHERE source = 'tsc') t,
	 (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY scan_total / agg_total) AS share
	  FROM runs WHERE source = 'system') s;

DROP TABLE ts_big;
