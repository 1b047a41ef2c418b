-- Shapes and invariants of the diagnostics (pgTAP).  The TSC sources are
-- checked where the TSC is usable and skipped, saying so, where not.
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;
SELECT plan(59);

CREATE TEMP TABLE tsc AS SELECT * FROM timing_source_tsc();
CREATE TEMP TABLE srcs AS
  SELECT unnest(CASE WHEN available THEN ARRAY['system', 'rdtscp', 'rdtsc']
                     ELSE ARRAY['system'] END) AS source
    FROM tsc;

-- histogram rows of every available source, in output order
CREATE TEMP TABLE h AS
  SELECT s.source, x.*
    FROM srcs s, LATERAL timing_source_histogram(s.source, 0.2)
         WITH ORDINALITY AS x(le_ns, pct, running_pct, count, bar, ord);

SELECT is((SELECT count(DISTINCT source) FROM h), (SELECT count(*) FROM srcs),
          'histogram: rows for every available source');
SELECT is((SELECT count(*) FROM h WHERE le_ns <> (2::numeric ^ (ord - 1))::bigint - 1), 0::bigint,
          'histogram: bucket bounds are exactly 0, 1, 3, 7, 15, ... in order');
SELECT is((SELECT count(*) FROM h WHERE ord = 1 AND le_ns = 0), (SELECT count(*) FROM srcs),
          'histogram: the first row is 0 ns');
-- pct and running_pct are rounded to 4 decimals independently: each is
-- within half a unit (0.00005) of the exact figure
SELECT is((SELECT count(*) FROM h WHERE pg_typeof(pct) <> 'numeric'::regtype
                                     OR pg_typeof(running_pct) <> 'numeric'::regtype
                                     OR scale(pct) <> 4 OR scale(running_pct) <> 4), 0::bigint,
          'histogram: percentages are numeric with 4 decimals, as pg_test_timing prints them');
SELECT is((SELECT count(*) FROM (SELECT source FROM h GROUP BY source
                                 HAVING abs(sum(pct) - 100) > count(*) * 0.00005) x), 0::bigint,
          'histogram: percentages sum to 100 within rounding');
SELECT is((SELECT count(*) FROM (SELECT running_pct < lag(running_pct) OVER w AS bad
                                   FROM h WINDOW w AS (PARTITION BY source ORDER BY ord)) x
            WHERE bad), 0::bigint,
          'histogram: running_pct never decreases');
SELECT is((SELECT count(*) FROM (SELECT abs(running_pct - sum(pct) OVER w) > (ord + 1) * 0.00005 AS bad
                                   FROM h WINDOW w AS (PARTITION BY source ORDER BY ord)) x
            WHERE bad), 0::bigint,
          'histogram: running_pct is the running sum of pct (within rounding)');
SELECT is((SELECT count(*) FROM (SELECT abs(running_pct - sum(count) OVER w * 100.0 / sum(count) OVER (PARTITION BY source)) > 0.00005 AS bad
                                   FROM h WINDOW w AS (PARTITION BY source ORDER BY ord)) x
            WHERE bad), 0::bigint,
          'histogram: running_pct is the running count over all loops, rounded');
SELECT is((SELECT count(*) FROM h h1
            WHERE ord = (SELECT max(ord) FROM h h2 WHERE h2.source = h1.source)
              AND running_pct = 100 AND count > 0), (SELECT count(*) FROM srcs),
          'histogram: last row ends at exactly 100% and is the highest non-empty bucket');
SELECT is((SELECT count(*) FROM (SELECT abs(pct - count * 100.0 / sum(count) OVER (PARTITION BY source)) > 0.00005 AS bad
                                   FROM h) x WHERE bad), 0::bigint,
          'histogram: pct is count over the sum of counts, rounded (every loop counted once)');
-- the bar: 40 '#' for the tallest bucket, proportionally fewer (rounded
-- down) for the others, '.' where a non-empty bucket is too small for one
CREATE TEMP VIEW bar_expected AS
  SELECT 'h' AS t, source, NULL::float8 AS cutoff, ord, bar,
         CASE WHEN count = 0 THEN ''
              WHEN floor(40.0 * count / max(count) OVER (PARTITION BY source)) = 0 THEN '.'
              ELSE repeat('#', floor(40.0 * count / max(count) OVER (PARTITION BY source))::int) END AS want
    FROM h;
