--
-- The instrumentation's own cost per node (timing_source.subtract_overhead)
-- and the clock EXPLAIN names (18 and later).
--
-- Host dependence: the extension's wrappers time the plan wherever the
-- build has them: on 15-18 with the TSC where it is usable, else with the
-- system clock, and on 19 with core's clock (timing_source.node_wrappers
-- on).  A build for another CPU has none on 15-18: core times the nodes,
-- no estimate exists, and subtract_overhead must change nothing.  The
-- test setup's ts_wrappers_sample() says which case this is (the wrappers
-- that sample are the ones that time exactly).  Every check compares
-- what the server does with what it must do in its case and prints t.
-- 15-17 print no per-node line: there the estimate is checked through
-- timing_source_compare(), subtraction through the printed times.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS timing_source;
RESET client_min_messages;

SELECT current_setting('server_version_num')::int >= 180000 AS has_hook,
	   current_setting('server_version_num')::int >= 190000 AS core_clock \gset
SELECT ts_wrappers_sample() AS wrapped,
	   CASE WHEN available THEN 'tsc' ELSE 'system' END AS src
  FROM timing_source_tsc() \gset
SET timing_clock_source = :'src';
SET max_parallel_workers_per_gather = 0;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_bitmapscan = off;
SET enable_memoize = off;

CREATE TABLE ovh_big AS SELECT g AS a FROM generate_series(1, 200000) g;
CREATE TABLE ovh_small AS SELECT g AS a FROM generate_series(1, 20000) g;
CREATE INDEX ON ovh_big (a);
ANALYZE ovh_big;
ANALYZE ovh_small;

-- EXPLAIN (ANALYZE, <opts>, FORMAT <fmt>) of q
CREATE FUNCTION pg_temp.ovh_explain(q text, opts text, sub bool)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
	d jsonb;
BEGIN
	PERFORM set_config('timing_source.subtract_overhead', sub::text, true);
	EXECUTE format('EXPLAIN (%s, FORMAT JSON) %s', opts, q) INTO d;
	RETURN d -> 0;
END
$$;

CREATE FUNCTION pg_temp.ovh_text(q text, opts text, sub bool)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	line text;
	result text := '';
BEGIN
	PERFORM set_config('timing_source.subtract_overhead', sub::text, true);
	FOR line IN EXECUTE format('EXPLAIN (%s) %s', opts, q) LOOP
		result := result || line || E'\n';
	END LOOP;
	RETURN result;
END
$$;

-- every node of a JSON plan, depth first, with its parent's path
CREATE FUNCTION pg_temp.ovh_nodes(doc jsonb)
RETURNS TABLE (id text, parent text, node_type text, startup float8,
			   total float8, loops float8, overhead float8)
LANGUAGE sql AS $$
	WITH RECURSIVE n(id, parent, plan) AS (
		SELECT '1', NULL::text, doc -> 'Plan'
		UNION ALL
		SELECT n.id || '.' || c.ord, n.id, c.p
		FROM n CROSS JOIN LATERAL
			jsonb_array_elements(n.plan -> 'Plans') WITH ORDINALITY AS c(p, ord)
	)
	SELECT id, parent, plan ->> 'Node Type',
		   (plan ->> 'Actual Startup Time')::float8,
		   (plan ->> 'Actual Total Time')::float8,
		   (plan ->> 'Actual Loops')::float8,
		   (plan ->> 'Timing Overhead')::float8
	FROM n
$$;

BEGIN;
CREATE TEMP TABLE ovh_plans ON COMMIT DROP AS
SELECT k, pg_temp.ovh_explain(q, 'ANALYZE, BUFFERS OFF', false) AS doc
  FROM (VALUES ('count_big', 'SELECT count(*) FROM ovh_big'),
			   ('count_small', 'SELECT count(*) FROM ovh_small'),
			   ('nestloop', 'SELECT count(*) FROM ovh_small s JOIN ovh_big b ON b.a = s.a'),
			   ('semijoin', 'SELECT count(*) FROM ovh_small s WHERE EXISTS (SELECT FROM ovh_big b WHERE b.a >= s.a)'),
			   ('hash', 'SELECT count(*) FROM ovh_small s JOIN ovh_big b ON b.a = s.a')) AS v(k, q)
 WHERE k <> 'hash';
