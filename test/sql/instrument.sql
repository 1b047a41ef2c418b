--
-- Executor instrumentation: which plan nodes are timed with the TSC, and
-- whether the resulting EXPLAIN ANALYZE numbers are consistent for every
-- kind of plan node.  No measured number is printed: plans are checked by
-- SQL over EXPLAIN's JSON output, and only the verdicts are shown.
--
-- Host dependence: where the TSC is unusable, SET timing_clock_source =
-- 'tsc' must be refused with the reason, and the same checks then run
-- with the system clock; one output for both cases.  Which nodes are bound
-- to the wrappers (the hook's DEBUG1 messages) is instrument_bind's.
--
-- PostgreSQL 19 and later: timing_clock_source is core's, and the
-- extension's wrappers read core's clock; the same checks apply (both
-- clocks now through the wrappers), and at the end the wrappers must
-- count what core's own instrumentation counts (timing_source.node_wrappers
-- off; on 15-18 core's own path is the system clock's).
SELECT current_setting('server_version_num')::int >= 190000 AS core_owns_setting \gset
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS timing_source;
RESET client_min_messages;

-- The TSC where usable, else the system clock (see instrument_1.out)
SELECT CASE WHEN available THEN 'tsc' ELSE 'system' END AS src
FROM timing_source_tsc() \gset
SET ts_test.src = :'src';

-- 'tsc' is accepted exactly where usable, else refused with the reason
SELECT ts_set_tsc() AS tsc_accepted_exactly_where_usable;
SELECT current_setting('timing_clock_source') = CASE WHEN available THEN 'tsc' ELSE 'auto (system)' END
	   AS tsc_shown_exactly_where_usable
  FROM timing_source_tsc();
RESET timing_clock_source;

-- EXPLAIN (FORMAT JSON) of a query, as jsonb
CREATE FUNCTION pg_temp.explain_json(query text, opts text DEFAULT 'ANALYZE')
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
	result jsonb;
BEGIN
	EXECUTE format('EXPLAIN (%s, FORMAT JSON) %s', opts, query) INTO result;
	RETURN result -> 0;
END
$$;

-- Every plan node with its parent's figures
CREATE FUNCTION pg_temp.plan_nodes(doc jsonb)
RETURNS TABLE (id text, node_type text, parent_type text,
			   startup float8, total float8, nrows float8, loops float8,
			   parent_total float8, parent_loops float8, node jsonb)
LANGUAGE sql AS $$
	WITH RECURSIVE n(id, plan, parent) AS (
		SELECT '1', doc -> 'Plan', NULL::jsonb
		UNION ALL
		SELECT n.id || '.' || c.ord, c.p, n.plan
		FROM n CROSS JOIN LATERAL
			jsonb_array_elements(n.plan -> 'Plans') WITH ORDINALITY AS c(p, ord)
	)
	SELECT id, plan ->> 'Node Type', parent ->> 'Node Type',
		   (plan ->> 'Actual Startup Time')::float8,
		   (plan ->> 'Actual Total Time')::float8,
		   (plan ->> 'Actual Rows')::float8,
		   (plan ->> 'Actual Loops')::float8,
		   (parent ->> 'Actual Total Time')::float8,
		   (parent ->> 'Actual Loops')::float8,
		   plan
	FROM n
$$;