SELECT is((SELECT count(*) FROM bar_expected WHERE bar IS DISTINCT FROM want), 0::bigint,
          'histogram: the bar is the count relative to the tallest bucket, 40 characters wide');
SELECT is((SELECT count(*) FROM h WHERE bar = repeat('#', 40)), (SELECT count(DISTINCT source) FROM h),
          'histogram: exactly the tallest bucket has the full bar (ties aside)');
SELECT ok((SELECT bool_and(count >= 0) AND min(total) > 1000
             FROM h, LATERAL (SELECT sum(count) AS total FROM h h2 WHERE h2.source = h.source) t),
          'histogram: counts are non-negative and there are many loops');
SELECT is((SELECT count(*) FROM h WHERE le_ns < 0 OR pct < 0 OR pct > 100
                                     OR running_pct < 0 OR running_pct > 100), 0::bigint,
          'histogram: values within their ranges');

-- exact durations, default cutoff and cutoff 100
CREATE TEMP TABLE d AS
  SELECT s.source, c.cutoff, x.*
    FROM srcs s, (VALUES (99.99::float8), (100), (50)) c(cutoff),
         LATERAL timing_source_durations(s.source, 0.2, c.cutoff)
         WITH ORDINALITY AS x(ns, pct, running_pct, count, bar, ord);
CREATE TEMP VIEW d_last AS
  SELECT * FROM d d1 WHERE ord = (SELECT max(ord) FROM d d2
                                   WHERE d2.source = d1.source AND d2.cutoff = d1.cutoff);

SELECT is((SELECT count(*) FROM (SELECT ns <= lag(ns) OVER w AS bad FROM d
                                  WINDOW w AS (PARTITION BY source, cutoff ORDER BY ord)) x
            WHERE bad), 0::bigint,
          'durations: strictly ascending');
SELECT is((SELECT count(*) FROM d_last l
            WHERE l.ns = (SELECT max(ns) FROM d WHERE d.source = l.source AND d.cutoff = l.cutoff)),
          (SELECT count(*) * 3 FROM srcs),
          'durations: the largest difference is last');
SELECT is((SELECT count(*) FROM d_last WHERE running_pct = 100 AND count > 0),
          (SELECT count(*) * 3 FROM srcs),
          'durations: the last row has running_pct exactly 100');
SELECT is((SELECT count(*) FROM (SELECT running_pct < lag(running_pct) OVER w AS bad FROM d
                                  WINDOW w AS (PARTITION BY source, cutoff ORDER BY ord)) x
            WHERE bad), 0::bigint,
          'durations: running_pct never decreases');
-- a running_pct rounded up to the cutoff may still be below it: only one
-- at least half a unit above it must have stopped the rows
SELECT is((SELECT count(*) FROM d
            WHERE running_pct >= cutoff + 0.00005
              AND ord < (SELECT max(ord) FROM d_last l WHERE l.source = d.source AND l.cutoff = d.cutoff) - 1),
          0::bigint,
          'durations: rows stop once the running percentage reaches the cutoff, then the largest');
-- and they do not stop before it: the rows before the largest reach the
-- cutoff, or the largest is the row that completes it (within rounding).
-- Checked at cutoff 50, which differences below 10,000 ns (the exact
-- table) always reach unless half the reads took 10 us; at 99.99 a busy
-- machine can have more than 0.01% of reads beyond the exact table.
-- (This replaces a comparison of row counts between cutoffs, which were
-- separate runs and so did not always have the same shape.)
SELECT is((SELECT count(*) FROM d_last l
            WHERE l.cutoff = 50 AND coalesce((SELECT running_pct FROM d p
                             WHERE p.source = l.source AND p.cutoff = l.cutoff AND p.ord = l.ord - 1), 0)
                  + l.pct < l.cutoff - 0.0001), 0::bigint,
          'durations: rows continue until the running percentage reaches the cutoff');
