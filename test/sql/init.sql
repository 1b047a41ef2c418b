--
-- Set-up, run first: create the extension and the helpers every later
-- regression test in this database uses; check that the server is in the
-- TSC case this run expects.
--
-- The tests' output is the same on every host and major: where the
-- behaviour depends on the host (TSC usable or not) or the major (15-18,
-- or 19, where core owns timing_clock_source), a check compares what the
-- server does with what it must do in the case it is in, and prints t.
-- Which case that is comes from timing_source_tsc(); so that a run meant
-- to cover one case cannot silently exercise the other, the harness names
-- the case in TS_EXPECT_TSC ("available", or the exact reason_unusable),
-- checked here.  Unset (make installcheck by hand), the server's own
-- report is taken as it is.
--
CREATE EXTENSION timing_source;
SELECT extname, extversion FROM pg_extension WHERE extname = 'timing_source';

-- the error a statement raises, as "SQLSTATE: message / detail", or
-- 'no error'
CREATE FUNCTION ts_error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	msg text;
	det text;
	st text;
BEGIN
	EXECUTE q;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
		st = RETURNED_SQLSTATE;
	RETURN st || ': ' || msg || ' / ' || coalesce(det, '');
END
$$;

-- SET timing_clock_source = 'tsc' in this session: true if it is
-- accepted exactly where the TSC is usable, and refused elsewhere with the
-- reason timing_source_tsc() gives (PostgreSQL 19: core's setting, whose
-- refusal is core's, not checked on a host with a usable TSC)
CREATE FUNCTION ts_set_tsc() RETURNS bool LANGUAGE plpgsql AS $$
DECLARE
	outcome text := ts_error_of($q$SET timing_clock_source = 'tsc'$q$);
BEGIN
	RETURN outcome =
		(SELECT CASE WHEN available THEN 'no error'
				WHEN current_setting('server_version_num')::int >= 190000
				THEN outcome
				ELSE '0A000: invalid value for parameter "timing_clock_source": "tsc" / '
					|| reason_unusable END
		   FROM timing_source_tsc());
END
$$;

-- whether the extension's wrappers time a sample of the calls
-- (timing_source.sample_every > 1) on this server: on 19 under core's
-- clock, whichever it is; on 15-18 under the TSC or, in a session without
-- it, the system clock, in every build that reads a counter (x86-64,
-- arm64).  A build for another CPU has no wrappers on 15-18, and core
-- times every call.
CREATE FUNCTION ts_wrappers_sample() RETURNS bool LANGUAGE sql AS $$
	SELECT current_setting('server_version_num')::int >= 190000
		OR coalesce(reason_unusable, '') NOT LIKE 'This build of timing_source is not for x86-64 or arm64%'
	  FROM timing_source_tsc()
$$;

-- the case: TS_EXPECT_TSC must name the server's TSC state exactly
\getenv expect_tsc TS_EXPECT_TSC
\if :{?expect_tsc}
\else
\set expect_tsc ''
\endif
SELECT CASE WHEN :'expect_tsc' = '' THEN true
            ELSE CASE WHEN available THEN 'available' ELSE reason_unusable END = :'expect_tsc'
       END AS tsc_state_is_the_expected_one,
       available = (reason_unusable IS NULL) AND (available OR reason_unusable <> '') AS reason_exactly_where_unusable
  FROM timing_source_tsc();

-- The library is preloaded, so its settings exist before CREATE EXTENSION.
-- PostgreSQL 19 and later own timing_clock_source (superuser-only there):
-- the extension then defines neither clock setting, only
-- timing_source.node_wrappers (user-settable, on unless set) and
-- timing_source.sample_every; on 15-18 it defines timing_clock_source
-- and the server-wide timing_source.clock_source, and no wrappers' switch.
SELECT current_setting('server_version_num')::int >= 190000 AS core_owns_setting \gset
CREATE TEMP TABLE want_settings (core_owns_setting bool, name text, vartype text,
								 context text, enumvals text[]);
INSERT INTO want_settings VALUES
	(false, 'timing_clock_source', 'enum', 'user', '{auto,system,tsc}'),
	(false, 'timing_source.clock_source', 'enum', 'sighup', '{auto,system,tsc}'),
	(true, 'timing_clock_source', 'enum', 'superuser', '{auto,system,tsc}'),
	(true, 'timing_source.node_wrappers', 'bool', 'user', NULL);
SELECT count(*) = 0 AS clock_settings_as_on_this_major
  FROM (SELECT name, vartype, context, enumvals
		  FROM pg_settings
		 WHERE name IN ('timing_clock_source', 'timing_source.clock_source',
						'timing_source.node_wrappers')
		EXCEPT
		SELECT name, vartype, context, enumvals
		  FROM want_settings WHERE core_owns_setting = :'core_owns_setting'
		UNION ALL
		(SELECT name, vartype, context, enumvals
		   FROM want_settings WHERE core_owns_setting = :'core_owns_setting'
		 EXCEPT
		 SELECT name, vartype, context, enumvals
		   FROM pg_settings)) AS differences;
-- on every major: the sampling interval, sampled buffer usage, the
-- overhead subtraction, and nothing else of the extension's
SELECT name, vartype, context
  FROM pg_settings
 WHERE name LIKE 'timing\_source.%'
   AND name NOT IN ('timing_source.clock_source', 'timing_source.node_wrappers')
 ORDER BY name;
-- the server-wide default on 15-18, 'auto'; 19+: the wrappers' switch is
-- on unless set
SELECT CASE WHEN :'core_owns_setting'
			THEN (SELECT boot_val = 'on' AND setting = 'on'
					FROM pg_settings WHERE name = 'timing_source.node_wrappers')
			ELSE (SELECT boot_val = 'auto'
					FROM pg_settings WHERE name = 'timing_source.clock_source')
	   END AS defaults_as_on_this_major;
