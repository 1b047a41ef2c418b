--
-- Startup times ("actual time=STARTUP..TOTAL"): checked where the true
-- startup is known, under the TSC (where usable) and the system clock.
-- A startup of 0, or one taken on every call instead of at the first tuple
-- of each loop, must fail here; "startup <= total" alone (instrument.sql)
-- would not notice either.
--
-- Only verdicts are printed: 'ok', or, when a check fails, the figures of
-- every node of the last try.  Every tolerance is stated next to its
-- check.  Timing on a busy machine can be disturbed (a sleep overshoots,
-- the backend is preempted), so each check gets three tries and passes if
-- one of them does.  Where the TSC is unusable, both columns use the
-- system clock; the output is the same.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS timing_source;
CREATE EXTENSION IF NOT EXISTS postgres_fdw;
RESET client_min_messages;

-- the TSC where usable, else the system clock
SELECT CASE WHEN available THEN 'tsc' ELSE 'system' END AS src
FROM timing_source_tsc() \gset

SET max_parallel_workers_per_gather = 0;
SET jit = off;

CREATE FUNCTION pg_temp.explain_json(query text, source text)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
	result jsonb;
BEGIN
	PERFORM set_config('timing_clock_source', source, true);
	EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || query INTO result;
	RETURN result -> 0;
END
$$;

-- Every plan node, depth first, with its per-loop startup and total
CREATE FUNCTION pg_temp.plan_nodes(doc jsonb)
RETURNS TABLE (id text, node_type text, startup float8, total float8,
			   loops float8, async bool)
LANGUAGE sql AS $$
	WITH RECURSIVE n(id, path, plan) AS (
		SELECT '1', ARRAY[1::bigint], doc -> 'Plan'
		UNION ALL
		SELECT n.id || '.' || c.ord, n.path || c.ord, c.p
		FROM n CROSS JOIN LATERAL
			jsonb_array_elements(n.plan -> 'Plans') WITH ORDINALITY AS c(p, ord)
	)
	SELECT id, plan ->> 'Node Type',
		   (plan ->> 'Actual Startup Time')::float8,
		   (plan ->> 'Actual Total Time')::float8,
		   (plan ->> 'Actual Loops')::float8,
		   coalesce((plan ->> 'Async Capable')::bool, false)
	FROM n ORDER BY path
$$;

-- one figure of the first node of a type (depth first)
CREATE FUNCTION pg_temp.st(doc jsonb, type text) RETURNS float8 LANGUAGE sql AS $$
	SELECT startup FROM pg_temp.plan_nodes(doc) WHERE node_type = type LIMIT 1
$$;
CREATE FUNCTION pg_temp.tt(doc jsonb, type text) RETURNS float8 LANGUAGE sql AS $$
	SELECT total FROM pg_temp.plan_nodes(doc) WHERE node_type = type LIMIT 1
$$;
CREATE FUNCTION pg_temp.loops(doc jsonb, type text) RETURNS float8 LANGUAGE sql AS $$
	SELECT loops FROM pg_temp.plan_nodes(doc) WHERE node_type = type LIMIT 1
$$;