-- a Hash (run through MultiExecProcNode, timed by core) under a hash join
SET LOCAL enable_hashjoin = on;
SET LOCAL enable_nestloop = off;
INSERT INTO ovh_plans
SELECT 'hash', pg_temp.ovh_explain('SELECT count(*) FROM ovh_small s JOIN ovh_big b ON b.a = s.a',
								   'ANALYZE, BUFFERS OFF', false);
RESET enable_hashjoin;
RESET enable_nestloop;

-- 18+: an estimate on every node exactly where the wrappers timed the plan
SELECT bool_and((overhead IS NOT NULL) = (:'has_hook'::bool AND :'wrapped'::bool)) AS estimate_iff_wrapped,
	   bool_and(coalesce(overhead >= 0, true)) AS never_negative
  FROM ovh_plans, pg_temp.ovh_nodes(doc);

-- 18+: positive on every node with timed children (a leaf's own reads
-- may hide entirely behind its work: only what encloses its calls pays
-- then), and inclusive: a parent's estimate exceeds each child's
SELECT bool_and(coalesce(c.overhead > 0, true)
				OR NOT EXISTS (SELECT FROM pg_temp.ovh_nodes(doc) k WHERE k.parent = c.id)) AS positive,
	   bool_and(coalesce(p.overhead > c.overhead, true)) AS parent_exceeds_child
  FROM ovh_plans,
	   LATERAL (SELECT * FROM pg_temp.ovh_nodes(doc)) c
	   LEFT JOIN LATERAL (SELECT * FROM pg_temp.ovh_nodes(doc)) p ON p.id = c.parent;

-- 18+: it grows with calls, counted exactly.  The per-call cost u is
-- measured once per process: the Aggregate over a scan of N rows carries
-- about (N + 1) u, so 200001 against 20001 calls give 10 x.  A nested
-- loop's inner index scan makes 2 calls in each of its 20000 loops (a row,
-- then none), a semi join's 1 (it stops at the first row): with the same
-- outer scan and the same number of their own calls, the two nested
-- loops differ by 20000 u, the Aggregate over 20000 rows' figure; calls
-- taken as rows + loops (or rows) would make them equal.
WITH n AS (
	SELECT k, n.node_type, n.overhead
	  FROM ovh_plans, pg_temp.ovh_nodes(doc) n
), v AS (
	SELECT (SELECT overhead FROM n WHERE k = 'count_big' AND node_type = 'Aggregate') AS big,
		   (SELECT overhead FROM n WHERE k = 'count_small' AND node_type = 'Aggregate') AS small,
		   (SELECT overhead FROM n WHERE k = 'nestloop' AND node_type = 'Nested Loop') AS nl_join,
		   (SELECT overhead FROM n WHERE k = 'semijoin' AND node_type = 'Nested Loop') AS nl_semi
)
-- within 3% and the printed figures' rounding (0.0005 ms each)
SELECT CASE WHEN :'has_hook'::bool AND :'wrapped'::bool
			THEN abs(big - 10 * small) <= 0.03 * big + 11 * 0.0005 ELSE big IS NULL END AS grows_with_rows,
	   CASE WHEN :'has_hook'::bool AND :'wrapped'::bool
			THEN abs((nl_join - nl_semi) - small) <= 0.03 * small + 3 * 0.0005 ELSE nl_join IS NULL END AS inner_calls_exact
  FROM v;

