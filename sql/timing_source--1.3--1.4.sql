/* timing_source--1.3--1.4.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION timing_source UPDATE TO '1.4'" to load this file. \quit

--
-- Recovery after a watchdog trip: timing_source_tsc() gains
-- recalibrations (run after a trip), recalibrations_agreed (those that
-- confirmed the one before, putting the TSC on probation) and
-- watchdog_recoveries (probations passed: the TSC used again).  A
-- function's result type cannot be changed in place, so it is dropped and
-- created again, with the same privileges.  (A view of yours built on it
-- makes this update fail until the view is dropped; re-create it after.)
--
DROP FUNCTION timing_source_tsc();

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

REVOKE EXECUTE ON FUNCTION timing_source_tsc() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION timing_source_tsc() TO pg_monitor;
