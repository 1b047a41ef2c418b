/* timing_source--1.3--1.4.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION timing_source UPDATE TO '1.4'" to load this file. \quit

--
-- timing_source_compare(): the top node's estimated instrumentation cost
-- (top_overhead_ms).  A new OUT column changes the result type, so the
-- function is dropped and created again, with its grants.
--
DROP FUNCTION timing_source_compare(text, int);

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
    -- 1.4: the top node's estimated instrumentation cost (exact modes)
    OUT top_overhead_ms numeric)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'timing_source_compare'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE ROWS 4;

COMMENT ON FUNCTION timing_source_compare(text, int) IS
'Runs a query plain, under EXPLAIN ANALYZE with TIMING OFF, and with the system and tsc clock sources, interleaved, each run in a rolled-back subtransaction; explain_options says which EXPLAIN options each mode used; top_overhead_ms is the top node''s estimated instrumentation cost where timed exactly through the wrappers';

REVOKE EXECUTE ON FUNCTION timing_source_compare(text, int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION timing_source_compare(text, int) TO pg_monitor;
