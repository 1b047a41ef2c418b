--
-- timing_source_compare(): rolled-back subtransactions, the session's
-- setting left as it was, rows through timed nodes.
--
SET client_min_messages = warning;
-- init creates the extension; this lets the file also run on its own
CREATE EXTENSION IF NOT EXISTS timing_source;
RESET client_min_messages;

-- shape: one row per mode in order; tsc is present exactly when usable
-- (timing off's ratio is 1 by definition; another mode's is speed, which a
-- loaded host can round to 1, so it is not checked here)
SELECT mode, runs, min_ms > 0 AS min_pos, median_ms >= min_ms AS median_ge_min,
       ratio_vs_off > 0 AS ratio_pos,
       (mode <> 'timing off' OR ratio_vs_off = 1) AS off_is_one,
       (overhead_ns_per_row IS NULL) = (mode IN ('plain', 'timing off')) AS overhead_null
  FROM timing_source_compare('SELECT count(*) FROM generate_series(1, 1000)', 3)
 WHERE mode <> 'tsc';
-- figures as EXPLAIN prints them: milliseconds and ratios to 3 decimals,
-- nanoseconds per row to 2
SELECT bool_and(scale(min_ms) = 3 AND scale(median_ms) = 3 AND scale(ratio_vs_off) = 3
                AND coalesce(scale(overhead_ns_per_row) = 2, true)) AS fixed_scales,
       count(overhead_ns_per_row) > 0 AS some_overhead
  FROM timing_source_compare('SELECT count(*) FROM generate_series(1, 1000)', 1);
SELECT count(*) FILTER (WHERE mode = 'tsc') =
       (SELECT available::int FROM timing_source_tsc()) AS tsc_row_iff_available,
       count(*) FILTER (WHERE mode = 'tsc' AND overhead_ns_per_row IS NULL) AS tsc_without_overhead
  FROM timing_source_compare('SELECT 1', 1);

-- with sampled timing set, explain_options names it for the modes it
-- applies to: both timed modes wherever the wrappers sample (through 18
-- with the TSC and the system clock, on 19 with core's clock); the TSC's
-- alone where they do not (a build without a counter, which has no TSC
-- mode either)
SET timing_source.sample_every = 8;
SELECT bool_and(coalesce(explain_options LIKE '%; timing_source.sample_every = 8', false) =
                (mode = 'tsc' OR (mode = 'system' AND ts_wrappers_sample())))
         AS options_name_sampling_where_it_applies
  FROM timing_source_compare('SELECT 1', 1);
-- top_margin_pct: the margin of the top node's estimate, exactly for the
-- sampled modes, when the top node had enough sampled calls (a scan of
-- 20,000 rows at 1 in 8); a scan of 60 rows has too few (after its first
-- call, 60 more: 30 timed exactly in the warm-up, then 30 each with
-- probability 1/2, all 30 with probability 2^-30), and an
-- aggregate's single call after its first is timed exactly, margin nil;
-- without sampling no mode has one
-- (the tsc mode exists only where the TSC is usable)
SELECT bool_and((top_margin_pct IS NOT NULL) = coalesce(explain_options LIKE '%sample_every%', false)) AS margin_where_sampled,
       bool_and(coalesce(top_margin_pct > 0 AND top_margin_pct < 50, true)) AS margin_plausible
  FROM timing_source_compare('SELECT g FROM generate_series(1, 20000) g', 3);
SELECT bool_and(top_margin_pct IS NULL) AS none_for_too_few_calls
  FROM timing_source_compare('SELECT g FROM generate_series(1, 60) g', 1);
SELECT bool_and(coalesce(top_margin_pct = 0, false) = coalesce(explain_options LIKE '%sample_every%', false)) AS exact_when_all_timed
  FROM timing_source_compare('SELECT count(*) FROM generate_series(1, 20000) g', 1);
RESET timing_source.sample_every;
SELECT bool_and(top_margin_pct IS NULL) AS none_when_exact
  FROM timing_source_compare('SELECT g FROM generate_series(1, 20000) g', 1);

-- rows through timed nodes: Actual Rows x Actual Loops summed over all
-- nodes, recovered from overhead_ns_per_row = (median - median of timing
-- off) / (2 x rows).  Outer scan 1,000 rows; correlated subplan run 1,000
-- times, its aggregate 1 row and its filtered scan 100 rows per loop:
-- 1,000 + 1,000 + 100,000 = 102,000.  The figures are rounded (medians to
-- 0.001 ms, the overhead to 0.01 ns), so the recovered count is checked
-- within the error that rounding allows, and that error must be well
-- below the 1,000 rows a missed node would cost.  Medians of 5 runs: a
-- single run of either mode that stalls for a few milliseconds (a busy
-- host) shrinks the difference the error is measured against.
WITH r AS MATERIALIZED (
  SELECT * FROM timing_source_compare(
    'SELECT (SELECT count(*) FROM generate_series(1, 100) g WHERE g > a - a) FROM generate_series(1, 1000) a', 5)),
e AS (
  SELECT (s.median_ms - o.median_ms) * 1e6 / (2 * s.overhead_ns_per_row) AS rows_recovered,
         102000 * (0.001 / abs(s.median_ms - o.median_ms) + 0.005 / abs(s.overhead_ns_per_row)) * 1.01 AS tolerance
    FROM r s, r o
   WHERE s.mode = 'system' AND o.mode = 'timing off')
SELECT abs(rows_recovered - 102000) <= tolerance AS rows_through_timed_nodes_match,
       tolerance < 500 AS rounding_error_below_500_rows
  FROM e;

-- a data-modifying query leaves nothing behind
CREATE TABLE diag_t (x int PRIMARY KEY);
SELECT mode, runs FROM timing_source_compare('INSERT INTO diag_t VALUES (1)', 3) WHERE mode <> 'tsc';
SELECT count(*) FROM diag_t;
SELECT mode FROM timing_source_compare(
  'WITH d AS (INSERT INTO diag_t SELECT g FROM generate_series(1, 100) g RETURNING x) SELECT count(*) FROM d', 2)
 WHERE mode <> 'tsc';
SELECT count(*) FROM diag_t;
INSERT INTO diag_t VALUES (1), (2);
SELECT mode FROM timing_source_compare('DELETE FROM diag_t', 2) WHERE mode = 'plain';
SELECT mode FROM timing_source_compare('UPDATE diag_t SET x = x + 10', 2) WHERE mode = 'plain';
SELECT x FROM diag_t ORDER BY x;

-- the session's timing_clock_source is the same afterwards (shown without
-- the host-dependent "(tsc)" or "(system)" that SHOW adds to auto)
SET timing_clock_source = 'system';
SELECT count(*) > 0 AS ran FROM timing_source_compare('SELECT 1', 2);
SELECT split_part(current_setting('timing_clock_source'), ' ', 1) AS timing_clock_source;
-- ... even when the query itself changes it
SELECT count(*) > 0 AS ran FROM timing_source_compare(
  $$SELECT set_config('timing_clock_source', 'auto', false)$$, 2);
