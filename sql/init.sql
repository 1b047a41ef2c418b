--
-- Create the extension; every later regression test runs in this database.
--
CREATE EXTENSION timing_source;
SELECT extname, extversion FROM pg_extension WHERE extname = 'timing_source';
-- PostgreSQL 19 and later own timing_clock_source (superuser-only there):
-- the extension then defines no setting at all (init_1.out)
SELECT current_setting('server_version_num')::int >= 190000 AS core_owns_setting;
SELECT name FROM pg_settings WHERE name LIKE 'timing\_source.%' ORDER BY name;
-- the library is preloaded, so the settings exist before CREATE EXTENSION
SELECT name, vartype, context, enumvals
  FROM pg_settings
 WHERE name IN ('timing_clock_source', 'timing_source.clock_source')
 ORDER BY name;
