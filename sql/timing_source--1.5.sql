/* timing_source--1.5.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION timing_source" to load this file. \quit

--
-- What this process knows about the TSC, and whether this session uses it.
-- (1.4, recovery after a watchdog trip: recalibrations, recalibrations_agreed
-- and watchdog_recoveries.)
--
CREATE FUNCTION timing_source_tsc(
    OUT available boolean,
    OUT in_use boolean,
    OUT frequency_khz bigint,
    OUT frequency_source text,
    OUT calibrated_khz bigint,
    OUT calibration_ppm numeric,
    OUT invariant boolean,
    OUT rdtscp boolean,
    OUT tsc_adjust boolean,
    OUT hypervisor text,
    OUT os_clocksource text,
    OUT reason_unusable text,
    OUT auto_reason text,
    OUT watchdog_checks bigint,
    OUT watchdog_failures bigint,
    OUT tsc_timed_calls bigint,
    OUT read_ns numeric,
    OUT syscall_ns numeric,
    OUT recalibrations bigint,
    OUT recalibrations_agreed bigint,
    OUT watchdog_recoveries bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'timing_source_tsc'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION timing_source_tsc() IS
'TSC availability, frequency and its source, calibration, CPU features, why the TSC is unusable or not chosen by auto, the watchdog''s and timed calls'' counts, what a counter read and a system call cost at detection, and the recovery after a watchdog trip (re-calibrations, those that agreed, returns to the TSC)';

--
-- Clock diagnostics (src/diagnostics.c): what pg_test_timing prints, as rows.
-- Fractional figures are numeric, rounded as pg_test_timing prints them
-- (percentages to 4 decimals, nanoseconds to 2, milliseconds and parts
-- per million to 3); the counts beside them are exact.
--
CREATE FUNCTION timing_source_histogram(
    source text DEFAULT 'system',
    duration float8 DEFAULT 1.0,
    OUT le_ns bigint,
    OUT pct numeric,
    OUT running_pct numeric,
    OUT count bigint,
    OUT bar text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'timing_source_histogram'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE ROWS 20;

COMMENT ON FUNCTION timing_source_histogram(text, float8) IS
'Reads a clock source (system, rdtscp, rdtsc) back to back for duration seconds; log2 histogram of the differences as in pg_test_timing, with a bar relative to the tallest bucket';

CREATE FUNCTION timing_source_durations(
    source text DEFAULT 'system',
    duration float8 DEFAULT 1.0,
    cutoff float8 DEFAULT 99.99,
    OUT ns bigint,
    OUT pct numeric,
    OUT running_pct numeric,
    OUT count bigint,
    OUT bar text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'timing_source_durations'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE ROWS 50;

COMMENT ON FUNCTION timing_source_durations(text, float8, float8) IS
'Exact differences between back-to-back reads of a clock source, ascending, until the running percentage reaches cutoff; the largest difference last; with a bar relative to the most frequent difference';

CREATE FUNCTION timing_source_test(
    duration float8 DEFAULT 1.0,
    OUT source text,
    OUT loops bigint,
    OUT avg_loop_ns numeric,
    OUT median_ns bigint,
    OUT p99_ns bigint,
    OUT max_ns bigint,
    OUT backwards bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'timing_source_test'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE ROWS 3;

COMMENT ON FUNCTION timing_source_test(float8) IS
'One row per available clock source: loop count, average loop time, median, 99th percentile and largest difference, and readings that went backwards';

CREATE FUNCTION timing_source_calibrate(
    runs int DEFAULT 5,
    OUT run int,
    OUT frequency_khz bigint,
    OUT iterations int,
    OUT elapsed_us numeric,
    OUT converged boolean,
    OUT ppm_vs_in_use numeric)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'timing_source_calibrate'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE ROWS 5;

COMMENT ON FUNCTION timing_source_calibrate(int) IS
'Runs the TSC calibration against CLOCK_MONOTONIC runs times; one row per run, with its deviation from the frequency in use';

CREATE FUNCTION timing_source_report(duration float8 DEFAULT 1.0)
RETURNS SETOF text
AS 'MODULE_PATHNAME', 'timing_source_report'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE ROWS 150;

COMMENT ON FUNCTION timing_source_report(float8) IS
'The pg_test_timing-style report for every available clock source, with the TSC frequency, its source, calibration and whether the TSC is used by default';

CREATE FUNCTION timing_source_compare(
    query text,
    runs int DEFAULT 5,
    OUT mode text,
    OUT runs int,
    OUT min_ms numeric,
    OUT median_ms numeric,
    OUT ratio_vs_off numeric,
    OUT overhead_ns_per_row numeric,
    OUT explain_options text,
    OUT top_margin_pct numeric,
    OUT top_overhead_ms numeric)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'timing_source_compare'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE ROWS 4;

COMMENT ON FUNCTION timing_source_compare(text, int) IS
'Runs a query plain, under EXPLAIN ANALYZE with TIMING OFF, and with the system and tsc clock sources, interleaved, each run in a rolled-back subtransaction; explain_options says which EXPLAIN options each mode used; top_margin_pct, for sampled modes, the median over the runs of the 95% margin of the top node''s total, in percent, NULL unless every run had one; top_overhead_ms, for the exact modes, the median of the top node''s estimated instrumentation cost where timed exactly through the wrappers';

--
-- These functions burn CPU and reveal host details: monitoring roles only.
--
REVOKE EXECUTE ON FUNCTION timing_source_tsc() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION timing_source_histogram(text, float8) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION timing_source_durations(text, float8, float8) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION timing_source_test(float8) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION timing_source_calibrate(int) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION timing_source_report(float8) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION timing_source_compare(text, int) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION timing_source_tsc() TO pg_monitor;
GRANT EXECUTE ON FUNCTION timing_source_histogram(text, float8) TO pg_monitor;
GRANT EXECUTE ON FUNCTION timing_source_durations(text, float8, float8) TO pg_monitor;
GRANT EXECUTE ON FUNCTION timing_source_test(float8) TO pg_monitor;
GRANT EXECUTE ON FUNCTION timing_source_calibrate(int) TO pg_monitor;
GRANT EXECUTE ON FUNCTION timing_source_report(float8) TO pg_monitor;
GRANT EXECUTE ON FUNCTION timing_source_compare(text, int) TO pg_monitor;

--
-- timing_source_explain_nodes(): one row per plan node of one EXPLAIN
-- ANALYZE-like run, with the interval of sampled estimates (1.4).
--
CREATE FUNCTION timing_source_explain_nodes(
    query text,
    sample_every int DEFAULT NULL,
    OUT node_id int,
    OUT parent_id int,
    OUT depth int,
    OUT node_type text,
    OUT relation text,
    OUT loops numeric,
    OUT rows numeric,
    OUT startup_ms numeric,
    OUT total_ms numeric,
    OUT sample_every int,
    OUT sampled_calls bigint,
    OUT margin_ms numeric,
    OUT estimate_reliable boolean,
    OUT overhead_ms numeric,
    OUT execution_ms numeric)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'timing_source_explain_nodes'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 10;

COMMENT ON FUNCTION timing_source_explain_nodes(text, int) IS
'Runs a query once as EXPLAIN ANALYZE would, in a rolled-back subtransaction, and returns one row per plan node (numbered in pre-order from 1): loops, rows, startup_ms and total_ms summed over all loops (parallel workers included), for sampled nodes the 95% margin of the total, for exactly timed nodes overhead_ms, the estimated instrumentation cost in total_ms (already removed from it when timing_source.subtract_overhead is on); sample_every NULL uses the session''s timing_source.sample_every';

REVOKE EXECUTE ON FUNCTION timing_source_explain_nodes(text, int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION timing_source_explain_nodes(text, int) TO pg_monitor;

--
-- Per-node statistics across executions (1.5): timing_source.track_nodes
-- keeps, per user, database, query id and plan id, each plan node's sums;
-- timing_source_plan_nodes shows them.
--
CREATE FUNCTION timing_source_plan_nodes(
    OUT userid oid,
    OUT dbid oid,
    OUT queryid bigint,
    OUT planid bigint,
    OUT node_id int,
    OUT parent_node_id int,
    OUT node_type text,
    OUT relation text,
    OUT executions bigint,
    OUT loops double precision,
    OUT rows double precision,
    OUT total_time_ms double precision,
    OUT startup_time_ms double precision,
    OUT calls bigint,
    OUT sampled_calls bigint,
    OUT sampled int,
    OUT clock text,
    OUT shared_blks_hit bigint,
    OUT shared_blks_read bigint,
    OUT timed_executions bigint,
    OUT plan_nodes int,
    OUT counted_executions bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'timing_source_plan_nodes'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION timing_source_plan_nodes() IS
'Per-node statistics of tracked statements (timing_source.track_nodes), one row per plan node: pg_read_all_stats members see every user''s, others their own';

CREATE VIEW timing_source_plan_nodes AS
    SELECT * FROM timing_source_plan_nodes();

GRANT SELECT ON timing_source_plan_nodes TO PUBLIC;

COMMENT ON VIEW timing_source_plan_nodes IS
'Per-node statistics of tracked statements (timing_source.track_nodes): executions exact; loops and rows exact over counted_executions (all of them unless timing_source.track_every > 1); times sampled estimates where sampled > 1, NULL where no execution was timed';

CREATE FUNCTION timing_source_plan_nodes_reset(queryid bigint DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'timing_source_plan_nodes_reset'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION timing_source_plan_nodes_reset(bigint) IS
'Discards the per-node statistics of every plan, or of one query id''s plans; superuser only';

REVOKE EXECUTE ON FUNCTION timing_source_plan_nodes_reset(bigint) FROM PUBLIC;

CREATE FUNCTION timing_source_plan_nodes_info(
    OUT dealloc bigint,
    OUT not_tracked bigint,
    OUT entries bigint,
    OUT max int,
    OUT stats_reset timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'timing_source_plan_nodes_info'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION timing_source_plan_nodes_info() IS
'Per-node statistics: plans evicted (dealloc), executions not (fully) kept, plans kept, timing_source.track_max, and the last full reset';

CREATE FUNCTION timing_source_plan(
    planid bigint,
    OUT node_id int,
    OUT label text,
    OUT rows_per_execution double precision,
    OUT share_of_plan double precision,
    OUT bar text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'timing_source_plan'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION timing_source_plan(bigint) IS
'One tracked plan as indented rows: each node''s rows per execution and its share of the top node''s time, as a bar';
