--
-- timing_clock_source: values, SHOW strings, errors, RESET, scoping.
--
-- The output depends on whether the TSC is usable: settings.out is for a
-- host where it is, settings_1.out for one where it is not (the test
-- harness also runs this with TIMING_SOURCE_DISABLE_TSC=1 to check that
-- case on a machine with a good TSC).
--
-- PostgreSQL 19 and later: this test does not apply (settings_2.out)
SELECT current_setting('server_version_num')::int >= 190000 AS core_owns_setting \gset
\if :core_owns_setting
\echo 'skipped on PostgreSQL 19+: core owns timing_clock_source there and the extension defines no clock setting of its own (init checks its timing_source.node_wrappers)'
\quit
\endif
SELECT available AS tsc_available FROM timing_source_tsc();

-- the default follows the server-wide timing_source.clock_source (auto)
SHOW timing_source.clock_source;
SHOW timing_clock_source;
SELECT current_setting('timing_clock_source') IN ('auto (tsc)', 'auto (system)') AS auto_shown;
SELECT setting = current_setting('timing_clock_source') AS pg_settings_agrees
  FROM pg_settings WHERE name = 'timing_clock_source';
-- in_use follows what auto resolved to
SELECT in_use = (current_setting('timing_clock_source') = 'auto (tsc)') AS in_use_consistent
  FROM timing_source_tsc();

SET timing_clock_source = 'system';
SHOW timing_clock_source;
SELECT in_use FROM timing_source_tsc();

SET timing_clock_source = 'auto';
SHOW timing_clock_source;

-- explicit tsc: accepted exactly where the TSC is usable (the detail of
-- the error, the host's reason, is checked at the end)
\set VERBOSITY terse
SET timing_clock_source = 'tsc';
\set VERBOSITY default
SHOW timing_clock_source;
SELECT in_use, available FROM timing_source_tsc();

-- values are case-insensitive, like every enum setting
SET timing_clock_source = 'SYSTEM';
SHOW timing_clock_source;

RESET timing_clock_source;
SHOW timing_clock_source;

SET timing_clock_source = 'system';
SET timing_clock_source TO DEFAULT;
SHOW timing_clock_source;

-- unknown values list the valid ones
SET timing_clock_source = 'rdtsc';
SET timing_clock_source = '';
SET timing_clock_source = 'tsc, system';
SHOW timing_clock_source;

-- transaction and function scoping
BEGIN;
SET LOCAL timing_clock_source = 'system';
SHOW timing_clock_source;
COMMIT;
SHOW timing_clock_source;

BEGIN;
SET timing_clock_source = 'system';
ROLLBACK;
SHOW timing_clock_source;

SELECT set_config('timing_clock_source', 'system', true) AS set_config_result;
SHOW timing_clock_source;

CREATE FUNCTION ts_shown() RETURNS text LANGUAGE sql
  SET timing_clock_source = 'system'
  AS $$ SELECT current_setting('timing_clock_source') $$;
SELECT ts_shown();
SHOW timing_clock_source;
DROP FUNCTION ts_shown();

-- the server-wide default cannot be changed by a session
SET timing_source.clock_source = 'system';
SHOW timing_source.clock_source;

-- the prefix is reserved for this extension's settings
SET timing_source.no_such_setting = 'x';

-- ALTER SYSTEM would write a name the server cannot read at start-up
ALTER SYSTEM SET timing_clock_source = 'system';

-- the error for an unusable 'tsc' names the concrete reason in its detail
-- and carries a hint; where the TSC is usable, the setting is accepted
DO $$
DECLARE
    d text;
    h text;
    reason text;
BEGIN
    SELECT reason_unusable INTO reason FROM timing_source_tsc();
    BEGIN
        SET LOCAL timing_clock_source = 'tsc';
        RAISE NOTICE 'tsc accepted; reason_unusable is null: %', reason IS NULL;
    EXCEPTION WHEN feature_not_supported THEN
        GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
        RAISE NOTICE 'tsc refused; detail is the reason: %, hint given: %',
            d = reason, h <> '';
    END;
END
$$;

-- round trip: every value SHOW prints is accepted back by SET
RESET timing_clock_source;
SELECT set_config('timing_clock_source', current_setting('timing_clock_source'), false)
       = current_setting('timing_clock_source') AS set_config_round_trip;
-- the session no longer follows the server default: it has an explicit auto
SELECT source FROM pg_settings WHERE name = 'timing_clock_source';
SHOW timing_clock_source;
RESET timing_clock_source;
SET timing_clock_source = 'auto (tsc)';
SHOW timing_clock_source;
SET timing_clock_source = 'AUTO (SYSTEM)';
SHOW timing_clock_source;
SET timing_clock_source = 'auto(tsc)';
RESET timing_clock_source;
SET timing_clock_source FROM CURRENT;
SHOW timing_clock_source;
SET timing_clock_source = 'system';
SET timing_clock_source FROM CURRENT;
SHOW timing_clock_source;
RESET timing_clock_source;

-- a function's SET ... FROM CURRENT stores the shown value and applies it
CREATE FUNCTION ts_from_current() RETURNS text LANGUAGE sql
  SET timing_clock_source FROM CURRENT
  AS $$ SELECT current_setting('timing_clock_source') $$;
SELECT proconfig = ARRAY['timing_clock_source=' || current_setting('timing_clock_source')]
       AS proconfig_is_the_shown_value
  FROM pg_proc WHERE proname = 'ts_from_current';
SELECT ts_from_current() = current_setting('timing_clock_source') AS from_current_applies;
DROP FUNCTION ts_from_current();
SET timing_clock_source = 'system';
CREATE FUNCTION ts_from_current() RETURNS text LANGUAGE sql
  SET timing_clock_source FROM CURRENT
  AS $$ SELECT current_setting('timing_clock_source') $$;
RESET timing_clock_source;
SELECT ts_from_current();
DROP FUNCTION ts_from_current();

-- the decision passed to parallel workers is not a user setting
SET timing_source.parallel_clock = '2000000/1/1';
SELECT count(*) AS listed FROM pg_settings WHERE name = 'timing_source.parallel_clock';