--
-- Timing invariants of one EXPLAIN ANALYZE result; returns the violations.
--
-- Times are per-loop averages printed to 1 us, so totals are compared as
-- average * loops with a rounding allowance.  A child runs inside its
-- parent's calls (InitPlans and SubPlans inside the node that evaluates
-- them), so its total cannot exceed its parent's -- except below Gather,
-- where the children's figures are summed over all processes.
--
CREATE FUNCTION pg_temp.violations(doc jsonb)
RETURNS text[] LANGUAGE sql AS $$
	SELECT coalesce(array_agg(v ORDER BY v), '{}')
	FROM (
		SELECT id || ' ' || node_type || ': negative time' AS v
		FROM pg_temp.plan_nodes(doc) WHERE startup < 0 OR total < 0
		UNION ALL
		SELECT id || ' ' || node_type || ': startup after total'
		FROM pg_temp.plan_nodes(doc) WHERE startup > total
		UNION ALL
		SELECT id || ' ' || node_type || ': time but never executed'
		FROM pg_temp.plan_nodes(doc) WHERE loops = 0 AND total > 0
		UNION ALL
		SELECT id || ' ' || node_type || ': longer than its parent ' || parent_type
		FROM pg_temp.plan_nodes(doc)
		WHERE parent_type NOT IN ('Gather', 'Gather Merge')
		  AND total * loops > parent_total * parent_loops
			+ 0.0005 * (loops + parent_loops) + 0.01
		UNION ALL
		SELECT id || ' ' || node_type || ': loop longer than the query'
		FROM pg_temp.plan_nodes(doc)
		WHERE total > (doc ->> 'Execution Time')::float8 + 0.01
		UNION ALL
		SELECT 'top node has no time'
		WHERE ((doc -> 'Plan') ->> 'Actual Total Time')::float8 <= 0
	) s
$$;

-- Rows, loops and buffer counts per node: what must not depend on the clock
CREATE FUNCTION pg_temp.shape(doc jsonb)
RETURNS text[] LANGUAGE sql AS $$
	SELECT array_agg(format('%s %s rows=%s loops=%s hit=%s',
							id, node_type, nrows, loops,
							node ->> 'Shared Hit Blocks') ORDER BY id)
	FROM pg_temp.plan_nodes(doc)
$$;

--
-- Run a query under the TSC and under the system clock and report:
-- violations under each, whether rows/loops agree (deterministic plans
-- only), and the node types for the record.  Buffers are compared only
-- where asked for (18 would count them by default).
--
CREATE FUNCTION pg_temp.check_query(query text, opts text DEFAULT 'ANALYZE, BUFFERS OFF',
									deterministic bool DEFAULT true)
RETURNS TABLE (nodes text, tsc_violations text[], system_violations text[],
			   same_shape bool)
LANGUAGE plpgsql AS $$
DECLARE
	saved text := current_setting('timing_clock_source');
	d_tsc jsonb;
	d_sys jsonb;
BEGIN
	PERFORM set_config('timing_clock_source',
					   current_setting('ts_test.src'), true);
	d_tsc := pg_temp.explain_json(query, opts);
	PERFORM set_config('timing_clock_source', 'system', true);
	d_sys := pg_temp.explain_json(query, opts);
	PERFORM set_config('timing_clock_source', split_part(saved, ' ', 1), true);
	nodes := (SELECT string_agg(node_type, ',' ORDER BY id)
			  FROM pg_temp.plan_nodes(d_tsc));
	tsc_violations := pg_temp.violations(d_tsc);
	system_violations := pg_temp.violations(d_sys);
	same_shape := CASE WHEN deterministic
		THEN pg_temp.shape(d_tsc) = pg_temp.shape(d_sys) END;
	RETURN NEXT;
END
$$;

CREATE TABLE ts_a (id int PRIMARY KEY, g int NOT NULL, pad text);
INSERT INTO ts_a SELECT i, i % 10, repeat('x', 20) FROM generate_series(1, 20000) i;
CREATE INDEX ts_a_g ON ts_a (g);
CREATE TABLE ts_b (id int, a_id int NOT NULL);
INSERT INTO ts_b SELECT i, (i * 7) % 20000 + 1 FROM generate_series(1, 3000) i;
CREATE TABLE ts_p (k int, v int) PARTITION BY RANGE (k);
CREATE TABLE ts_p1 PARTITION OF ts_p FOR VALUES FROM (0) TO (1000);
CREATE TABLE ts_p2 PARTITION OF ts_p FOR VALUES FROM (1000) TO (2000);
CREATE TABLE ts_p3 PARTITION OF ts_p FOR VALUES FROM (2000) TO (3000);
INSERT INTO ts_p SELECT i, i % 7 FROM generate_series(0, 2999) i;
CREATE INDEX ON ts_p (k);
CREATE TABLE ts_w (id int, pad text);
VACUUM ANALYZE ts_a, ts_b, ts_p;