-- 18+: core times the Hash (once per loop): it has an estimate, which
-- includes its child's
SELECT CASE WHEN :'has_hook'::bool AND :'wrapped'::bool
			THEN h.overhead > 0 AND h.overhead >= c.overhead
			ELSE h.overhead IS NULL END AS hash_estimated
  FROM ovh_plans, pg_temp.ovh_nodes(doc) h, pg_temp.ovh_nodes(doc) c
 WHERE k = 'hash' AND h.node_type = 'Hash' AND c.parent = h.id;
COMMIT;

-- timing_source_compare(): the top node's estimate in the exact modes the
-- wrappers time (both, where the build has them), on every major; it
-- grows with calls as above
WITH c AS (
	SELECT 'big' AS k, * FROM timing_source_compare('SELECT count(*) FROM ovh_big', 1)
	UNION ALL
	SELECT 'small', * FROM timing_source_compare('SELECT count(*) FROM ovh_small', 1)
)
SELECT (SELECT bool_and((top_overhead_ms IS NOT NULL) =
						(mode = 'tsc' OR (mode = 'system' AND :'wrapped'::bool)))
		  FROM c) AS compare_estimate_where_exact,
	   (SELECT coalesce(bool_and(b.top_overhead_ms / s.top_overhead_ms BETWEEN 9.5 AND 10.5), true)
		  FROM c b JOIN c s USING (mode)
		 WHERE b.k = 'big' AND s.k = 'small' AND b.top_overhead_ms IS NOT NULL) AS compare_grows_with_calls;

-- subtraction: never a negative time, startup <= total, on every node
BEGIN;
CREATE TEMP TABLE ovh_sub ON COMMIT DROP AS
SELECT pg_temp.ovh_explain(q, 'ANALYZE, BUFFERS OFF', true) AS doc
  FROM (VALUES ('SELECT count(*) FROM ovh_big'),
			   ('SELECT count(*) FROM ovh_small s JOIN ovh_big b ON b.a = s.a'),
			   ('SELECT * FROM ovh_big ORDER BY a DESC LIMIT 10')) AS v(q);
SELECT bool_and(total >= 0 AND startup >= 0) AS never_negative,
	   bool_and(startup <= total) AS startup_within_total
  FROM ovh_sub, pg_temp.ovh_nodes(doc);

-- 18+: in the same run, an estimate removed from a node and one from its
-- parent add back to at least the child's (a parent runs its child's
-- calls): the amount removed is the printed estimate
SELECT CASE WHEN :'has_hook'::bool AND :'wrapped'::bool
			THEN bool_and(p.total * p.loops + p.overhead + 0.0005 * (p.loops + c.loops) + 0.002 >=
						  c.total * c.loops + c.overhead)
			ELSE count(*) = 0 END AS removed_what_was_printed
  FROM ovh_sub, pg_temp.ovh_nodes(doc) c, pg_temp.ovh_nodes(doc) p
 WHERE p.id = c.parent AND c.overhead IS NOT NULL AND p.overhead IS NOT NULL;
COMMIT;

-- the printed top-node time drops by the estimate where the wrappers time
-- the plan.  Judged within each run, against that run's own Execution Time
-- (system clock, untouched by the setting), so the work's own noise from
-- run to run cannot decide it: subtracted, the top node ends at least the
-- estimate before it.  The estimate is the EXPLAIN run's own field on 18+;
-- 15-17 print none, and there the runs through timing_source_explain_nodes()
-- (the setting on; its top node's overhead_ms, total_ms and execution_ms),
-- interleaved with the EXPLAIN runs, are judged so (on 18+ they are too).
-- And in the median over 5 runs of each kind, the subtracted EXPLAIN runs'
-- gap exceeds the unsubtracted ones' (where only the executor's start and
-- end separate the two) by at least half the estimate: a difference, not a
-- bound on the unsubtracted gap, because where a timed call costs little
-- the executor's start and end are not small beside it.  On 15-17 that
-- estimate is the explain_nodes runs' median: the same wrappers measuring
-- their cost in the plan, but in other runs of it.
CREATE TEMP TABLE ovh_runs (explain bool, sub bool, total float8, exec float8, ovh float8);
DO $$
DECLARE
	d jsonb;
	s bool;
