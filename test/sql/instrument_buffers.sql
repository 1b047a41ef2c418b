--
-- Buffer usage under sampled timing (timing_source.sample_every > 1):
-- every node's buffer figures must be exactly what core's own
-- instrumentation prints for the same query, in shared buffers; only with
-- timing_source.sample_buffers on (18 and later) may scan nodes print
-- estimates, and EXPLAIN must then say which.  No measured number is
-- printed: the figures of each run are compared by SQL, only the verdicts
-- are shown.
--
-- Core's own path: the system clock, timed exactly, on 15-18 (the
-- wrappers are not bound and core's InstrStartNode/InstrStopNode count),
-- timing_source.node_wrappers off on 19 and later.  The extension's: on
-- 15-18 the TSC, or where it is unusable the system clock's wrappers
-- (sampled runs only), the wrappers on 19.  In a build without a counter
-- (15-18) the extension's path is core's again, and nothing samples; the
-- checks then say so (sampled_here).
--
-- 15-17 refuse timing_source.sample_buffers (their EXPLAIN cannot mark
-- estimates): instrument_buffers_2.out.
SELECT current_setting('server_version_num')::int >= 190000 AS core_owns_setting \gset
SELECT current_setting('server_version_num')::int >= 180000 AS marks_estimates \gset
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS timing_source;
RESET client_min_messages;

SELECT ts_wrappers_sample() AS sampled_here, available AS tsc_here FROM timing_source_tsc() \gset
SET ts_test.sampled_here = :'sampled_here';
SET ts_test.tsc_here = :'tsc_here';
SET ts_test.core_owns_setting = :'core_owns_setting';

-- the tables, frozen and read once, so that every later scan finds its
-- pages in shared buffers and dirties none
CREATE TABLE buf_t AS SELECT g AS id, repeat('x', g % 50) AS pad
  FROM generate_series(1, 100000) g;
CREATE INDEX buf_t_id ON buf_t (id);
CREATE TABLE buf_o AS SELECT g * 97 AS id FROM generate_series(1, 300) g;
VACUUM (FREEZE, ANALYZE) buf_t, buf_o;
SELECT count(*) > 0 AS warm FROM buf_t;
SELECT count(*) > 0 AS warm FROM buf_o;

SET max_parallel_workers_per_gather = 0;
SET jit = off;

-- core's path, or the extension's with sample_every and sample_buffers
CREATE FUNCTION pg_temp.path(ext bool, every int DEFAULT 1,
							 est bool DEFAULT false)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	IF current_setting('ts_test.core_owns_setting')::bool THEN
		PERFORM set_config('timing_source.node_wrappers', ext::text, false);
	ELSE
		PERFORM set_config('timing_clock_source',
						   CASE WHEN ext AND current_setting('ts_test.tsc_here')::bool
								THEN 'tsc' ELSE 'system' END, false);
	END IF;
	PERFORM set_config('timing_source.sample_every', every::text, false);
	-- only where it may be on (see below)
	IF est THEN
		PERFORM set_config('timing_source.sample_buffers', 'on', false);
	ELSIF current_setting('timing_source.sample_buffers')::bool THEN
		PERFORM set_config('timing_source.sample_buffers', 'off', false);
	END IF;
END
$$;

-- Per plan node, in plan order: its type and every buffer figure EXPLAIN
-- (ANALYZE, BUFFERS, FORMAT JSON) gives it, and whether it says its usage
-- is estimated.  The query runs twice, the first time to warm caches.
CREATE FUNCTION pg_temp.node_buffers(q text)
RETURNS TABLE (n bigint, node_type text, blocks jsonb, estimated bool)
LANGUAGE plpgsql AS $$
DECLARE
	d jsonb;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, TIMING ON, FORMAT JSON) ' || q INTO d;
	EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, TIMING ON, FORMAT JSON) ' || q INTO d;
	RETURN QUERY
	SELECT row_number() OVER (), p ->> 'Node Type',
		   (SELECT jsonb_object_agg(k, v) FROM jsonb_each(p) AS e(k, v)
			 WHERE k LIKE '%Blocks'),
		   coalesce((p ->> 'Usage Estimated')::bool, false)
	  FROM jsonb_path_query(d, 'strict $.**?(exists(@."Node Type"))') AS p;
END
$$;

-- The nodes whose figures differ between core's path and the extension's
-- (sample_every, sample_buffers); an empty array when they agree
CREATE FUNCTION pg_temp.differ(q text, every int, est bool DEFAULT false)
RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
	result text[];
BEGIN
	PERFORM pg_temp.path(false);
	CREATE TEMP TABLE core_nodes AS SELECT * FROM pg_temp.node_buffers(q);
	PERFORM pg_temp.path(true, every, est);
	CREATE TEMP TABLE ext_nodes AS SELECT * FROM pg_temp.node_buffers(q);
	SELECT coalesce(array_agg(format('%s %s: core %s, extension %s',
									 c.n, c.node_type, c.blocks, e.blocks)
							  ORDER BY c.n), '{}')
	  INTO result
	  FROM core_nodes c FULL JOIN ext_nodes e USING (n)
	 WHERE c.blocks IS DISTINCT FROM e.blocks
	   AND NOT coalesce(e.estimated, false);
	DROP TABLE core_nodes, ext_nodes;
	PERFORM pg_temp.path(false);
	RETURN result;
