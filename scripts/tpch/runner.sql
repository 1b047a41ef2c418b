-- scripts/tpch/runner.sql -- the measuring side of the TPC-H accuracy run
-- (scripts/bench.sh --tpch; scripts/tpch/accuracy.sh drives it).  Loaded
-- into each psql session of the run; every measurement is one call of
-- pg_temp.tpch_measure, which appends what it saw to tpch_run.obs.
--
-- psql variables, kept in the session as tpch.* settings (psql does not
-- substitute into a function body): sample (the sampling rate judged),
-- ref (the rate of the low-overhead reference runs), subtract (1: the GUC
-- timing_source.subtract_overhead is set in every timed mode, on in
-- exactsub and off elsewhere; 0: exactsub is not run), profile_hz (the
-- profile's ticks a second).
SET search_path = tpch, public;
SET client_min_messages = warning;
SELECT set_config('tpch.sample', :'sample', false), set_config('tpch.ref', :'ref', false),
	   set_config('tpch.subtract', :'subtract', false),
	   set_config('tpch.profile_hz', :'profile_hz', false) \gset tpch_

\ir obs.sql

-- The check of the sampled estimates, tpch_run.explain_nodes_check()
SET search_path = tpch_run;
\ir ../../test/explain_nodes_check.sql
\ir ../../test/explain_nodes_profile.sql
SET search_path = tpch, public;

-- Modes:
--   plain     the query itself, EXECUTE in PL/pgSQL (its few result rows
--             are kept by SPI, as EXPLAIN discards them: both small)
--   untimed   EXPLAIN (ANALYZE, TIMING OFF): its Execution Time is the
--             reference of the top node
--   exact     every call timed
--   exactsub  the same with timing_source.subtract_overhead on
--   sampled   1 in :sample calls timed
--   ref       1 in :ref calls timed: the reference of inner nodes is the
--             mean of many such runs
--   checked   1 in :sample calls timed, and every call of the sampled
--             nodes timed as well (check_ms): the estimate against the
--             same run's exact total, which no run-to-run noise separates
--   profile   no node timed; a timer ticking :profile_hz times a second
--             counts each node whose call is in progress (ticks; total_ms
--             is their share of the run): the reference of shares, which
--             no read at a node's boundary moves
-- wall_ms is the server-side time of the whole statement, planning
-- included, the same way for every mode, for the overheads against plain.
CREATE FUNCTION pg_temp.tpch_measure(qid int, query text, mode text, run int)
	RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
	t0 timestamptz;
	wall float8;
	plan json;
	every int;
BEGIN
	IF mode = 'plain' THEN
		t0 := clock_timestamp();
		EXECUTE query;
		wall := extract(epoch FROM clock_timestamp() - t0) * 1000;
		INSERT INTO tpch_run.obs (q, mode, run, wall_ms) VALUES (qid, mode, run, wall);
		RETURN;
	END IF;
	IF mode = 'untimed' THEN
		t0 := clock_timestamp();
		EXECUTE 'EXPLAIN (ANALYZE, TIMING OFF, BUFFERS OFF, FORMAT JSON) ' || query INTO plan;
		wall := extract(epoch FROM clock_timestamp() - t0) * 1000;
		INSERT INTO tpch_run.obs (q, mode, run, wall_ms, exec_ms)
			VALUES (qid, mode, run, wall, (plan -> 0 ->> 'Execution Time')::float8);
		RETURN;
	END IF;

	IF mode = 'profile' THEN
		CREATE TEMP TABLE IF NOT EXISTS tpch_prof AS
			SELECT * FROM tpch_run.explain_nodes_profile('SELECT 1', 1000) LIMIT 0;
		TRUNCATE tpch_prof;
		t0 := clock_timestamp();
		INSERT INTO tpch_prof
			SELECT * FROM tpch_run.explain_nodes_profile(query, current_setting('tpch.profile_hz')::int);
		wall := extract(epoch FROM clock_timestamp() - t0) * 1000;
		INSERT INTO tpch_run.obs (q, mode, run, wall_ms, exec_ms, node_id, parent_id, node_type,
								  relation, loops, total_ms, ticks)
		SELECT qid, mode, run, wall, c.execution_ms, c.node_id, c.parent_id, c.node_type,
			   c.relation, c.loops, c.profile_ms, c.profile_ticks
		  FROM tpch_prof c;
		RETURN;
	END IF;

	every := CASE mode WHEN 'exact' THEN 1 WHEN 'exactsub' THEN 1
			 WHEN 'sampled' THEN current_setting('tpch.sample')::int
			 WHEN 'ref' THEN current_setting('tpch.ref')::int
			 WHEN 'checked' THEN current_setting('tpch.sample')::int END;
	IF every IS NULL THEN
		RAISE EXCEPTION 'unknown mode "%"', mode;
	END IF;
	-- set in every timed mode when asked for, so that a server default of
	-- on cannot leak into the exact runs; fails where the setting does not
	-- exist (no silent fallback to unsubtracted figures)
	IF current_setting('tpch.subtract') = '1' THEN
		PERFORM set_config('timing_source.subtract_overhead',
						   CASE WHEN mode = 'exactsub' THEN 'on' ELSE 'off' END, false);
	ELSIF mode = 'exactsub' THEN
		RAISE EXCEPTION 'mode exactsub needs subtract = 1';
	END IF;

	CREATE TEMP TABLE IF NOT EXISTS tpch_cur AS
		SELECT * FROM timing_source_explain_nodes('SELECT 1', 1) LIMIT 0;
	CREATE TEMP TABLE IF NOT EXISTS tpch_check AS
		SELECT * FROM tpch_run.explain_nodes_check('SELECT 1', 2) LIMIT 0;
	TRUNCATE tpch_cur;
	TRUNCATE tpch_check;
	t0 := clock_timestamp();
	IF mode = 'checked' THEN
		INSERT INTO tpch_check SELECT * FROM tpch_run.explain_nodes_check(query, every);
	ELSE
		INSERT INTO tpch_cur SELECT * FROM timing_source_explain_nodes(query, every);
	END IF;
	wall := extract(epoch FROM clock_timestamp() - t0) * 1000;
	INSERT INTO tpch_run.obs (q, mode, run, wall_ms, exec_ms, node_id, parent_id, node_type,
							  relation, loops, total_ms, margin_ms, sampled_calls, reliable, every,
							  check_ms)
	SELECT qid, mode, run, wall, c.execution_ms, c.node_id, c.parent_id, c.node_type,
		   c.relation, c.loops, c.total_ms, c.margin_ms, c.sampled_calls, c.estimate_reliable,
		   c.sample_every, c.exact_ms
	  FROM (SELECT *, NULL::numeric AS exact_ms FROM tpch_cur
			UNION ALL SELECT * FROM tpch_check) c;
END
$fn$;