BEGIN
	FOR i IN 1..5 LOOP
		FOREACH s IN ARRAY CASE i % 2 WHEN 0 THEN ARRAY[true, false] ELSE ARRAY[false, true] END LOOP
			d := pg_temp.ovh_explain('SELECT count(*) FROM ovh_big', 'ANALYZE, BUFFERS OFF', s);
			INSERT INTO ovh_runs
			VALUES (true, s, (d -> 'Plan' ->> 'Actual Total Time')::float8,
					(d ->> 'Execution Time')::float8,
					(d -> 'Plan' ->> 'Timing Overhead')::float8);
		END LOOP;
		PERFORM set_config('timing_source.subtract_overhead', 'on', true);
		INSERT INTO ovh_runs
		SELECT false, true, total_ms, execution_ms, overhead_ms
		  FROM timing_source_explain_nodes('SELECT count(*) FROM ovh_big')
		 WHERE node_id = 1;
	END LOOP;
END
$$;
SELECT CASE WHEN :'wrapped'::bool
			THEN bool_and(CASE WHEN explain AND NOT :'has_hook'::bool THEN ovh IS NULL
							   ELSE coalesce(exec - total >= 0.9 * ovh - 0.002, false) END)
					 FILTER (WHERE sub)
				 AND percentile_cont(0.5) WITHIN GROUP (ORDER BY ovh) FILTER (WHERE NOT explain) > 0
				 AND percentile_cont(0.5) WITHIN GROUP (ORDER BY exec - total) FILTER (WHERE explain AND sub)
					 - percentile_cont(0.5) WITHIN GROUP (ORDER BY exec - total) FILTER (WHERE explain AND NOT sub)
					 >= coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY ovh) FILTER (WHERE explain AND sub),
								 percentile_cont(0.5) WITHIN GROUP (ORDER BY ovh) FILTER (WHERE NOT explain)) / 2
			ELSE bool_and(ovh IS NULL) END AS subtracted_top_lower
  FROM ovh_runs;

-- 18+: the plan-level line and the per-node marks, in text
SELECT CASE WHEN NOT :'has_hook'::bool THEN t !~ 'Timing'
			WHEN :'src' = 'tsc' THEN t ~ E'\n  Timing: TSC [0-9]+ MHz( \\([^)]+\\))?, overhead subtracted\n'
			WHEN :'wrapped'::bool THEN t ~ E'\n  Timing: system clock, overhead subtracted\n'
			ELSE t ~ E'\n  Timing: system clock\n' END
		   AS plan_line_subtracted,
	   CASE WHEN :'has_hook'::bool AND :'wrapped'::bool THEN t ~ E'\n  Timing Overhead: ~[0-9.]+ ms \\(subtracted(; [0-9.]+ ns a call, measured in the plan(''s other nodes)?)?\\)\n'
			ELSE t !~ 'Timing Overhead' END AS node_line_subtracted
  FROM pg_temp.ovh_text('SELECT count(*) FROM ovh_small', 'ANALYZE, BUFFERS OFF', true) AS t;
SELECT CASE WHEN NOT :'has_hook'::bool THEN t !~ 'Timing'
			WHEN :'src' = 'tsc' THEN t ~ E'\n  Timing: TSC [0-9]+ MHz( \\([^)]+\\))?\n'
			ELSE t ~ E'\n  Timing: system clock\n' END AS plan_line_exact,
	   CASE WHEN :'has_hook'::bool AND :'wrapped'::bool THEN t ~ E'\n  Timing Overhead: ~[0-9.]+ ms\n'
			ELSE t !~ 'Timing Overhead' END AS node_line_exact
  FROM pg_temp.ovh_text('SELECT count(*) FROM ovh_small', 'ANALYZE, BUFFERS OFF', false) AS t;

