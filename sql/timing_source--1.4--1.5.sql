/* timing_source--1.4--1.5.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION timing_source UPDATE TO '1.5'" to load this file. \quit

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
