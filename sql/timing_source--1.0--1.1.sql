/* timing_source--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION timing_source UPDATE TO '1.1'" to load this file. \quit

--
-- timing_source_tsc() gains four columns: why "auto" does not choose the
-- TSC, the per-query watchdog's checks and failures, and the number of
-- plan node calls timed with the TSC.  timing_source_compare() gains
-- explain_options.  A function's result type cannot be changed in place,
-- so both are dropped and created again, with the same privileges.
--
DROP FUNCTION timing_source_tsc();

CREATE FUNCTION timing_source_tsc(
    OUT available boolean,
    OUT in_use boolean,
    OUT frequency_khz bigint,
    OUT frequency_source text,
    OUT calibrated_khz bigint,
    OUT calibration_ppm float8,
    OUT invariant boolean,
    OUT rdtscp boolean,
    OUT tsc_adjust boolean,
    OUT hypervisor text,
    OUT os_clocksource text,
    OUT reason_unusable text,
    OUT auto_reason text,
    OUT watchdog_checks bigint,
    OUT watchdog_failures bigint,
    OUT tsc_timed_calls bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'timing_source_tsc'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION timing_source_tsc() IS
'TSC availability, frequency and its source, calibration, CPU features, why the TSC is unusable or not chosen by auto, and the watchdog''s and timed calls'' counts';

REVOKE EXECUTE ON FUNCTION timing_source_tsc() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION timing_source_tsc() TO pg_monitor;

DROP FUNCTION timing_source_compare(text, int);

CREATE FUNCTION timing_source_compare(
    query text,
    runs int DEFAULT 5,
    OUT mode text,
    OUT runs int,
    OUT min_ms float8,
    OUT median_ms float8,
    OUT ratio_vs_off float8,
    OUT overhead_ns_per_row float8,
    OUT explain_options text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'timing_source_compare'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE ROWS 4;

COMMENT ON FUNCTION timing_source_compare(text, int) IS
'Runs a query plain, under EXPLAIN ANALYZE with TIMING OFF, and with the system and tsc clock sources, interleaved, each run in a rolled-back subtransaction; explain_options says which EXPLAIN options each mode used';

REVOKE EXECUTE ON FUNCTION timing_source_compare(text, int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION timing_source_compare(text, int) TO pg_monitor;