--
-- check(query, source, verdict): runs EXPLAIN ANALYZE of the query under
-- the source up to three times; 'ok' as soon as the verdict, a boolean SQL
-- expression over the plan ($1, jsonb), holds.  Otherwise the figures of
-- the last try, which then show up in the regression diff.
--
CREATE FUNCTION pg_temp.check3(query text, source text, verdict text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	d jsonb;
	good bool;
BEGIN
	FOR i IN 1..3 LOOP
		d := pg_temp.explain_json(query, source);
		EXECUTE 'SELECT ' || verdict USING d INTO good;
		IF good THEN
			RETURN 'ok';
		END IF;
	END LOOP;
	RETURN 'failed 3 times, last: ' ||
		(SELECT string_agg(format('%s %s %s..%s x%s', id, node_type,
								  startup, total, loops), '; ')
		 FROM pg_temp.plan_nodes(d));
END
$$;

-- the same check under the fast clock and the system clock
CREATE FUNCTION pg_temp.both(query text, verdict text,
							 OUT fast_clock text, OUT system_clock text)
LANGUAGE sql AS $$
	SELECT pg_temp.check3(query, current_setting('ts_test.src'), verdict),
		   pg_temp.check3(query, 'system', verdict)
$$;
SET ts_test.src = :'src';

CREATE TABLE ts_s AS SELECT g AS k, md5(g::text) AS t FROM generate_series(1, 100000) g;
VACUUM ANALYZE ts_s;

--
-- A Result node that sleeps before its only row: the first tuple comes
-- after the sleep, so the startup is within 2% of the sleep (4 ms), and the
-- node ends at most 0.5 ms later (one more call that returns nothing).
--
SELECT * FROM pg_temp.both('SELECT pg_sleep(0.2)',
	$$abs(pg_temp.st($1, 'Result') - 200) <= 4
	  AND pg_temp.tt($1, 'Result') - pg_temp.st($1, 'Result') BETWEEN 0 AND 0.5$$);

--
-- The same for a node running longer than 1 s (1.1 s, 2% = 22 ms): times
-- above a second take the carry into the seconds of PostgreSQL 15's
-- timespec-based instr_time.
--
SELECT * FROM pg_temp.both('SELECT pg_sleep(1.1)',
	$$abs(pg_temp.st($1, 'Result') - 1100) <= 22
	  AND abs(pg_temp.tt($1, 'Result') - 1100) <= 22
	  AND pg_temp.tt($1, 'Result') - pg_temp.st($1, 'Result') BETWEEN 0 AND 0.5$$);

--
-- A Sort reads all its input before its first tuple: its startup is at
-- least its Seq Scan's total (0.002 ms for the rounding of the two printed
-- figures), and at most its own total.  How much of the rest is returning
-- the rows depends on the major and the clock (about 40% of the total on
-- 18 with the system clock), so the unbounded sort gets no closer bound;
-- a Sort under LIMIT 100 (top-N over 100,000 rows) returns only 100 rows
-- after its startup, which is then at least 90% of its total.
--
SET work_mem = '64MB';
SELECT * FROM pg_temp.both(
	'SELECT count(*) FROM (SELECT k FROM ts_s ORDER BY t OFFSET 0) s',
	$$pg_temp.st($1, 'Sort') >= pg_temp.tt($1, 'Seq Scan') - 0.002
	  AND pg_temp.st($1, 'Sort') <= pg_temp.tt($1, 'Sort')$$);
SELECT * FROM pg_temp.both(
	'SELECT count(*) FROM (SELECT k FROM ts_s ORDER BY t LIMIT 100) s',
	$$pg_temp.st($1, 'Sort') >= pg_temp.tt($1, 'Seq Scan') - 0.002
	  AND pg_temp.st($1, 'Sort') >= 0.9 * pg_temp.tt($1, 'Sort')
	  AND pg_temp.st($1, 'Sort') <= pg_temp.tt($1, 'Sort')$$);
RESET work_mem;

--
-- A Seq Scan returns its first row from the first page: its startup is
-- close to 0, at most 5% of the total of reading 100,000 rows.  A startup
-- taken on every call would be close to the total.
--
SELECT * FROM pg_temp.both('SELECT count(*) FROM ts_s',
	$$pg_temp.st($1, 'Seq Scan') <= 0.05 * pg_temp.tt($1, 'Seq Scan')
	  AND pg_temp.tt($1, 'Seq Scan') > 0$$);

--
-- Rescans: the startup is taken anew in every loop and averaged over the
-- loops.  A subplan run for 3 outer rows: its Seq Scan finds a row at once
-- in every loop (startup at most 5% of the total), and its Aggregate
-- returns only after the whole scan (startup at least the scan's total,
-- 0.002 ms for rounding, and at least 90% of its own total).
--
SELECT * FROM pg_temp.both(
	'SELECT (SELECT count(*) FROM ts_s WHERE k > g) FROM generate_series(1, 3) g',
	$$pg_temp.loops($1, 'Seq Scan') = 3 AND pg_temp.loops($1, 'Aggregate') = 3
	  AND pg_temp.st($1, 'Seq Scan') <= 0.05 * pg_temp.tt($1, 'Seq Scan')
	  AND pg_temp.st($1, 'Aggregate') >= pg_temp.tt($1, 'Seq Scan') - 0.002
	  AND pg_temp.st($1, 'Aggregate') >= 0.9 * pg_temp.tt($1, 'Aggregate')$$);

