--
-- The diagnostics burn CPU and reveal host details: EXECUTE is revoked
-- from PUBLIC and granted to pg_monitor.
--
SET client_min_messages = warning;
-- init creates the extension; this lets the file also run on its own
CREATE EXTENSION IF NOT EXISTS timing_source;
DROP ROLE IF EXISTS regress_ts_nobody;
DROP ROLE IF EXISTS regress_ts_monitor;
RESET client_min_messages;

CREATE ROLE regress_ts_nobody;
CREATE ROLE regress_ts_monitor IN ROLE pg_monitor;

-- every function of the extension, as the catalog sees it; the
-- per-node statistics' (1.5) are the exception: readable by everyone, each
-- seeing their own rows, reset by superusers only (test/sql/track.sql)
SELECT p.oid::regprocedure AS function,
       has_function_privilege('public', p.oid, 'EXECUTE') AS public,
       has_function_privilege('regress_ts_nobody', p.oid, 'EXECUTE') AS nobody,
       has_function_privilege('regress_ts_monitor', p.oid, 'EXECUTE') AS monitor
  FROM pg_depend d
  JOIN pg_extension e ON e.oid = d.refobjid AND d.refclassid = 'pg_extension'::regclass
  JOIN pg_proc p ON p.oid = d.objid AND d.classid = 'pg_proc'::regclass
 WHERE e.extname = 'timing_source'
 ORDER BY p.proname;

-- an unprivileged role is refused
SET ROLE regress_ts_nobody;
SELECT count(*) FROM timing_source_tsc();
SELECT count(*) FROM timing_source_histogram('system', 0.01);
SELECT count(*) FROM timing_source_durations('system', 0.01);
SELECT count(*) FROM timing_source_test(0.01);
SELECT count(*) FROM timing_source_calibrate(1);
SELECT count(*) FROM timing_source_report(0.01);
SELECT count(*) FROM timing_source_compare('SELECT 1', 1);
-- ... also before argument checking
SELECT count(*) FROM timing_source_histogram('hpet', 0);
RESET ROLE;

-- a member of pg_monitor is not
SET ROLE regress_ts_monitor;
SELECT count(*) AS rows FROM timing_source_tsc();
SELECT count(*) > 0 AS ok FROM timing_source_histogram('system', 0.01);
SELECT count(*) > 0 AS ok FROM timing_source_durations('system', 0.01);
SELECT count(*) > 0 AS ok FROM timing_source_test(0.01);
SELECT count(*) > 0 AS ok FROM timing_source_report(0.01);
-- compare switches timing_clock_source, which on PostgreSQL 19 and later
-- is core's and superuser-only: there the role is refused, with the
-- reason, until it is granted SET on the parameter; on 15-18 it is not
SELECT current_setting('server_version_num')::int >= 190000 AS core_owns_setting \gset
SELECT ts_error_of($$SELECT count(*) FROM timing_source_compare('SELECT 1', 1)$$)
       = CASE WHEN :'core_owns_setting'
              THEN '42501: permission denied to set parameter "timing_clock_source" / '
                   'timing_source_compare() runs the query with each clock source in turn.'
              ELSE 'no error' END AS compare_refused_exactly_where_core_owns_the_setting;
RESET ROLE;
\if :core_owns_setting
GRANT SET ON PARAMETER timing_clock_source TO regress_ts_monitor;
\endif
SET ROLE regress_ts_monitor;
SELECT count(*) > 0 AS ok FROM timing_source_compare('SELECT 1', 1);
-- calibrate: allowed.  A host without RDTSCP (or a build without the
-- TSC) refuses calibration itself, after the privilege check; that one
-- refusal counts as allowed, and only where timing_source_tsc() reports no
-- RDTSCP.  Any other error propagates and shows in the output.
DO $$
BEGIN
  PERFORM timing_source_calibrate(1);
  RAISE NOTICE 'calibrate allowed';
EXCEPTION WHEN feature_not_supported THEN
  IF SQLERRM = 'TSC calibration is not available on this system'
     AND (SELECT rdtscp IS NOT TRUE FROM timing_source_tsc()) THEN
    RAISE NOTICE 'calibrate allowed';
  ELSE
    RAISE;
  END IF;
END
$$;
-- argument errors still come first for those allowed to call
SELECT count(*) FROM timing_source_histogram('hpet', 0.01);
RESET ROLE;

\if :core_owns_setting
REVOKE SET ON PARAMETER timing_clock_source FROM regress_ts_monitor;
\endif
DROP ROLE regress_ts_nobody;
DROP ROLE regress_ts_monitor;
