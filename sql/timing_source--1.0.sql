/* timing_source--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION timing_source" to load this file. \quit

--
-- What this process knows about the TSC, and whether this session uses it.
--
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
    OUT reason_unusable text)
RETURNS record
AS 'MODULE_PATHNAME', 'timing_source_tsc'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION timing_source_tsc() IS
'TSC availability, frequency and its source, calibration, CPU features, and why the TSC is unusable when it is';
