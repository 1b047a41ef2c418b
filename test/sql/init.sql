--
-- Create the extension; every later regression test runs in this database.
--
CREATE EXTENSION timing_source;
SELECT extname, extversion FROM pg_extension WHERE extname = 'timing_source';
-- PostgreSQL 19 and later own timing_clock_source (superuser-only there):
-- the extension then defines neither clock setting, only
-- timing_source.node_wrappers and timing_source.sample_every (init_1.out)
SELECT current_setting('server_version_num')::int >= 190000 AS core_owns_setting;
SELECT name FROM pg_settings WHERE name LIKE 'timing\_source.%' ORDER BY name;
-- 19+: the wrappers' switch is user-settable and on unless set
SELECT name, vartype, context, boot_val, setting
  FROM pg_settings WHERE name = 'timing_source.node_wrappers';
-- the library is preloaded, so the settings exist before CREATE EXTENSION
SELECT name, vartype, context, enumvals
  FROM pg_settings
 WHERE name IN ('timing_clock_source', 'timing_source.clock_source')
 ORDER BY name;
