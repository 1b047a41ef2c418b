--
-- Per-node statistics across executions (timing_source.track_nodes):
-- exact executions, rows and loops; the plan id's stability and change;
-- reset; privileges; argument errors; EXPLAIN ANALYZE unchanged by
-- tracking; how the clock is reported where the wrappers sample and
-- where they cannot.  The server is preloaded (the harness's setting);
-- track_nodes is superuser-set, so it is set per session here.
--
SELECT name, setting, context FROM pg_settings
 WHERE name LIKE 'timing_source.track%' ORDER BY name;

CREATE TABLE ts_track_t AS SELECT g AS id, g % 10 AS k FROM generate_series(1, 1000) g;
CREATE INDEX ts_track_t_id ON ts_track_t (id);
ANALYZE ts_track_t;

-- the rows of one query's plans, by its text (the one statement on the
-- table that ran since the reset)
CREATE FUNCTION ts_track_rows() RETURNS TABLE (node_id int, parent_node_id int,
    node_type text, relation text, executions bigint, loops float8, rows float8)
LANGUAGE sql AS $$
    SELECT node_id, parent_node_id, node_type, relation, executions, loops, rows
      FROM timing_source_plan_nodes
     WHERE queryid IN (SELECT queryid FROM timing_source_plan_nodes
                        WHERE relation = 'public.ts_track_t')
     ORDER BY planid, node_id
$$;

-- off by default: nothing is kept
SELECT timing_source_plan_nodes_reset();
SELECT count(*) FROM ts_track_t WHERE k = 3;
SELECT count(*) AS untracked FROM timing_source_plan_nodes;

SET timing_source.track_nodes = top;
SELECT timing_source_plan_nodes_reset();
SELECT count(*) FROM ts_track_t WHERE k = 3;
SELECT count(*) FROM ts_track_t WHERE k = 3;
-- another constant: the same query id and plan id
SELECT count(*) FROM ts_track_t WHERE k = 7;
-- three executions, the exact rows of each node (100 rows a run)
SELECT * FROM ts_track_rows();
SELECT count(DISTINCT planid) AS plans, count(DISTINCT queryid) AS queries,
       bool_and(queryid <> 0) AS has_queryid, bool_and(planid <> 0) AS has_planid,
       bool_and(calls = rows + loops) AS calls_counted,
       bool_and(sampled_calls IS NULL OR sampled_calls <= calls) AS sampled_le_calls,
       bool_and(plan_nodes = 2) AS plan_nodes
  FROM timing_source_plan_nodes WHERE relation = 'public.ts_track_t';

-- another plan for the same query: a new plan id beside the first
SELECT count(*) FROM ts_track_t WHERE id < 50;
SELECT count(*) FROM ts_track_t WHERE id < 50;
SET enable_indexscan = off;
SET enable_indexonlyscan = off;
SET enable_bitmapscan = off;
SELECT count(*) FROM ts_track_t WHERE id < 50;
RESET enable_indexscan;
RESET enable_indexonlyscan;
RESET enable_bitmapscan;
SELECT planid AS index_planid, queryid AS index_queryid
  FROM timing_source_plan_nodes
 WHERE node_type LIKE 'Index%Scan' AND relation = 'public.ts_track_t' \gset
SELECT planid = :index_planid AS index_plan, node_type, executions, rows
  FROM timing_source_plan_nodes
 WHERE queryid = :index_queryid
 ORDER BY planid = :index_planid, node_id;
SELECT count(DISTINCT planid) AS plans_of_query
  FROM timing_source_plan_nodes WHERE queryid = :index_queryid;

-- the plan as indented rows
SELECT p.node_id, p.label, p.rows_per_execution,
       (p.share_of_plan IS NULL) = (n.total_time_ms IS NULL) AS share_iff_timed,
       p.node_id > 1 OR p.share_of_plan IS NULL OR p.share_of_plan = 1 AS top_is_whole,
       coalesce(length(p.bar) <= 40, p.share_of_plan IS NULL) AS bar_fits
  FROM timing_source_plan(:index_planid) p
  JOIN timing_source_plan_nodes n ON n.planid = :index_planid AND n.node_id = p.node_id
 ORDER BY p.node_id;

-- arguments: NULL is an error, an unknown plan id no rows
SELECT ts_error_of('SELECT * FROM timing_source_plan(NULL)');
SELECT count(*) AS unknown_plan FROM timing_source_plan(12345);