--
-- A Result rescanned 3 times that sleeps 50 ms before its row in each
-- loop: per loop, the startup is at least 49 ms (2% below) and at most
-- 55 ms (a sleep may overshoot; a first-tuple time not reset between loops
-- would average about 100 ms), and the loop ends at most 0.5 ms later.
--
SELECT * FROM pg_temp.both($$
	SELECT * FROM generate_series(1, 3) g
	CROSS JOIN LATERAL (SELECT pg_sleep(0.05) WHERE g > 0 OFFSET 0) s$$,
	$$pg_temp.loops($1, 'Result') = 3
	  AND pg_temp.st($1, 'Result') BETWEEN 49 AND 55
	  AND pg_temp.tt($1, 'Result') - pg_temp.st($1, 'Result') BETWEEN 0 AND 0.5$$);

--
-- Async Append (postgres_fdw, which ships with the server, back to this
-- server over its Unix socket): two foreign partitions on remote views
-- whose rows come only after a 0.1 s sleep.
--
DO $$
BEGIN
	EXECUTE format('CREATE SERVER ts_loopback FOREIGN DATA WRAPPER postgres_fdw
					OPTIONS (host %L, port %L, dbname %L, async_capable ''true'')',
				   split_part(current_setting('unix_socket_directories'), ',', 1),
				   current_setting('port'), current_database());
END
$$;
CREATE USER MAPPING FOR CURRENT_USER SERVER ts_loopback;
CREATE VIEW ts_rv1 AS SELECT k FROM pg_sleep(0.1), ts_s WHERE k <= 500;
CREATE VIEW ts_rv2 AS SELECT k FROM pg_sleep(0.1), ts_s WHERE k > 500 AND k <= 1000;
CREATE TABLE ts_fp (k int) PARTITION BY RANGE (k);
CREATE FOREIGN TABLE ts_fp1 PARTITION OF ts_fp FOR VALUES FROM (1) TO (501)
	SERVER ts_loopback OPTIONS (table_name 'ts_rv1');
CREATE FOREIGN TABLE ts_fp2 PARTITION OF ts_fp FOR VALUES FROM (501) TO (1001)
	SERVER ts_loopback OPTIONS (table_name 'ts_rv2');

-- async: the Append waits for the remote rows itself, so its startup is at
-- least 98 ms (2% below the sleep); each async Foreign Scan is timed only
-- while it handles a request or a result, never while the Append waits, so
-- its startup and total stay below 50 ms, with startup <= total
SELECT * FROM pg_temp.both('SELECT count(*) FROM ts_fp',
	$$(SELECT count(*) = 2 AND bool_and(async) FROM pg_temp.plan_nodes($1)
	   WHERE node_type = 'Foreign Scan')
	  AND pg_temp.st($1, 'Append') >= 98
	  AND pg_temp.st($1, 'Append') <= pg_temp.tt($1, 'Append')
	  AND (SELECT bool_and(startup <= total AND total < 50)
		   FROM pg_temp.plan_nodes($1) WHERE node_type = 'Foreign Scan')$$);

-- synchronous: the first Foreign Scan waits for its remote rows itself,
-- so its startup is at least 98 ms
ALTER SERVER ts_loopback OPTIONS (SET async_capable 'false');
SELECT * FROM pg_temp.both('SELECT count(*) FROM ts_fp',
	$$(SELECT count(*) = 2 AND NOT bool_or(async) FROM pg_temp.plan_nodes($1)
	   WHERE node_type = 'Foreign Scan')
	  AND pg_temp.st($1, 'Foreign Scan') >= 98
	  AND pg_temp.st($1, 'Foreign Scan') <= pg_temp.tt($1, 'Foreign Scan')$$);

DROP TABLE ts_fp;
DROP USER MAPPING FOR CURRENT_USER SERVER ts_loopback;
DROP SERVER ts_loopback;
DROP VIEW ts_rv1, ts_rv2;
DROP TABLE ts_s;
DROP EXTENSION postgres_fdw;
