--
-- Which plan nodes the executor hook binds to the extension's wrappers:
-- it reports at DEBUG1 how many it bound, and to which.  Timed queries
-- under the TSC are bound to the timed wrappers; TIMING OFF ones, under
-- the TSC, to the clock-less wrappers that only count rows (and buffers).
--
-- This is the one test with alternate outputs: a DEBUG message cannot be
-- turned into a checked value, and what is bound depends on the case.
-- instrument_bind.out is for a host where the TSC is usable;
-- instrument_bind_2.out for PostgreSQL 15-18 where it is not, in a build
-- with the wrappers (x86-64, arm64): timed queries are bound to the
-- wrappers' system clock, TIMING OFF ones stay core's; instrument_bind_1.out
-- where nothing is bound (a build for another CPU on 15-18), or nothing is
-- shown (19 without the TSC: see below).  The harness checks that a run
-- matched the output of the case TS_EXPECT_TSC and the build name.  On 19
-- the system clock's binding is instrument_bind_core's.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS timing_source;
RESET client_min_messages;

-- the TSC where usable, else the system clock
SELECT CASE WHEN available THEN 'tsc' ELSE 'system' END AS src
  FROM timing_source_tsc() \gset

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

CREATE TABLE ts_bind_a (id int PRIMARY KEY, g int NOT NULL);
INSERT INTO ts_bind_a SELECT i, i % 10 FROM generate_series(1, 2000) i;
CREATE TABLE ts_bind_b (id int, a_id int NOT NULL);
INSERT INTO ts_bind_b SELECT i, (i * 7) % 2000 + 1 FROM generate_series(1, 300) i;
VACUUM ANALYZE ts_bind_a, ts_bind_b;
SET max_parallel_workers_per_gather = 0;
SET jit = off;
-- once before DEBUG1 is shown, so that the catalog lookups of a first
-- call cannot add messages of their own
SELECT pg_temp.explain_json('SELECT count(*) FROM ts_bind_a') IS NOT NULL AS warmed_up;

-- the binding reports: 19's wrappers bind under core's system clock too,
-- which instrument_bind_core checks; here, on 19 without the TSC, they are
-- not this file's case and stay hidden (15-18's are shown)
SELECT CASE WHEN :'src' = 'system' AND current_setting('server_version_num')::int >= 190000
            THEN 'notice' ELSE 'debug1' END AS bind_messages \gset
SET client_min_messages = :'bind_messages';
SET timing_clock_source = :'src';
SELECT pg_temp.explain_json('SELECT count(*) FROM ts_bind_a') AS timed \gset
SELECT pg_temp.explain_json('SELECT count(*) FROM ts_bind_a',
							'ANALYZE, TIMING OFF') AS timing_off \gset
SELECT pg_temp.explain_json('SELECT count(*) FROM ts_bind_a',
							'ANALYZE false') AS not_analyzed \gset
-- initPlan, subPlan and their children are bound too
SELECT pg_temp.explain_json($$
	SELECT (SELECT max(id) FROM ts_bind_b),
		   (SELECT count(*) FROM ts_bind_b b WHERE b.a_id = a.id)
	FROM ts_bind_a a WHERE a.id < 3
$$) AS with_subplans \gset
-- a Hash node is run through MultiExecProcNode and keeps core's clock:
-- 4 of these 5 nodes are bound
SET enable_mergejoin = off;
SET enable_nestloop = off;
SELECT pg_temp.explain_json('SELECT count(*) FROM ts_bind_a a JOIN ts_bind_b b ON b.a_id = a.id') AS hash_join \gset
RESET enable_mergejoin;
RESET enable_nestloop;
-- the setting of the moment counts, also inside a transaction
SET timing_clock_source = 'system';
BEGIN;
SET LOCAL timing_clock_source = :'src';
SELECT pg_temp.explain_json('SELECT count(*) FROM ts_bind_a') AS set_local \gset
COMMIT;
RESET client_min_messages;
RESET timing_clock_source;

DROP TABLE ts_bind_a, ts_bind_b;