-- the clock, honestly: where the wrappers sample (through 18 the TSC, or
-- the system clock in a session without it; on 19 either of core's clocks
-- while timing_source.node_wrappers is on), tracked statements are timed,
-- sampled 1 in track_sample_every calls, and the view names the clock;
-- elsewhere (15-18, a build without a counter) rows and loops are counted
-- without a clock and every time is NULL
SELECT bool_and((clock IS NULL) = (total_time_ms IS NULL)
            AND (clock IS NULL) = (startup_time_ms IS NULL)
            AND (clock IS NULL) = (sampled IS NULL)) AS consistent,
       bool_and(CASE WHEN NOT ts_wrappers_sample()
                     THEN clock IS NULL AND timed_executions = 0
                     WHEN current_setting('server_version_num')::int < 190000
                     THEN clock = (SELECT CASE WHEN in_use THEN 'tsc' ELSE 'system' END
                                     FROM timing_source_tsc())
                          AND sampled = 64 AND timed_executions = executions
                     ELSE clock IS NOT NULL AND sampled = 64
                END) AS clock_as_expected
  FROM timing_source_plan_nodes WHERE relation = 'public.ts_track_t';

-- reset of one query id, then of all
SELECT count(DISTINCT queryid) > 1 AS several_queries FROM timing_source_plan_nodes;
SELECT timing_source_plan_nodes_reset(queryid)
  FROM (VALUES (:index_queryid)) x(queryid);
SELECT count(*) AS query_rows_left FROM timing_source_plan_nodes WHERE queryid = :index_queryid;
SELECT count(*) > 0 AS others_left FROM timing_source_plan_nodes WHERE relation = 'public.ts_track_t';
SELECT stats_reset AS before_reset FROM timing_source_plan_nodes_info() \gset
SELECT timing_source_plan_nodes_reset();
SELECT count(*) <= 1 AS at_most_the_info_query FROM timing_source_plan_nodes;
SELECT dealloc, not_tracked, entries <= 2 AS few, max, stats_reset > :'before_reset' AS reset_later
  FROM timing_source_plan_nodes_info();