SELECT split_part(current_setting('timing_clock_source'), ' ', 1) AS timing_clock_source;
-- ... and after an error
SELECT * FROM timing_source_compare('SELECT 1/0', 2);
SELECT split_part(current_setting('timing_clock_source'), ' ', 1) AS timing_clock_source;
-- ... and when the error is caught by the caller: our subtransaction is
-- gone, the caller's handler and what follows work normally
DO $$
BEGIN
  PERFORM * FROM timing_source_compare('SELECT 1/0', 2);
EXCEPTION WHEN division_by_zero THEN
  RAISE NOTICE 'caught "%", timing_clock_source = %', SQLERRM,
    current_setting('timing_clock_source');
END
$$;
SELECT split_part(current_setting('timing_clock_source'), ' ', 1) AS timing_clock_source;
-- ... and inside a transaction, with a savepoint rolled back
BEGIN;
SET LOCAL timing_clock_source = 'auto';
SAVEPOINT s;
SELECT * FROM timing_source_compare('SELECT * FROM diag_no_such_table', 1);
ROLLBACK TO SAVEPOINT s;
SELECT split_part(current_setting('timing_clock_source'), ' ', 1) AS timing_clock_source;
SELECT count(*) > 0 AS ran FROM timing_source_compare('SELECT 1', 1);
SELECT split_part(current_setting('timing_clock_source'), ' ', 1) AS timing_clock_source;
COMMIT;
SELECT split_part(current_setting('timing_clock_source'), ' ', 1) AS timing_clock_source;
-- a session-level SET earlier in the same transaction is kept
BEGIN;
SET timing_clock_source = 'auto';
SELECT count(*) > 0 AS ran FROM timing_source_compare('SELECT 1', 1);
COMMIT;
SELECT split_part(current_setting('timing_clock_source'), ' ', 1) AS timing_clock_source;
SET timing_clock_source = 'system';

-- a cancelled compare (statement_timeout in the middle of a run)
SET statement_timeout = '200ms';
SELECT * FROM timing_source_compare('SELECT pg_sleep(5)', 1);
RESET statement_timeout;
SELECT split_part(current_setting('timing_clock_source'), ' ', 1) AS timing_clock_source;
SELECT count(*) FROM diag_t;

RESET timing_clock_source;
DROP TABLE diag_t;

-- every mode says which EXPLAIN options it used: what a user of this
-- major gets by default (BUFFERS on from 18)
SELECT count(*) FILTER (WHERE mode = 'plain' AND explain_options IS NULL) AS plain_has_none,
       bool_and(explain_options ~ ('; BUFFERS ' ||
                CASE WHEN current_setting('server_version_num')::int >= 180000 THEN 'on' ELSE 'off' END
                || ' \(the default\)'))
           FILTER (WHERE mode <> 'plain') AS buffers_default_named,
       bool_and(explain_options ~ '^ANALYZE, TIMING OFF;') FILTER (WHERE mode = 'timing off') AS off_named
  FROM timing_source_compare('SELECT 1', 1);
