/* timing_source--1.3--1.4.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION timing_source UPDATE TO '1.4'" to load this file. \quit

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
'Runs a query once as EXPLAIN ANALYZE would, in a rolled-back subtransaction, and returns one row per plan node (numbered in pre-order from 1): loops, rows, startup_ms and total_ms summed over all loops (parallel workers included), for sampled nodes the 95% margin of the total; sample_every NULL uses the session''s timing_source.sample_every';

REVOKE EXECUTE ON FUNCTION timing_source_explain_nodes(text, int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION timing_source_explain_nodes(text, int) TO pg_monitor;

--
-- timing_source_compare(): top_margin_pct, the margin of a sampled mode's
-- top node (1.4).  A new OUT column changes the result type: drop and
-- re-create, with the privileges of before.
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
    OUT top_margin_pct numeric)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'timing_source_compare'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE ROWS 4;

COMMENT ON FUNCTION timing_source_compare(text, int) IS
'Runs a query plain, under EXPLAIN ANALYZE with TIMING OFF, and with the system and tsc clock sources, interleaved, each run in a rolled-back subtransaction; explain_options says which EXPLAIN options each mode used; top_margin_pct, for sampled modes, the median over the runs of the 95% margin of the top node''s total, in percent, NULL unless every run had one';

REVOKE EXECUTE ON FUNCTION timing_source_compare(text, int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION timing_source_compare(text, int) TO pg_monitor;