-- with cutoff 100 every difference below 10,000 ns is listed: the running
-- percentage then grows by each row's pct, within three roundings
-- (0.00015).  The run is short, so that a single skipped reading (100 /
-- loops percent) would exceed that; the second check makes sure it does.
CREATE TEMP TABLE d100 AS
  SELECT s.source, x.*
    FROM srcs s, LATERAL timing_source_durations(s.source, 0.002, 100)
         WITH ORDINALITY AS x(ns, pct, running_pct, count, bar, ord);
SELECT is((SELECT count(*) FROM (SELECT ns, abs(running_pct - coalesce(lag(running_pct) OVER w, 0) - pct) > 0.00015 AS bad
                                   FROM d100
                                 WINDOW w AS (PARTITION BY source ORDER BY ord)) x
            WHERE bad AND ns < 10000), 0::bigint,
          'durations: with cutoff 100 no difference below 10,000 ns is skipped');
SELECT ok((SELECT bool_and(one_reading_pct > 0.0003) FROM
            (SELECT DISTINCT ON (source) source, pct / count AS one_reading_pct
               FROM d100 ORDER BY source, count DESC) x),
          'durations: in that short run one reading is more than 0.0003%, so a skipped one would show');
SELECT is((SELECT count(*) FROM d WHERE ns < 0 OR count <= 0 OR pct < 0 OR pct > 100), 0::bigint,
          'durations: every listed difference was observed');
SELECT is((SELECT count(*) FROM d WHERE pg_typeof(pct) <> 'numeric'::regtype OR scale(pct) <> 4
                                     OR scale(running_pct) <> 4), 0::bigint,
          'durations: percentages are numeric with 4 decimals');
SELECT is((SELECT count(*) FROM (SELECT bar,
                                        CASE WHEN floor(40.0 * count / max(count) OVER (PARTITION BY source)) = 0 THEN '.'
                                             ELSE repeat('#', floor(40.0 * count / max(count) OVER (PARTITION BY source))::int) END AS want
                                   FROM d WHERE cutoff = 100) x
            WHERE bar IS DISTINCT FROM want), 0::bigint,
          'durations: the bar is the count relative to the most frequent difference (cutoff 100 lists them all)');

-- one row per available source
CREATE TEMP TABLE tt AS SELECT * FROM timing_source_test(0.2);
SELECT results_eq('SELECT source FROM tt ORDER BY source',
                  'SELECT source FROM srcs ORDER BY source',
                  'test: one row per available source');
SELECT is((SELECT count(*) FROM tt WHERE loops > 0 AND avg_loop_ns > 0), (SELECT count(*) FROM srcs),
          'test: loops and average loop time are positive');
SELECT is((SELECT count(*) FROM tt WHERE 0 <= median_ns AND median_ns <= p99_ns AND p99_ns <= max_ns),
          (SELECT count(*) FROM srcs),
          'test: 0 <= median <= p99 <= max');
SELECT ok((SELECT bool_and(loops * (avg_loop_ns + 0.005) >= 0.2e9) FROM tt),
          'test: loops x average loop time covers the requested duration (within its rounding)');
SELECT is((SELECT backwards FROM tt WHERE source = 'system'), 0::bigint,
          'test: CLOCK_MONOTONIC never went backwards');
SELECT ok((SELECT bool_and(backwards >= 0 AND backwards <= loops) FROM tt),
          'test: backwards counts are within the loop count');
SELECT ok((SELECT bool_and(avg_loop_ns < 100000) FROM tt),
          'test: average loop time is plausible (under 100 us)');
SELECT is((SELECT count(*) FROM tt WHERE pg_typeof(avg_loop_ns) = 'numeric'::regtype AND scale(avg_loop_ns) = 2),
          (SELECT count(*) FROM srcs),
          'test: average loop time is numeric with 2 decimals, as pg_test_timing prints it');