SET max_parallel_workers_per_gather = 0;
SET jit = off;

--
-- What EXPLAIN shows for timed, TIMING OFF and not analyzed queries, with
-- subplans and a Hash node, and as the setting changes (instrument_bind
-- shows which of these nodes are bound to which wrappers).
--
SET timing_clock_source = :'src';
SELECT pg_temp.explain_json('SELECT count(*) FROM ts_a') AS timed \gset
SELECT pg_temp.explain_json('SELECT count(*) FROM ts_a',
							'ANALYZE, TIMING OFF') AS timing_off \gset
SELECT pg_temp.explain_json('SELECT count(*) FROM ts_a',
							'ANALYZE false') AS not_analyzed \gset
-- initPlan, subPlan and their children are bound too
SELECT pg_temp.explain_json($$
	SELECT (SELECT max(id) FROM ts_b),
		   (SELECT count(*) FROM ts_b b WHERE b.a_id = a.id)
	FROM ts_a a WHERE a.id < 3
$$) AS with_subplans \gset
-- a Hash node is run through MultiExecProcNode and keeps core's clock:
-- 4 of these 5 nodes are bound
SET enable_mergejoin = off;
SET enable_nestloop = off;
SELECT pg_temp.explain_json('SELECT count(*) FROM ts_a a JOIN ts_b b ON b.a_id = a.id') AS hash_join \gset
RESET enable_mergejoin;
RESET enable_nestloop;
SET timing_clock_source = 'system';
SELECT pg_temp.explain_json('SELECT count(*) FROM ts_a') AS system_clock \gset
-- the setting of the moment counts, also inside a transaction
BEGIN;
SET LOCAL timing_clock_source = :'src';
SELECT pg_temp.explain_json('SELECT count(*) FROM ts_a') AS set_local \gset
COMMIT;
SELECT pg_temp.explain_json('SELECT count(*) FROM ts_a') AS after_commit \gset
RESET timing_clock_source;