-- nothing without ANALYZE or without TIMING
SELECT t !~ 'Timing' AS nothing_without_analyze
  FROM pg_temp.ovh_text('SELECT count(*) FROM ovh_small', 'COSTS OFF', true) AS t;
SELECT t !~ 'Timing' AS nothing_timing_off
  FROM pg_temp.ovh_text('SELECT count(*) FROM ovh_small', 'ANALYZE, TIMING OFF, BUFFERS OFF', true) AS t;

-- 18+: the structured fields name the clock timing_source_tsc() and the
-- setting say (19: core's clock, named from core)
SELECT CASE WHEN NOT :'has_hook'::bool THEN NOT doc -> 'Plan' ? 'Timing Clock'
			ELSE doc -> 'Plan' ->> 'Timing Clock' =
				 CASE WHEN current_setting('timing_clock_source') ~ 'tsc' THEN 'TSC'
					  ELSE 'system clock' END END AS clock_named,
	   CASE WHEN NOT :'has_hook'::bool THEN true
			WHEN doc -> 'Plan' ->> 'Timing Clock' = 'TSC'
			THEN (doc -> 'Plan' ->> 'Timing Clock Frequency')::bigint > 0
				 AND (:'core_clock'::bool OR
					  (doc -> 'Plan' ->> 'Timing Clock Frequency')::bigint =
					  (SELECT frequency_khz FROM timing_source_tsc()))
				 AND (:'core_clock'::bool OR doc -> 'Plan' ? 'Timing Frequency Source')
			ELSE NOT doc -> 'Plan' ? 'Timing Clock Frequency' END AS frequency_named,
	   CASE WHEN NOT :'has_hook'::bool THEN true
			ELSE (doc -> 'Plan' -> 'Timing Overhead Subtracted') = to_jsonb(:'wrapped'::bool) END AS subtracted_flag,
	   NOT doc -> 'Plan' ? 'Timing Sampled Every' AS not_sampled
  FROM pg_temp.ovh_explain('SELECT count(*) FROM ovh_small', 'ANALYZE, BUFFERS OFF', true) AS doc;

-- 18+: sampled plans say so, with no estimate and nothing subtracted
-- (the wrappers sample with either clock)
SELECT ts_wrappers_sample() AS samples \gset
SET timing_source.sample_every = 64;
SELECT CASE WHEN NOT :'has_hook'::bool THEN true
			WHEN :'samples'::bool THEN (doc -> 'Plan' ->> 'Timing Sampled Every')::int = 64
			ELSE NOT doc -> 'Plan' ? 'Timing Sampled Every' END AS sampled_field,
	   CASE WHEN NOT :'has_hook'::bool THEN true
			ELSE doc -> 'Plan' -> 'Timing Overhead Subtracted' = 'false' END AS sampled_not_subtracted,
	   NOT doc::text ~ '"Timing Overhead":' AS sampled_no_estimate
  FROM pg_temp.ovh_explain('SELECT count(*) FROM ovh_small', 'ANALYZE, BUFFERS OFF', true) AS doc;
SELECT CASE WHEN NOT :'has_hook'::bool THEN t !~ 'Timing'
			WHEN :'samples'::bool THEN t ~ E'\n  Timing: [^\n]*, sampled 1 in 64 calls\n'
			ELSE t !~ 'sampled' END AS sampled_line
  FROM pg_temp.ovh_text('SELECT count(*) FROM ovh_small', 'ANALYZE, BUFFERS OFF', true) AS t;
RESET timing_source.sample_every;

-- the setting: a user's, off by default
SELECT setting, context, vartype FROM pg_settings WHERE name = 'timing_source.subtract_overhead';

DROP TABLE ovh_big, ovh_small, ovh_runs;
RESET timing_clock_source;
RESET max_parallel_workers_per_gather;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_bitmapscan;
RESET enable_memoize;
