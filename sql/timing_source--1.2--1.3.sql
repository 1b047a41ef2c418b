/* timing_source--1.2--1.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION timing_source UPDATE TO '1.3'" to load this file. \quit

--
-- timing_source_tsc() gains read_ns and syscall_ns: what an ordered
-- counter read and a trivial system call cost when the TSC was detected,
-- the figures 'auto' judges a trapped (emulated) counter by.  A function's
-- result type cannot be changed in place, so it is dropped and created
-- again, with the same privileges.  (A view of yours built on it makes
-- this update fail until the view is dropped; re-create it after.)
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
    OUT syscall_ns numeric)
RETURNS record
AS 'MODULE_PATHNAME', 'timing_source_tsc'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION timing_source_tsc() IS
'TSC availability, frequency and its source, calibration, CPU features, why the TSC is unusable or not chosen by auto, the watchdog''s and timed calls'' counts, and what a counter read and a system call cost at detection';

REVOKE EXECUTE ON FUNCTION timing_source_tsc() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION timing_source_tsc() TO pg_monitor;