-- EXPLAIN ANALYZE prints the same with tracking on and off (its own
-- options, not the tracking's), and its figures are added
CREATE FUNCTION ts_track_explain(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	line text;
	result text := '';
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF) ' || q LOOP
		result := result || regexp_replace(line, 'time=[0-9.]+\.\.[0-9.]+ ', 'time=X ') || E'\n';
	END LOOP;
	RETURN result;
END
$$;
SET timing_source.track_nodes = none;
SELECT ts_track_explain('SELECT count(*) FROM ts_track_t WHERE k = 3') AS untracked \gset
-- tracking's own options, buffers included, stay out of it
SET timing_source.track_nodes = 'all';
SET timing_source.track_buffers = on;
SELECT timing_source_plan_nodes_reset();
SELECT ts_track_explain('SELECT count(*) FROM ts_track_t WHERE k = 3') AS tracked \gset
RESET timing_source.track_buffers;
-- the explained execution was timed as EXPLAIN asked, every call
SELECT bool_and(sampled = 1 AND clock IS NOT NULL AND sampled_calls = 0) AS explain_timed_exactly
  FROM timing_source_plan_nodes WHERE relation = 'public.ts_track_t';
SELECT :'untracked' = :'tracked' AS explain_unchanged;
-- (what it printed: a plan, not an error)
SELECT :'tracked' ~ '^Aggregate \(actual time=X rows=1' AS explained;
-- explained, then run untracked-by-EXPLAIN: two executions of one plan
SELECT count(*) FROM ts_track_t WHERE k = 3;
SELECT node_type, executions, rows, loops FROM timing_source_plan_nodes
 WHERE queryid IN (SELECT queryid FROM timing_source_plan_nodes WHERE relation = 'public.ts_track_t'
                    AND executions = 2)
 ORDER BY node_id;

-- top vs all: a SQL function's statement is nested
CREATE FUNCTION ts_track_f() RETURNS bigint LANGUAGE sql
    AS 'SELECT count(*) FROM ts_track_t WHERE k < 5';
SET timing_source.track_nodes = top;
SELECT timing_source_plan_nodes_reset();
SELECT ts_track_f();
SELECT count(*) AS nested_top FROM timing_source_plan_nodes WHERE relation = 'public.ts_track_t';
SET timing_source.track_nodes = 'all';
SELECT ts_track_f();
SELECT rows AS nested_all FROM timing_source_plan_nodes WHERE relation = 'public.ts_track_t';
-- so are the statements of a DO block and of a procedure, as
-- pg_stat_statements counts them
CREATE PROCEDURE ts_track_proc() LANGUAGE plpgsql
    AS $$ BEGIN PERFORM count(*) FROM ts_track_t WHERE k < 4; END $$;
SET timing_source.track_nodes = top;
SELECT timing_source_plan_nodes_reset();
CALL ts_track_proc();
DO $$ BEGIN PERFORM count(*) FROM ts_track_t WHERE k < 3; END $$;
SELECT count(*) AS do_call_top FROM timing_source_plan_nodes WHERE relation = 'public.ts_track_t';
SET timing_source.track_nodes = 'all';
CALL ts_track_proc();
DO $$ BEGIN PERFORM count(*) FROM ts_track_t WHERE k < 3; END $$;
-- (one query id: the two differ in a constant only)
SELECT executions AS do_call_all, rows
  FROM timing_source_plan_nodes WHERE relation = 'public.ts_track_t';

-- privileges: others' rows only for pg_read_all_stats; reset superuser only
SET timing_source.track_nodes = top;
SELECT timing_source_plan_nodes_reset();
CREATE ROLE regress_ts_track_user;
CREATE ROLE regress_ts_track_stats IN ROLE pg_read_all_stats;
GRANT SELECT ON ts_track_t TO regress_ts_track_user, regress_ts_track_stats;
SELECT count(*) FROM ts_track_t WHERE id < 10;
SELECT planid AS su_planid FROM timing_source_plan_nodes
 WHERE relation = 'public.ts_track_t' \gset
SET ROLE regress_ts_track_user;
SELECT count(*) FROM ts_track_t WHERE k = 2;
SELECT count(*) AS own_rows, bool_and(userid = 'regress_ts_track_user'::regrole) AS only_own
  FROM timing_source_plan_nodes WHERE relation = 'public.ts_track_t';
-- no rows of a plan not one's own
SELECT count(*) AS others_plan FROM timing_source_plan(:su_planid);
SELECT ts_error_of('SELECT timing_source_plan_nodes_reset()');
SELECT ts_error_of('SELECT timing_source_plan_nodes_reset(1)');
RESET ROLE;
-- the function checks too, should EXECUTE be granted
GRANT EXECUTE ON FUNCTION timing_source_plan_nodes_reset(bigint) TO regress_ts_track_user;
SET ROLE regress_ts_track_user;
SELECT ts_error_of('SELECT timing_source_plan_nodes_reset()');
RESET ROLE;
REVOKE EXECUTE ON FUNCTION timing_source_plan_nodes_reset(bigint) FROM regress_ts_track_user;
SET ROLE regress_ts_track_stats;
SELECT count(DISTINCT userid) AS users_seen
  FROM timing_source_plan_nodes WHERE relation = 'public.ts_track_t';
SELECT count(*) > 0 AS others_plan_for_stats FROM timing_source_plan(:su_planid);
SELECT ts_error_of('SELECT timing_source_plan_nodes_reset()');
RESET ROLE;
SELECT count(DISTINCT userid) AS users_seen_by_superuser
  FROM timing_source_plan_nodes WHERE relation = 'public.ts_track_t';
-- a NOINHERIT member of pg_read_all_stats has not its privileges
CREATE ROLE regress_ts_track_noinherit NOINHERIT IN ROLE pg_read_all_stats;
SET ROLE regress_ts_track_noinherit;
SELECT count(*) AS rows_seen_noinherit
  FROM timing_source_plan_nodes WHERE relation = 'public.ts_track_t';
SELECT count(*) AS plan_seen_noinherit FROM timing_source_plan(:su_planid);
RESET ROLE;
DROP ROLE regress_ts_track_noinherit;

-- EXPLAIN without ANALYZE runs nothing, BUFFERS or not: no execution
-- (its output is discarded, it shows the planner's buffers)
SET timing_source.track_nodes = 'all';
SELECT timing_source_plan_nodes_reset();
DO $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (BUFFERS) SELECT count(*) FROM ts_track_t WHERE k = 3' LOOP
	END LOOP;
	FOR line IN EXECUTE 'EXPLAIN SELECT count(*) FROM ts_track_t WHERE k = 3' LOOP
	END LOOP;
END
$$;
SELECT count(*) AS explain_only_kept
  FROM timing_source_plan_nodes WHERE relation = 'public.ts_track_t';

-- without a query id (compute_query_id off) statements are not told
-- apart: nothing is kept, as pg_stat_statements keeps nothing
SET timing_source.track_nodes = top;
SET compute_query_id = off;
SELECT timing_source_plan_nodes_reset();
SELECT count(*) FROM ts_track_t WHERE k = 3;
RESET compute_query_id;
SELECT count(*) AS kept_without_queryid
  FROM timing_source_plan_nodes WHERE relation = 'public.ts_track_t';

-- partitions pruned when the executor starts (a generic plan's
-- parameter): one plan id, whose executions hold different partitions'
-- scans.  Each scan's figures stay its own: the entry holds the first
-- execution's nodes; a later one with a scan it lacks adds what it
-- has in common and is counted in not_tracked.
SET timing_source.track_nodes = top;
CREATE TABLE ts_track_p (k int) PARTITION BY LIST (k);
CREATE TABLE ts_track_p1 PARTITION OF ts_track_p FOR VALUES IN (1);
CREATE TABLE ts_track_p2 PARTITION OF ts_track_p FOR VALUES IN (2);
INSERT INTO ts_track_p SELECT 1 + (g % 4 = 0)::int FROM generate_series(1, 1000) g;
ANALYZE ts_track_p;
SET plan_cache_mode = force_generic_plan;
PREPARE ts_track_q(int) AS SELECT count(*) FROM ts_track_p WHERE k = $1;
SELECT timing_source_plan_nodes_reset();
EXECUTE ts_track_q(1);
EXECUTE ts_track_q(2);
EXECUTE ts_track_q(1);
SELECT node_id, node_type, relation, executions, loops, rows
  FROM timing_source_plan_nodes
 WHERE queryid IN (SELECT queryid FROM timing_source_plan_nodes WHERE relation LIKE 'public.ts_track_p%')
 ORDER BY node_id;
SELECT not_tracked FROM timing_source_plan_nodes_info();
DEALLOCATE ts_track_q;
RESET plan_cache_mode;
DROP TABLE ts_track_p;

-- timing_source.track_every: the nodes of a random 1 in N executions are
-- counted, every execution is.  At 1 in 2 over 200 executions, fewer than
-- 60 or more than 140 counted is a 1 in 10^8 chance.  Each node's figures
-- are exactly those of the counted executions: rows per execution as one
-- execution has them, one loop each.
-- (a loop in a DO block, its statements tracked as nested ones)
SET timing_source.track_nodes = 'all';
SELECT timing_source_plan_nodes_reset();
SET timing_source.track_every = 2;
DO $$
BEGIN
	FOR i IN 1..200 LOOP
		EXECUTE 'SELECT count(*) FROM ts_track_t WHERE k = 3';
	END LOOP;
END
$$;
SELECT executions, counted_executions BETWEEN 60 AND 140 AS about_half,
       bool_and(loops = counted_executions) AS loops_of_counted,
       bool_and(calls = rows + loops) AS calls_counted
  FROM timing_source_plan_nodes WHERE relation = 'public.ts_track_t'
 GROUP BY executions, counted_executions;
SELECT planid AS every_planid FROM timing_source_plan_nodes
 WHERE relation = 'public.ts_track_t' \gset
SELECT node_id, label, rows_per_execution FROM timing_source_plan(:every_planid);
-- at 1 in 10^9, 20 executions: none counted (a 1 in 5 * 10^7 chance
-- otherwise), so no rows per execution; an explained one is counted
-- whatever the setting, exactly timed as EXPLAIN times it
SET timing_source.track_every = 1000000000;
SELECT timing_source_plan_nodes_reset();
DO $$
BEGIN
	FOR i IN 1..20 LOOP
		EXECUTE 'SELECT count(*) FROM ts_track_t WHERE k = 3';
	END LOOP;
END
$$;
SELECT executions, counted_executions, bool_and(rows = 0 AND loops = 0) AS nothing_counted
  FROM timing_source_plan_nodes WHERE relation = 'public.ts_track_t'
 GROUP BY executions, counted_executions;
SELECT count(*) AS rows_per_execution_unknown
  FROM timing_source_plan(:every_planid) WHERE rows_per_execution IS NULL;
DO $$ BEGIN EXECUTE 'EXPLAIN (ANALYZE) SELECT count(*) FROM ts_track_t WHERE k = 3'; END $$;
SELECT executions, counted_executions
  FROM timing_source_plan_nodes WHERE relation = 'public.ts_track_t' AND node_id = 2;
SELECT ts_error_of('SET timing_source.track_every = 0');
RESET timing_source.track_every;

RESET timing_source.track_nodes;
SELECT timing_source_plan_nodes_reset();
REVOKE ALL ON ts_track_t FROM regress_ts_track_user, regress_ts_track_stats;
DROP ROLE regress_ts_track_user;
DROP ROLE regress_ts_track_stats;
DROP FUNCTION ts_track_f();
DROP PROCEDURE ts_track_proc();
DROP FUNCTION ts_track_explain(text);
DROP FUNCTION ts_track_rows();
DROP TABLE ts_track_t;