-- calibration: needs RDTSCP only (arm64: a counter readable from user space)
SELECT CASE WHEN (SELECT coalesce(rdtscp, frequency_source ~ '^arm64'
                                  AND coalesce(reason_unusable, '') !~ 'CNTVCT_EL0.*faults') FROM tsc)
  THEN collect_tap(
    is((SELECT count(*) FROM timing_source_calibrate(3)), 3::bigint, 'calibrate: one row per run'),
    results_eq('SELECT run FROM timing_source_calibrate(4)', 'VALUES (1), (2), (3), (4)',
               'calibrate: runs numbered 1..n'),
    is((SELECT count(*) FROM timing_source_calibrate(3)
         WHERE iterations > 0 AND elapsed_us > 0
           AND (NOT converged OR
                CASE WHEN (SELECT frequency_source ~ '^arm64' FROM tsc)
                     THEN frequency_khz BETWEEN 1000 AND 5000000
                     ELSE frequency_khz BETWEEN 100000 AND 20000000 END)), 3::bigint,
       'calibrate: iterations and time positive, converged frequencies plausible'),
    -- a usable TSC passed a converged calibration at start-up, so at least
    -- one of three runs converges; every converged one must agree
    CASE WHEN (SELECT available FROM tsc)
      THEN ok((SELECT count(*) FILTER (WHERE converged) >= 1
                      AND coalesce(bool_and(abs(ppm_vs_in_use) < 100000) FILTER (WHERE converged), false)
                 FROM timing_source_calibrate(3)),
              'calibrate: where the TSC is usable, a run converges and every converged run agrees with the frequency in use within 10%')
      ELSE skip('the TSC is not usable here: no frequency in use to compare calibration with', 1)
    END,
    ok((SELECT bool_and((ppm_vs_in_use IS NULL) = (frequency_khz IS NULL OR (SELECT frequency_khz IS NULL FROM tsc)))
          FROM timing_source_calibrate(3)),
       'calibrate: ppm_vs_in_use is NULL exactly when a frequency is missing'),
    ok((SELECT bool_and(pg_typeof(elapsed_us) = 'numeric'::regtype AND scale(elapsed_us) = 3
                        AND coalesce(scale(ppm_vs_in_use) = 3, true))
          FROM timing_source_calibrate(2)),
       'calibrate: elapsed_us and ppm_vs_in_use are numeric with 3 decimals'))
  ELSE skip('the CPU has no RDTSCP (nor a readable arm64 counter), calibration is refused (see tsdiag_tsc)', 6)
  END;

-- the report
CREATE TEMP TABLE r AS SELECT * FROM timing_source_report(0.05) WITH ORDINALITY AS x(line, ord);
SELECT is((SELECT count(*) FROM r WHERE line ~ '^Average loop time including overhead: [0-9.]+ ns$'),
          (SELECT count(*) FROM srcs), 'report: one average loop time per available source');
SELECT is((SELECT count(*) FROM r WHERE line = 'Histogram of timing durations:'),
          (SELECT count(*) FROM srcs), 'report: one histogram per available source');
SELECT is((SELECT count(*) FROM r WHERE line = 'Observed timing durations up to 99.9900%:'),
          (SELECT count(*) FROM srcs), 'report: one exact-duration block per available source');
SELECT is((SELECT count(*) FROM r WHERE line = 'System clock source: clock_gettime (CLOCK_MONOTONIC)'),
          1::bigint, 'report: system section');
SELECT is((SELECT count(*) FROM r WHERE line IN ('Clock source: RDTSCP', 'Fast clock source: RDTSC',
                                                  'Clock source: ISB + CNTVCT_EL0', 'Fast clock source: CNTVCT_EL0')),
          CASE WHEN (SELECT available FROM tsc) THEN 2::bigint ELSE 0 END,
          'report: ordered and plain counter sections (RDTSCP and RDTSC; on arm64 ISB + CNTVCT_EL0 and CNTVCT_EL0) exactly where the TSC is usable');
SELECT is((SELECT count(*) FROM r WHERE line ~ '^TSC frequency in use: [0-9]+ kHz$'),
          CASE WHEN (SELECT available FROM tsc) THEN 1::bigint ELSE 0 END,
          'report: frequency in use exactly where the TSC is usable');
SELECT is((SELECT line FROM r WHERE line LIKE 'TSC frequency in use:%'),
          CASE WHEN (SELECT available FROM tsc)
               THEN 'TSC frequency in use: ' || (SELECT frequency_khz FROM tsc) || ' kHz' END,
          'report: the frequency in use is the one timing_source_tsc() reports');
SELECT is((SELECT line FROM r WHERE line LIKE 'TSC frequency source:%'),
          CASE WHEN (SELECT invariant IS NOT NULL FROM tsc)  -- a build with a counter (x86-64, arm64)
               THEN 'TSC frequency source: ' || (SELECT frequency_source FROM tsc) END,
          'report: the frequency source is the one timing_source_tsc() reports');
