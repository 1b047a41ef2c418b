--
-- Create the extension; every later regression test runs in this database.
--
CREATE EXTENSION timing_source;
SELECT extname, extversion FROM pg_extension WHERE extname = 'timing_source';
-- the library is preloaded, so the settings exist before CREATE EXTENSION
SELECT name, vartype, context, enumvals
  FROM pg_settings
 WHERE name IN ('timing_clock_source', 'timing_source.clock_source')
 ORDER BY name;
