--
-- Which clock timed the plan nodes: timing_source_tsc().tsc_timed_calls
-- counts every plan node call timed with the TSC (server-wide here, since
-- the library is preloaded; parallel workers included).  A wrapper that
-- read the system clock, or nodes left on core's path, would leave it
-- unchanged.
--
-- One output for every host: the counts are compared with what the host's
-- case requires.  auto_tsc: auto times with the TSC (it is usable, and
-- nothing, such as a kernel that does not trust it, keeps auto off it);
-- then every call is counted, elsewhere none is ever counted.
--
-- PostgreSQL 19 and later: timing_clock_source is core's, and the
-- extension's wrappers (timing_source.node_wrappers, on by default) read
-- core's clock; calls are counted where that is the TSC, as here (this
-- takes core's auto to resolve as the extension's would).  With
-- timing_source.node_wrappers off core's own instrumentation runs and no
-- call may be counted.
SELECT current_setting('server_version_num')::int >= 190000 AS core_owns_setting \gset
CREATE TABLE ts_calls AS SELECT g AS id FROM generate_series(1, 10000) g;
VACUUM ANALYZE ts_calls;
SET max_parallel_workers_per_gather = 0;
SELECT available AND coalesce(auto_reason, '') = '' AS auto_tsc FROM timing_source_tsc() \gset

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
SELECT ts_calls_delta() = CASE WHEN :'auto_tsc' THEN 10003 ELSE 0 END AS auto_serial_calls_as_expected,
       (SELECT in_use FROM timing_source_tsc()) = :'auto_tsc' AS auto_uses_tsc_as_expected;

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
SELECT CASE WHEN :'auto_tsc' THEN d BETWEEN 10000 + 3 AND 10000 + 4 * 8 + 3
            ELSE d = 0 END AS auto_parallel_calls_every_row_workers_included
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
SELECT ts_calls_delta() = CASE WHEN :'auto_tsc' THEN 10003 ELSE 0 END AS auto_explain_calls_as_expected;
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
-- call counted, on any clock); back on, every call is counted again.
-- 15-18 have no such switch: the same runs with the system clock count no
-- call, and back on auto every call is counted again.
SET timing_clock_source = 'auto';
\if :core_owns_setting
SET timing_source.node_wrappers = off;
\else
SET timing_clock_source = 'system';
\endif
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
\if :core_owns_setting
RESET timing_source.node_wrappers;
\else
SET timing_clock_source = 'auto';
\endif
SELECT ts_explain('SELECT count(*) FROM ts_calls');
SELECT ts_calls_delta() = CASE WHEN :'auto_tsc' THEN 10003 ELSE 0 END AS wrappers_on_again_calls_as_expected;

RESET timing_clock_source;
DROP FUNCTION ts_calls_delta();
DROP FUNCTION ts_explain(text);
DROP TABLE ts_calls;
