--
-- Upgrades: every released version of the extension, installed and then
-- updated to the current default version, must have exactly the objects of
-- a fresh install: the same members, and for functions the same
-- signature, result, properties, source, comment and privileges.
--
-- Runs last: it drops and re-creates the extension in this database.
--
CREATE TEMP TABLE ts_objects (how text, member text, detail text);

CREATE FUNCTION pg_temp.ts_snapshot(how text) RETURNS void LANGUAGE sql AS $$
    INSERT INTO ts_objects
    SELECT how,
           pg_describe_object(d.classid, d.objid, d.objsubid),
           CASE WHEN d.classid = 'pg_proc'::regclass THEN
               (SELECT format('args=%s result=%s strict=%s volatile=%s parallel=%s rows=%s cost=%s src=%s bin=%s acl=%s comment=%s',
                              pg_get_function_arguments(p.oid), pg_get_function_result(p.oid),
                              p.proisstrict, p.provolatile, p.proparallel, p.prorows, p.procost,
                              p.prosrc, p.probin, p.proacl,
                              obj_description(p.oid, 'pg_proc'))
                  FROM pg_proc p WHERE p.oid = d.objid)
           END
      FROM pg_depend d
     WHERE d.refclassid = 'pg_extension'::regclass
       AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'timing_source')
       AND d.deptype = 'e';
$$;

SELECT default_version FROM pg_available_extensions WHERE name = 'timing_source';

DROP EXTENSION timing_source;
CREATE EXTENSION timing_source;
SELECT pg_temp.ts_snapshot('fresh');
SELECT count(*) AS fresh_members FROM ts_objects WHERE how = 'fresh';

-- every older version that has an update path to the default
DO $$
DECLARE
    v text;
    cur text;
BEGIN
    SELECT default_version INTO cur FROM pg_available_extensions WHERE name = 'timing_source';
    FOR v IN SELECT source FROM pg_extension_update_paths('timing_source')
              WHERE target = cur AND path IS NOT NULL ORDER BY source
    LOOP
        DROP EXTENSION timing_source;
        EXECUTE format('CREATE EXTENSION timing_source VERSION %L', v);
        ALTER EXTENSION timing_source UPDATE;
        PERFORM pg_temp.ts_snapshot('from ' || v);
    END LOOP;
END
$$;

SELECT how, (SELECT extversion FROM pg_extension WHERE extname = 'timing_source') AS now_at
  FROM ts_objects WHERE how <> 'fresh' GROUP BY how ORDER BY how;

-- differences, in both directions (none expected)
SELECT u.how, 'missing after update' AS problem, f.member, f.detail
  FROM (SELECT DISTINCT how FROM ts_objects WHERE how <> 'fresh') u,
       ts_objects f
 WHERE f.how = 'fresh'
   AND NOT EXISTS (SELECT 1 FROM ts_objects o
                    WHERE o.how = u.how AND o.member = f.member
                      AND o.detail IS NOT DISTINCT FROM f.detail)
UNION ALL
SELECT o.how, 'only after update', o.member, o.detail
  FROM ts_objects o
 WHERE o.how <> 'fresh'
   AND NOT EXISTS (SELECT 1 FROM ts_objects f
                    WHERE f.how = 'fresh' AND f.member = o.member
                      AND f.detail IS NOT DISTINCT FROM o.detail)
ORDER BY 1, 2, 3;

-- a database still on 1.0 keeps working with the new library: its
-- 12-column timing_source_tsc() is served as is
DROP EXTENSION timing_source;
CREATE EXTENSION timing_source VERSION '1.0';
SELECT count(*) AS columns_1_0 FROM timing_source_tsc() t, json_each(row_to_json(t)) c;
SELECT (reason_unusable IS NULL) = available AS v1_0_consistent FROM timing_source_tsc();
ALTER EXTENSION timing_source UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'timing_source';
