--
-- PostgreSQL 19 and later only (the Makefile lists this test there): the
-- executor hook binds the plan nodes under core's system clock too, since
-- the wrappers read core's clock, whichever it is; with
-- timing_source.node_wrappers off it binds nothing and says nothing, and
-- core's own instrumentation runs.  The output does not depend on the TSC.
--
CREATE FUNCTION pg_temp.explain_json(query text, opts text DEFAULT 'ANALYZE')
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
	result jsonb;
BEGIN
	EXECUTE format('EXPLAIN (%s, FORMAT JSON) %s', opts, query) INTO result;
	RETURN result -> 0;
END
$$;

CREATE TABLE ts_bind_a (id int PRIMARY KEY, g int NOT NULL);
INSERT INTO ts_bind_a SELECT i, i % 10 FROM generate_series(1, 2000) i;
VACUUM ANALYZE ts_bind_a;
SET max_parallel_workers_per_gather = 0;
SET jit = off;
-- once before DEBUG1 is shown, so that the catalog lookups of a first
-- call cannot add messages of their own
SELECT pg_temp.explain_json('SELECT count(*) FROM ts_bind_a') IS NOT NULL AS warmed_up;

SET client_min_messages = debug1;
SET timing_clock_source = 'system';
SELECT pg_temp.explain_json('SELECT count(*) FROM ts_bind_a') AS system_clock \gset
SET timing_source.node_wrappers = off;
SELECT pg_temp.explain_json('SELECT count(*) FROM ts_bind_a') AS wrappers_off_system \gset
RESET timing_clock_source;
SELECT pg_temp.explain_json('SELECT count(*) FROM ts_bind_a') AS wrappers_off_auto \gset
RESET timing_source.node_wrappers;
RESET client_min_messages;

-- and what each showed: actual rows and a positive time
SELECT (:'system_clock'::jsonb #>> '{Plan,Actual Total Time}')::float8 > 0 AS system_clock_timed,
	   (:'wrappers_off_system'::jsonb #>> '{Plan,Actual Total Time}')::float8 > 0 AS wrappers_off_system_timed,
	   (:'wrappers_off_auto'::jsonb #>> '{Plan,Actual Total Time}')::float8 > 0 AS wrappers_off_auto_timed;

DROP TABLE ts_bind_a;
