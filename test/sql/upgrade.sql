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
-- (types are left out of the count: from 18 on a view's row type is a
-- member too)
SELECT count(*) AS fresh_members FROM ts_objects WHERE how = 'fresh' AND member NOT LIKE 'type %';

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

-- a database still on 1.1 gets the float8 figures of its definitions,
-- unrounded and without the bar column; after the update, numeric ones
-- rounded to fixed scales, and the bar.  "sane" tells real figures from a
-- datum of the other type read as this one (a numeric pointer read as a
-- float8 is a tiny denormal number)
CREATE FUNCTION pg_temp.ts_figure_types() RETURNS TABLE (fn text, columns bigint, types text, sane boolean) LANGUAGE sql AS $$
    (SELECT 'histogram', 1::bigint, concat_ws(',', pg_typeof(pct), pg_typeof(running_pct)),
            abs(sum(pct) OVER () - 100) <= 0.001 AND max(running_pct) OVER () = 100
       FROM timing_source_histogram('system', 0.01) LIMIT 1)
    UNION ALL
    SELECT 'histogram row', count(*), NULL, NULL
      FROM (SELECT * FROM timing_source_histogram('system', 0.01) LIMIT 1) t, json_each(row_to_json(t))
    UNION ALL
    SELECT 'durations row', count(*), NULL, NULL
      FROM (SELECT * FROM timing_source_durations('system', 0.01) LIMIT 1) t, json_each(row_to_json(t))
    UNION ALL
    SELECT 'test', 1, pg_typeof(avg_loop_ns)::text, avg_loop_ns > 1 AND avg_loop_ns < 1e6
      FROM timing_source_test(0.01) WHERE source = 'system'
    UNION ALL
    SELECT 'compare', 1, concat_ws(',', pg_typeof(min_ms), pg_typeof(median_ms), pg_typeof(ratio_vs_off),
                                   pg_typeof(overhead_ns_per_row)),
           min_ms > 0.0001 AND median_ms >= min_ms AND ratio_vs_off > 0.01 AND ratio_vs_off < 1e4
      FROM timing_source_compare('SELECT 1', 1) WHERE mode = 'system'
    UNION ALL
    SELECT 'tsc', 1, pg_typeof(calibration_ppm)::text, coalesce(calibration_ppm = 0 OR abs(calibration_ppm) BETWEEN 1e-9 AND 1e6, true)
      FROM timing_source_tsc();
$$;
DROP EXTENSION timing_source;
CREATE EXTENSION timing_source VERSION '1.1';
SELECT * FROM pg_temp.ts_figure_types();
ALTER EXTENSION timing_source UPDATE;
SELECT * FROM pg_temp.ts_figure_types();
SELECT extversion FROM pg_extension WHERE extname = 'timing_source';

-- a database still on 1.3 keeps its 18-column timing_source_tsc(); the
-- update to 1.4 adds the recovery counts (21), all zero without a trip
DROP EXTENSION timing_source;
CREATE EXTENSION timing_source VERSION '1.3';
SELECT count(*) AS columns_1_3 FROM timing_source_tsc() t, json_each(row_to_json(t)) c;
ALTER EXTENSION timing_source UPDATE;
SELECT count(*) AS columns_now FROM timing_source_tsc() t, json_each(row_to_json(t)) c;
SELECT recalibrations = 0 AND recalibrations_agreed = 0 AND watchdog_recoveries = 0
       AS no_recovery_without_trip
  FROM timing_source_tsc();
SELECT extversion FROM pg_extension WHERE extname = 'timing_source';

-- a database still on 1.4 has none of the per-node statistics; the
-- update to 1.5 adds the view and its functions, which then answer
DROP EXTENSION timing_source;
CREATE EXTENSION timing_source VERSION '1.4';
SELECT count(*) AS plan_objects_1_4 FROM pg_proc WHERE proname LIKE 'timing_source_plan%';
ALTER EXTENSION timing_source UPDATE;
SELECT count(*) AS plan_objects_now FROM pg_proc WHERE proname LIKE 'timing_source_plan%';
SELECT max >= 100 AS track_max_shown FROM timing_source_plan_nodes_info();
SELECT count(*) >= 0 AS view_reads FROM timing_source_plan_nodes;
SELECT extversion FROM pg_extension WHERE extname = 'timing_source';