END
$$;

-- the queries: a scan of many calls, an index scan in 300 loops under a
-- nested loop, an InitPlan whose run lands in a scan's filter, an external
-- sort whose later calls read its temporary file
CREATE TEMP TABLE queries (name text, q text, settings text);
INSERT INTO queries VALUES
	('seq scan', 'SELECT count(*) FROM buf_t', ''),
	('nested loop', 'SELECT count(*) FROM buf_o o JOIN buf_t t ON t.id = o.id',
	 'SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off;'),
	('initplan', 'SELECT count(*) FROM buf_t WHERE id > (SELECT max(id) / 2 FROM buf_t)', ''),
	('external sort', 'SELECT count(*) FROM (SELECT pad FROM buf_t ORDER BY pad, id OFFSET 0) s',
	 'SET work_mem = ''64kB'';');

-- Default: exactly core's figures, sampled or not
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
SET work_mem = '64kB';
SELECT name, pg_temp.differ(q, 1) AS exact_differ,
	   pg_temp.differ(q, 64) AS sampled_64_differ,
	   pg_temp.differ(q, 2) AS sampled_2_differ
  FROM queries ORDER BY name;

-- timing_source.sample_buffers: refused where EXPLAIN cannot mark
-- estimates (15-17, instrument_buffers_2.out)
SET timing_source.sample_buffers = on;
RESET timing_source.sample_buffers;
\if :marks_estimates

-- With it, under sampled timing: only the scan nodes of the queries
-- without subplans say they estimate, and every other node's figures stay
-- core's; without sampling, or in the query with an InitPlan, nothing is
-- estimated.
SELECT name, pg_temp.differ(q, 64, true) AS sampled_est_differ,
	   pg_temp.differ(q, 1, true) AS exact_est_differ
  FROM queries ORDER BY name;

-- the nodes that say they estimate, and the scan nodes
CREATE FUNCTION pg_temp.estimated_nodes(q text, every int,
										OUT estimated text[], OUT scans text[])
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_temp.path(true, every, true);
	SELECT coalesce(array_agg(node_type ORDER BY n) FILTER (WHERE b.estimated), '{}'),
		   coalesce(array_agg(node_type ORDER BY n) FILTER (WHERE node_type LIKE '%Scan'), '{}')
	  INTO estimated, scans FROM pg_temp.node_buffers(q) AS b;
	PERFORM pg_temp.path(false);
END
$$;
SELECT name,
	   (s64).estimated = CASE WHEN current_setting('ts_test.sampled_here')::bool
							   AND name <> 'initplan'
							  THEN (s64).scans ELSE '{}' END AS estimated_where_expected,
	   (s1).estimated AS estimated_unsampled
  FROM (SELECT name, pg_temp.estimated_nodes(q, 64) AS s64,
			   pg_temp.estimated_nodes(q, 1) AS s1
		  FROM queries) s
 ORDER BY name;

-- The estimate is scaled: 1 in 2 calls of the 100,000-row scan, each
-- page's hit counting twice when its call is sampled, must land near the
-- exact count (its spread there is about 4%; a quarter off is about 7
-- spreads, which a missing or doubled weight would exceed by far).
CREATE FUNCTION pg_temp.scan_blocks(est bool)
RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
	result float8;
BEGIN
	PERFORM pg_temp.path(true, 2, est);
	SELECT (blocks ->> 'Shared Hit Blocks')::float8 + (blocks ->> 'Shared Read Blocks')::float8
	  INTO result
	  FROM pg_temp.node_buffers('SELECT count(*) FROM buf_t') WHERE node_type = 'Seq Scan';
	PERFORM pg_temp.path(false);
	RETURN result;
END
$$;
SELECT abs(pg_temp.scan_blocks(true) / pg_temp.scan_blocks(false) - 1) < 0.25
	   AS estimate_near_exact_count;

-- the text format's line, under the scan only
SELECT pg_temp.path(true, 64, true);
CREATE FUNCTION pg_temp.text_lines(q text)
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, SUMMARY OFF) ' || q
	LOOP
		IF line ~ 'Usage Estimated|->|Aggregate' THEN
			RETURN NEXT regexp_replace(regexp_replace(line, '\(actual.*\)', ''), '\s+$', '');
		END IF;
	END LOOP;
END
$$;
SELECT count(*) FILTER (WHERE l ~ 'Usage Estimated: buffers from 1 in 64 calls')
	   = CASE WHEN current_setting('ts_test.sampled_here')::bool THEN 1 ELSE 0 END
	   AS one_line_where_sampled
  FROM pg_temp.text_lines('SELECT count(*) FROM buf_t') AS l;
SELECT pg_temp.path(false);
\endif

RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;
RESET work_mem;
DROP TABLE buf_t, buf_o;
