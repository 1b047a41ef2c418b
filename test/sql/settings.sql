--
-- timing_clock_source: values, SHOW strings, errors, RESET, scoping
-- (PostgreSQL 15-18: on 19+ core owns the setting and the Makefile leaves
-- this test out; init checks the settings there).
--
-- One output for every host: what SHOW prints for auto depends on whether
-- the TSC is usable.  shown() is SHOW's string, but with the resolution
-- auto must have on this host ("auto (tsc)" where the TSC is usable and
-- nothing keeps auto off it, else "auto (system)") written as "auto (as
-- resolved here)", so any other resolution shows as itself and fails.
--
CREATE FUNCTION pg_temp.shown() RETURNS text LANGUAGE sql AS $$
	SELECT CASE current_setting('timing_clock_source')
		   WHEN (SELECT CASE WHEN available AND coalesce(auto_reason, '') = ''
							 THEN 'auto (tsc)' ELSE 'auto (system)' END
				   FROM timing_source_tsc())
		   THEN 'auto (as resolved here)'
		   ELSE current_setting('timing_clock_source') END
$$;
-- SHOW prints what current_setting() gives
SHOW timing_clock_source \gset shown_
SELECT :'shown_timing_clock_source' = current_setting('timing_clock_source') AS show_is_current_setting;

-- the default follows the server-wide timing_source.clock_source (auto)
SHOW timing_source.clock_source;
SELECT pg_temp.shown() AS timing_clock_source;
SELECT current_setting('timing_clock_source') IN ('auto (tsc)', 'auto (system)') AS auto_shown;
SELECT setting = current_setting('timing_clock_source') AS pg_settings_agrees
  FROM pg_settings WHERE name = 'timing_clock_source';
-- in_use follows what auto resolved to
SELECT in_use = (current_setting('timing_clock_source') = 'auto (tsc)') AS in_use_consistent
  FROM timing_source_tsc();

SET timing_clock_source = 'system';
SELECT pg_temp.shown() AS timing_clock_source;
SELECT in_use FROM timing_source_tsc();

SET timing_clock_source = 'auto';
SELECT pg_temp.shown() AS timing_clock_source;

-- explicit tsc: accepted exactly where the TSC is usable, and then in use;
-- elsewhere refused with the host's reason, auto staying in effect
SELECT ts_set_tsc() AS tsc_accepted_exactly_where_usable;
SELECT current_setting('timing_clock_source')
	   = CASE WHEN available THEN 'tsc' ELSE 'auto (system)' END AS tsc_shown_exactly_where_usable,
	   in_use = available AS in_use_exactly_where_usable
  FROM timing_source_tsc();

-- values are case-insensitive, like every enum setting
SET timing_clock_source = 'SYSTEM';
SELECT pg_temp.shown() AS timing_clock_source;

RESET timing_clock_source;
SELECT pg_temp.shown() AS timing_clock_source;

SET timing_clock_source = 'system';
SET timing_clock_source TO DEFAULT;
SELECT pg_temp.shown() AS timing_clock_source;

-- unknown values list the valid ones
SET timing_clock_source = 'rdtsc';
SET timing_clock_source = '';
SET timing_clock_source = 'tsc, system';
SELECT pg_temp.shown() AS timing_clock_source;

-- transaction and function scoping
BEGIN;
SET LOCAL timing_clock_source = 'system';
SELECT pg_temp.shown() AS timing_clock_source;
COMMIT;
SELECT pg_temp.shown() AS timing_clock_source;

BEGIN;
SET timing_clock_source = 'system';
ROLLBACK;
SELECT pg_temp.shown() AS timing_clock_source;

SELECT set_config('timing_clock_source', 'system', true) AS set_config_result;
SELECT pg_temp.shown() AS timing_clock_source;

CREATE FUNCTION ts_shown() RETURNS text LANGUAGE sql
  SET timing_clock_source = 'system'
  AS $$ SELECT current_setting('timing_clock_source') $$;
SELECT ts_shown();
SELECT pg_temp.shown() AS timing_clock_source;
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
        RAISE NOTICE 'tsc accepted exactly where usable, refused elsewhere with the reason and a hint: %',
            reason IS NULL;
    EXCEPTION WHEN feature_not_supported THEN
        GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
        RAISE NOTICE 'tsc accepted exactly where usable, refused elsewhere with the reason and a hint: %',
            d = reason AND h <> '';
    END;
END
$$;

-- round trip: every value SHOW prints is accepted back by SET
RESET timing_clock_source;
SELECT set_config('timing_clock_source', current_setting('timing_clock_source'), false)
       = current_setting('timing_clock_source') AS set_config_round_trip;
-- the session no longer follows the server default: it has an explicit auto
SELECT source FROM pg_settings WHERE name = 'timing_clock_source';
SELECT pg_temp.shown() AS timing_clock_source;
RESET timing_clock_source;
SET timing_clock_source = 'auto (tsc)';
SELECT pg_temp.shown() AS timing_clock_source;
SET timing_clock_source = 'AUTO (SYSTEM)';
SELECT pg_temp.shown() AS timing_clock_source;
SET timing_clock_source = 'auto(tsc)';
RESET timing_clock_source;
SET timing_clock_source FROM CURRENT;
SELECT pg_temp.shown() AS timing_clock_source;
SET timing_clock_source = 'system';
SET timing_clock_source FROM CURRENT;
SELECT pg_temp.shown() AS timing_clock_source;
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
-- nor is where a leader's parallel workers leave their sampling figures
SET timing_source.parallel_sampling = '1/2/0';
SELECT count(*) AS listed FROM pg_settings WHERE name = 'timing_source.parallel_sampling';