SELECT is((SELECT line FROM r WHERE line LIKE 'TSC clock source is not usable:%'),
          CASE WHEN NOT (SELECT available FROM tsc)
               THEN 'TSC clock source is not usable: ' || (SELECT reason_unusable FROM tsc) END,
          'report: the reason, exactly where the TSC is not usable');
SET LOCAL timing_clock_source = 'auto';
SELECT is((SELECT count(*) FROM r WHERE line LIKE 'TSC clock source will be used by default%'),
          CASE WHEN (SELECT in_use FROM timing_source_tsc()) THEN 1::bigint ELSE 0 END,
          'report: "will be used by default" exactly when auto picks the TSC');
SELECT is((SELECT count(*) FROM r WHERE line LIKE 'WARNING:%'), 0::bigint,
          'report: no calibration warning on this machine');
SELECT is((SELECT count(*) FROM r r1, r r2
            WHERE r1.line = 'Histogram of timing durations:' AND r2.ord = r1.ord + 1
              AND r2.line = '   <= ns   % of total  running %      count'),
          (SELECT count(*) FROM srcs), 'report: histogram header as in pg_test_timing');
SELECT ok((SELECT count(*) FROM r WHERE line ~ '^ *[0-9]+ +[0-9]+\.[0-9]{4} +[0-9]+\.[0-9]{4} +[0-9]+$') > 10,
          'report: histogram rows formatted as in pg_test_timing');

-- arguments are validated before anything is measured (details in pg_regress)
SELECT throws_ok($$SELECT * FROM timing_source_histogram('hpet')$$, '22023', NULL,
                 'histogram: unknown source refused');
SELECT throws_ok($$SELECT * FROM timing_source_durations('system', 1, 0)$$, '22023', NULL,
                 'durations: cutoff 0 refused');
SELECT throws_ok($$SELECT * FROM timing_source_test(3600.5)$$, '22023', NULL,
                 'test: duration over an hour refused');

-- where the TSC is unusable, asking for it says why, as the setting does
CREATE FUNCTION pg_temp.tsc_error(src text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  msg text; det text;
BEGIN
  PERFORM * FROM timing_source_histogram(src, 0.01);
  RETURN 'no error';
EXCEPTION WHEN feature_not_supported THEN
  GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
  RETURN msg || ' / ' || det;
END $$;
SELECT CASE WHEN (SELECT available FROM tsc)
  THEN collect_tap(
    is(pg_temp.tsc_error('rdtsc'), 'no error', 'rdtsc: accepted where the TSC is usable'),
    is(pg_temp.tsc_error('rdtscp'), 'no error', 'rdtscp: accepted where the TSC is usable'))
  ELSE collect_tap(
    is(pg_temp.tsc_error('rdtsc'),
       'clock source "rdtsc" is not available on this system / ' || (SELECT reason_unusable FROM tsc),
       'rdtsc: refused with the reason timing_source_tsc() gives'),
    is(pg_temp.tsc_error('rdtscp'),
       'clock source "rdtscp" is not available on this system / ' || (SELECT reason_unusable FROM tsc),
       'rdtscp: refused with the reason timing_source_tsc() gives'))
  END;

-- arm64: the instructions' own names for the two counter reads; elsewhere
-- they are not sources at all
SELECT CASE WHEN (SELECT frequency_source ~ '^arm64' FROM tsc)
  THEN collect_tap(
    is(pg_temp.tsc_error('cntvct'), pg_temp.tsc_error('rdtsc'), 'cntvct: the same as rdtsc on arm64'),
    is(pg_temp.tsc_error('cntvct_isb'), pg_temp.tsc_error('rdtscp'), 'cntvct_isb: the same as rdtscp on arm64'))
  ELSE collect_tap(
    throws_ok($$SELECT * FROM timing_source_histogram('cntvct', 0.01)$$, '22023', NULL,
              'cntvct: not a source off arm64'),
    throws_ok($$SELECT * FROM timing_source_histogram('cntvct_isb', 0.01)$$, '22023', NULL,
              'cntvct_isb: not a source off arm64'))
  END;

SELECT * FROM finish();
ROLLBACK;