-- What each EXPLAIN above showed (kept in psql variables): 'timed' (actual
-- rows and a positive time), 'counted' (actual rows, no times: TIMING
-- OFF), 'estimated' (not run), else 'inconsistent'
CREATE FUNCTION pg_temp.plan_kind(doc jsonb)
RETURNS text LANGUAGE sql AS $$
	SELECT CASE
		WHEN NOT (doc -> 'Plan') ? 'Actual Rows'
			 AND NOT (doc -> 'Plan') ? 'Actual Total Time' THEN 'estimated'
		WHEN (doc #>> '{Plan,Actual Rows}')::float8 >= 1
			 AND (doc #>> '{Plan,Actual Total Time}')::float8 > 0 THEN 'timed'
		WHEN (doc #>> '{Plan,Actual Rows}')::float8 >= 1
			 AND NOT (doc -> 'Plan') ? 'Actual Total Time' THEN 'counted'
		ELSE 'inconsistent'
	END
$$;

SELECT * FROM (VALUES
	('timed', pg_temp.plan_kind(:'timed')),
	('timing_off', pg_temp.plan_kind(:'timing_off')),
	('not_analyzed', pg_temp.plan_kind(:'not_analyzed')),
	('with_subplans', pg_temp.plan_kind(:'with_subplans')),
	('hash_join', pg_temp.plan_kind(:'hash_join')),
	('system_clock', pg_temp.plan_kind(:'system_clock')),
	('set_local', pg_temp.plan_kind(:'set_local')),
	('after_commit', pg_temp.plan_kind(:'after_commit'))
) AS v(query, explain_showed);

-- Plan text without numbers is the same under both clocks.  Through a
-- function so that the text is the same on every major: 18 shows buffers
-- by default and row counts with decimals, and memory figures differ.
CREATE FUNCTION pg_temp.explain_text(query text)
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF, SUMMARY OFF, BUFFERS OFF) '
		|| query
	LOOP
		line := regexp_replace(line, 'rows=(\d+)\.\d+', 'rows=\1', 'g');
		RETURN NEXT regexp_replace(line, '\d+kB', 'NkB', 'g');
	END LOOP;
END
$$;
SET timing_clock_source = :'src';
SELECT * FROM pg_temp.explain_text(
	'SELECT a.g, count(*) FROM ts_a a JOIN ts_b b ON b.a_id = a.id GROUP BY a.g ORDER BY a.g');
SET timing_clock_source = 'system';
SELECT * FROM pg_temp.explain_text(
	'SELECT a.g, count(*) FROM ts_a a JOIN ts_b b ON b.a_id = a.id GROUP BY a.g ORDER BY a.g');
RESET timing_clock_source;

--
-- Consistent, non-negative times for every kind of node.
--
-- nested loop: inner index scan rescanned once per outer row
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT * FROM pg_temp.check_query(
	'SELECT count(*) FROM ts_b b JOIN ts_a a ON a.id = b.a_id');
-- nested loop over a rescanned Materialize
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT * FROM pg_temp.check_query(
	'SELECT count(*) FROM ts_b b JOIN ts_p p ON p.k = b.id % 100 WHERE b.id < 200');
RESET enable_indexscan;
RESET enable_bitmapscan;
RESET enable_hashjoin;
RESET enable_mergejoin;
-- hash join (Hash is run through MultiExecProcNode)
SET enable_nestloop = off;
SET enable_mergejoin = off;
SELECT * FROM pg_temp.check_query(
	'SELECT count(*) FROM ts_a a JOIN ts_b b ON b.a_id = a.id');
RESET enable_mergejoin;
-- merge join over sorts
SET enable_hashjoin = off;
SELECT * FROM pg_temp.check_query(
	'SELECT count(*) FROM ts_a a JOIN ts_b b ON b.a_id = a.g');
RESET enable_hashjoin;
RESET enable_nestloop;
-- bitmap heap scan over BitmapOr of two bitmap index scans
SET enable_seqscan = off;
SET enable_indexscan = off;
SELECT * FROM pg_temp.check_query(
	'SELECT count(*) FROM ts_a WHERE g = 3 OR id < 100');
RESET enable_seqscan;
RESET enable_indexscan;
-- CTE scanned twice
SELECT * FROM pg_temp.check_query($$
	WITH c AS MATERIALIZED (SELECT g, count(*) AS n FROM ts_a GROUP BY g)
	SELECT count(*) FROM c c1 JOIN c c2 ON c1.g = c2.g + 1$$);
-- correlated subplan and an initPlan
SELECT * FROM pg_temp.check_query($$
	SELECT count(*) FROM ts_b b
	WHERE b.a_id > (SELECT avg(a.id) FROM ts_a a WHERE a.id BETWEEN b.id AND b.id + 50)
	  AND b.id < (SELECT max(id) - 100 FROM ts_b)$$);
-- Append and MergeAppend over partitions, Limit
SELECT * FROM pg_temp.check_query('SELECT count(*) FROM ts_p WHERE v > 2');
SELECT * FROM pg_temp.check_query('SELECT * FROM ts_p ORDER BY k DESC LIMIT 5');
-- Subquery Scan, window function, sort, unique
-- (index-only scan off: its choice over a seq scan here depends on the
-- visibility map, which autovacuum may or may not have set yet)
SET enable_indexonlyscan = off;
SELECT * FROM pg_temp.check_query($$
	SELECT * FROM (SELECT g, count(*) AS n FROM ts_a GROUP BY g LIMIT 5) s
	WHERE s.n > 0$$);
RESET enable_indexonlyscan;
SELECT * FROM pg_temp.check_query($$
	SELECT DISTINCT g, rank() OVER (PARTITION BY g ORDER BY id % 3)
	FROM ts_a ORDER BY 1, 2 LIMIT 10$$);
-- set-returning functions, VALUES, recursive CTE
SELECT * FROM pg_temp.check_query($$
	WITH RECURSIVE r(n) AS (VALUES (1) UNION ALL SELECT n + 1 FROM r WHERE n < 100)
	SELECT count(*) FROM r, generate_series(1, 10) g$$);
-- buffer and WAL usage per node (the wrapper that also counts usage);
-- buffer counts are compared under both clocks by same_shape
SELECT * FROM pg_temp.check_query('SELECT count(*) FROM ts_a WHERE pad <> $$y$$',
								  'ANALYZE, BUFFERS, WAL');
BEGIN;
SET LOCAL timing_clock_source = :'src';
SELECT pg_temp.violations(d) AS violations,
	   (d #>> '{Plan,WAL Records}')::int > 0 AS wal_counted,
	   (d #>> '{Plan,Shared Hit Blocks}')::int +
	   (d #>> '{Plan,Shared Dirtied Blocks}')::int > 0 AS buffers_counted
FROM pg_temp.explain_json(
	'INSERT INTO ts_w SELECT i, repeat($$w$$, 100) FROM generate_series(1, 2000) i',
	'ANALYZE, BUFFERS, WAL') AS d;
ROLLBACK;

-- parallel query: Gather, partial aggregate, parallel hash join
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = on;
SELECT * FROM pg_temp.check_query('SELECT count(*) FROM ts_a', 'ANALYZE', false);
SET enable_nestloop = off;
SET enable_mergejoin = off;
SELECT * FROM pg_temp.check_query(
	'SELECT count(*) FROM ts_a a JOIN ts_b b ON b.a_id = a.id', 'ANALYZE', false);
RESET enable_nestloop;
RESET enable_mergejoin;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET parallel_leader_participation;
SET max_parallel_workers_per_gather = 0;

--
-- Changing the clock source while a query runs never yields negative or
-- absurd times: the clock is bound when the executor starts.  Both
-- directions, once for the whole query and once flipping on every row.
-- The nodes' times are judged against the statement's duration as this
-- function measures it (the top node runs inside it), not against EXPLAIN's
-- "Execution Time": on 19 that is core's, and core converts it with the
-- unit of the clock of the end, garbage after such a switch.  On 19 the
-- wrappers' times must survive the switch in both directions: one clock's
-- ticks printed in the other's unit would be 2-3 times too long (longer
-- than the statement) or too short (shorter than the sleep).
--
CREATE FUNCTION pg_temp.switch_check(query text)
RETURNS TABLE (violations text[], slept_enough bool, setting_after text)
LANGUAGE plpgsql AS $$
DECLARE
	d jsonb;
	t0 timestamptz;
	wall_ms float8;
BEGIN
	t0 := clock_timestamp();
	d := pg_temp.explain_json(query);
	wall_ms := extract(epoch FROM clock_timestamp() - t0) * 1000.0;
	d := jsonb_set(d, '{Execution Time}', to_jsonb(wall_ms));
	violations := pg_temp.violations(d);
	slept_enough := (d #>> '{Plan,Actual Total Time}')::float8 >= 99.0;
	setting_after := current_setting('timing_clock_source');
	RETURN NEXT;
END
$$;
-- (setting_after: the value the query left for the rest of its
-- transaction; src is the TSC where usable, else the system clock)
SET timing_clock_source = :'src';
SELECT violations, slept_enough, setting_after = 'system' AS setting_after_system
  FROM pg_temp.switch_check(
	$$SELECT set_config('timing_clock_source', 'system', true), pg_sleep(0.1)$$);
SELECT current_setting('timing_clock_source') = :'src' AS session_keeps_src;
SET timing_clock_source = 'system';
SELECT violations, slept_enough, setting_after = :'src' AS setting_after_src
  FROM pg_temp.switch_check(
	format($$SELECT set_config('timing_clock_source', %L, true), pg_sleep(0.1)$$,
		   :'src'));
SHOW timing_clock_source;
SET timing_clock_source = :'src';
SELECT violations, slept_enough, setting_after = :'src' AS setting_after_src
  FROM pg_temp.switch_check(format($$
	SELECT set_config('timing_clock_source',
					  CASE WHEN mod(i, 2) = 0 THEN 'system' ELSE %L END, true),
		   pg_sleep(0.02)
	FROM generate_series(1, 5) i$$, :'src'));
RESET timing_clock_source;

--
-- Core's own instrumentation counts what the wrappers count: rows, loops
-- and buffers per node are the same, timed and with TIMING OFF, in each of
-- the shapes checked above.  On 19+ core's path is the one with
-- timing_source.node_wrappers off (the hook binds nothing); on 15-18 it is
-- the system clock's (the wrappers are the TSC's).
--
CREATE FUNCTION pg_temp.core_path(on_core bool) RETURNS bool
LANGUAGE plpgsql AS $$
BEGIN
	IF current_setting('server_version_num')::int >= 190000 THEN
		PERFORM set_config('timing_source.node_wrappers',
						   CASE WHEN on_core THEN 'off' ELSE 'on' END, true);
	ELSE
		PERFORM set_config('timing_clock_source',
						   CASE WHEN on_core THEN 'system' ELSE current_setting('ts_test.src') END, true);
	END IF;
	RETURN on_core;
END
$$;
CREATE FUNCTION pg_temp.same_as_core(query text)
RETURNS TABLE (timed bool, timing_off bool)
LANGUAGE plpgsql AS $$
DECLARE
	on_t jsonb;
	off_t jsonb;
	on_n jsonb;
	off_n jsonb;
BEGIN
	PERFORM pg_temp.core_path(false);
	on_t := pg_temp.explain_json(query, 'ANALYZE, BUFFERS');
	on_n := pg_temp.explain_json(query, 'ANALYZE, BUFFERS, TIMING OFF');
	PERFORM pg_temp.core_path(true);
	off_t := pg_temp.explain_json(query, 'ANALYZE, BUFFERS');
	off_n := pg_temp.explain_json(query, 'ANALYZE, BUFFERS, TIMING OFF');
	PERFORM pg_temp.core_path(false);
	timed := pg_temp.shape(on_t) = pg_temp.shape(off_t);
	timing_off := pg_temp.shape(on_n) = pg_temp.shape(off_n);
	RETURN NEXT;
END
$$;
BEGIN;
SELECT pg_temp.core_path(true) AS on_core_path;
SELECT pg_temp.explain_json('SELECT count(*) FROM ts_a') AS wrappers_off \gset
COMMIT;
SELECT pg_temp.plan_kind(:'wrappers_off') AS wrappers_off_explain_showed;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT * FROM pg_temp.same_as_core(
	'SELECT count(*) FROM ts_b b JOIN ts_a a ON a.id = b.a_id');
RESET enable_hashjoin;
RESET enable_mergejoin;
SELECT * FROM pg_temp.same_as_core($$
	SELECT (SELECT max(id) FROM ts_b),
		   (SELECT count(*) FROM ts_b b WHERE b.a_id = a.id)
	FROM ts_a a WHERE a.id < 30$$);
SELECT * FROM pg_temp.same_as_core('SELECT * FROM ts_p ORDER BY k DESC LIMIT 5');
SELECT * FROM pg_temp.same_as_core($$
	SELECT g, count(*) FROM ts_a GROUP BY g ORDER BY g$$);
SET enable_mergejoin = off;
SET enable_nestloop = off;
SELECT * FROM pg_temp.same_as_core(
	'SELECT count(*) FROM ts_a a JOIN ts_b b ON b.a_id = a.id');
RESET enable_mergejoin;
RESET enable_nestloop;

DROP TABLE ts_a, ts_b, ts_p, ts_w;
