--
-- Which clock timed the plan nodes: timing_source_tsc().tsc_timed_calls
-- counts every plan node call timed with the TSC (server-wide here, since
-- the library is preloaded; parallel workers included).  A wrapper that
-- read the system clock, or nodes left on core's path, would leave it
-- unchanged.
--
-- tsc_calls.out is for a host where the TSC is usable, tsc_calls_1.out
-- for one where it is not (no call is ever counted there).
--
-- PostgreSQL 19 and later: timing_clock_source is core's, and the
-- extension's wrappers (timing_source.node_wrappers, on by default) read
-- core's clock; calls are counted where that is the TSC, as here
-- (tsc_calls_2.out is for a host where core's "auto" resolves to the
-- TSC).  With timing_source.node_wrappers off core's own instrumentation
-- runs and no call may be counted.
SELECT current_setting('server_version_num')::int >= 190000 AS core_owns_setting;
CREATE TABLE ts_calls AS SELECT g AS id FROM generate_series(1, 10000) g;
VACUUM ANALYZE ts_calls;
SET max_parallel_workers_per_gather = 0;
SELECT available AS tsc_available FROM timing_source_tsc();

-- calls counted since the previous call of this function
CREATE FUNCTION ts_calls_delta() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    now_calls bigint;
    delta bigint;
BEGIN
    SELECT tsc_timed_calls INTO now_calls FROM timing_source_tsc();
    delta := now_calls - coalesce(current_setting('ts_test.calls', true), '0')::bigint;
    PERFORM set_config('ts_test.calls', now_calls::text, false);
    RETURN delta;
END
$$;

-- runs EXPLAIN, discarding its output
CREATE FUNCTION ts_explain(q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF) ' || q LOOP
    END LOOP;
END
$$;

SELECT ts_calls_delta() IS NOT NULL AS baseline_taken;

-- serial: Seq Scan called 10,000 + 1 times, Aggregate twice
SET timing_clock_source = 'auto';
SELECT ts_explain('SELECT count(*) FROM ts_calls');
SELECT ts_calls_delta() AS auto_serial_calls,
       (SELECT in_use FROM timing_source_tsc()) AS auto_uses_tsc;

SET timing_clock_source = 'system';
SELECT ts_explain('SELECT count(*) FROM ts_calls');
SELECT ts_calls_delta() AS system_serial_calls;

-- without the timer (TIMING OFF) nothing is timed, on any clock
SET timing_clock_source = 'auto';
SELECT ts_calls_delta() IS NOT NULL AS baseline_taken;
DO $$
DECLARE r record;
BEGIN
    FOR r IN EXPLAIN (ANALYZE, TIMING OFF) SELECT count(*) FROM ts_calls LOOP
    END LOOP;
END
$$;
SELECT ts_calls_delta() AS timing_off_calls;

-- parallel, the leader not participating: every scan call happens in a
-- worker, so only workers bound to the TSC can account for them
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT ts_calls_delta() IS NOT NULL AS baseline_taken;
SELECT ts_explain('SELECT count(*) FROM ts_calls');
SELECT CASE WHEN d = 0 THEN 'none'
            WHEN d BETWEEN 10000 + 3 AND 10000 + 4 * 8 + 3 THEN 'every row, workers included'
            ELSE 'unexpected: ' || d END AS auto_parallel_calls
  FROM ts_calls_delta() d;
SET timing_clock_source = 'system';
SELECT ts_explain('SELECT count(*) FROM ts_calls');
SELECT ts_calls_delta() AS system_parallel_calls;
RESET parallel_leader_participation;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SET max_parallel_workers_per_gather = 0;

-- auto_explain with log_analyze and log_timing goes through the same path
-- (auto_explain is switched off around each reading of the count, so that
-- the reading itself is not timed)
LOAD 'auto_explain';
SET auto_explain.log_analyze = on;
SET auto_explain.log_timing = on;
SET timing_clock_source = 'auto';
SELECT ts_calls_delta() IS NOT NULL AS baseline_taken;
SET auto_explain.log_min_duration = 0;
SELECT count(*) FROM ts_calls;
SET auto_explain.log_min_duration = -1;
SELECT ts_calls_delta() AS auto_explain_calls;
SET auto_explain.log_timing = off;
SET auto_explain.log_min_duration = 0;
SELECT count(*) FROM ts_calls;
SET auto_explain.log_min_duration = -1;
SELECT ts_calls_delta() AS auto_explain_no_timing_calls;
SET auto_explain.log_timing = on;
SET timing_clock_source = 'system';
SET auto_explain.log_min_duration = 0;
SELECT count(*) FROM ts_calls;
SET auto_explain.log_min_duration = -1;
SELECT ts_calls_delta() AS auto_explain_system_calls;
RESET auto_explain.log_analyze;
RESET auto_explain.log_timing;

-- 19+: with timing_source.node_wrappers off core times every node (no
-- call counted, on any clock); back on, every call is counted again
SELECT current_setting('server_version_num')::int >= 190000 AS core_owns_setting \gset
\if :core_owns_setting
SET timing_clock_source = 'auto';
SET timing_source.node_wrappers = off;
SELECT ts_calls_delta() IS NOT NULL AS baseline_taken;
SELECT ts_explain('SELECT count(*) FROM ts_calls');
SELECT ts_calls_delta() AS wrappers_off_calls;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT ts_explain('SELECT count(*) FROM ts_calls');
SELECT ts_calls_delta() AS wrappers_off_parallel_calls;
RESET parallel_leader_participation;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SET max_parallel_workers_per_gather = 0;
SET auto_explain.log_analyze = on;
SET auto_explain.log_min_duration = 0;
SELECT count(*) FROM ts_calls;
SET auto_explain.log_min_duration = -1;
SELECT ts_calls_delta() AS wrappers_off_auto_explain_calls;
RESET auto_explain.log_analyze;
RESET timing_source.node_wrappers;
SELECT ts_explain('SELECT count(*) FROM ts_calls');
SELECT ts_calls_delta() AS wrappers_on_again_calls;
\endif

RESET timing_clock_source;
DROP FUNCTION ts_calls_delta();
DROP FUNCTION ts_explain(text);
DROP TABLE ts_calls;
