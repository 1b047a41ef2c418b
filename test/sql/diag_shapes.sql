--
-- Shapes and invariants of the diagnostics.  Every row is one check and
-- must be t; the output is the same on every host and major, and each
-- check verifies what is true in the host's case: the TSC sources where
-- the TSC is usable, their refusal with the exact reason where it is not
-- (test/sql/init.sql checks that the case is the one the run expects).
--
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
-- the bar: 40 '#' for the tallest bucket, proportionally fewer (rounded
-- down) for the others, '.' where a non-empty bucket is too small for one
CREATE TEMP VIEW bar_expected AS
  SELECT source, ord, bar,
         CASE WHEN count = 0 THEN ''
              WHEN floor(40.0 * count / max(count) OVER (PARTITION BY source)) = 0 THEN '.'
              ELSE repeat('#', floor(40.0 * count / max(count) OVER (PARTITION BY source))::int) END AS want
    FROM h;

-- pct and running_pct are rounded to 4 decimals independently: each is
-- within half a unit (0.00005) of the exact figure
SELECT check_name, ok FROM (VALUES
  (1, 'histogram: rows for every available source',
   (SELECT count(DISTINCT source) FROM h) = (SELECT count(*) FROM srcs)),
  (2, 'histogram: bucket bounds are exactly 0, 1, 3, 7, 15, ... in order',
   (SELECT count(*) FROM h WHERE le_ns <> (2::numeric ^ (ord - 1))::bigint - 1) = 0),
  (3, 'histogram: the first row is 0 ns',
   (SELECT count(*) FROM h WHERE ord = 1 AND le_ns = 0) = (SELECT count(*) FROM srcs)),
  (4, 'histogram: percentages are numeric with 4 decimals, as pg_test_timing prints them',
   (SELECT count(*) FROM h WHERE pg_typeof(pct) <> 'numeric'::regtype
                              OR pg_typeof(running_pct) <> 'numeric'::regtype
                              OR scale(pct) <> 4 OR scale(running_pct) <> 4) = 0),
  (5, 'histogram: percentages sum to 100 within rounding',
   (SELECT count(*) FROM (SELECT source FROM h GROUP BY source
                          HAVING abs(sum(pct) - 100) > count(*) * 0.00005) x) = 0),
  (6, 'histogram: running_pct never decreases',
   (SELECT count(*) FROM (SELECT running_pct < lag(running_pct) OVER w AS bad
                            FROM h WINDOW w AS (PARTITION BY source ORDER BY ord)) x
     WHERE bad) = 0),
  (7, 'histogram: running_pct is the running sum of pct (within rounding)',
   (SELECT count(*) FROM (SELECT abs(running_pct - sum(pct) OVER w) > (ord + 1) * 0.00005 AS bad
                            FROM h WINDOW w AS (PARTITION BY source ORDER BY ord)) x
     WHERE bad) = 0),
  (8, 'histogram: running_pct is the running count over all loops, rounded',
   (SELECT count(*) FROM (SELECT abs(running_pct - sum(count) OVER w * 100.0 / sum(count) OVER (PARTITION BY source)) > 0.00005 AS bad
                            FROM h WINDOW w AS (PARTITION BY source ORDER BY ord)) x
     WHERE bad) = 0),
  (9, 'histogram: last row ends at exactly 100% and is the highest non-empty bucket',
   (SELECT count(*) FROM h h1
     WHERE ord = (SELECT max(ord) FROM h h2 WHERE h2.source = h1.source)
       AND running_pct = 100 AND count > 0) = (SELECT count(*) FROM srcs)),
  (10, 'histogram: pct is count over the sum of counts, rounded (every loop counted once)',
   (SELECT count(*) FROM (SELECT abs(pct - count * 100.0 / sum(count) OVER (PARTITION BY source)) > 0.00005 AS bad
                            FROM h) x WHERE bad) = 0),
  (11, 'histogram: the bar is the count relative to the tallest bucket, 40 characters wide',
   (SELECT count(*) FROM bar_expected WHERE bar IS DISTINCT FROM want) = 0),
  (12, 'histogram: exactly the tallest bucket has the full bar (ties aside)',
   (SELECT count(*) FROM h WHERE bar = repeat('#', 40)) = (SELECT count(DISTINCT source) FROM h)),
  (13, 'histogram: counts are non-negative and there are many loops',
   (SELECT bool_and(count >= 0) AND min(total) > 1000
      FROM h, LATERAL (SELECT sum(count) AS total FROM h h2 WHERE h2.source = h.source) t)),
  (14, 'histogram: values within their ranges',
   (SELECT count(*) FROM h WHERE le_ns < 0 OR pct < 0 OR pct > 100
                              OR running_pct < 0 OR running_pct > 100) = 0)
) AS v(n, check_name, ok) ORDER BY n;

-- exact durations, default cutoff, cutoff 100 and cutoff 50
CREATE TEMP TABLE d AS
  SELECT s.source, c.cutoff, x.*
    FROM srcs s, (VALUES (99.99::float8), (100), (50)) c(cutoff),
         LATERAL timing_source_durations(s.source, 0.2, c.cutoff)
         WITH ORDINALITY AS x(ns, pct, running_pct, count, bar, ord);
CREATE TEMP VIEW d_last AS
  SELECT * FROM d d1 WHERE ord = (SELECT max(ord) FROM d d2
                                   WHERE d2.source = d1.source AND d2.cutoff = d1.cutoff);
-- with cutoff 100 every difference below 10,000 ns is listed: the running
-- percentage then grows by each row's pct, within three roundings
-- (0.00015).  The run is short, so that a single skipped reading (100 /
-- loops percent) would exceed that; check 8 makes sure it does.
CREATE TEMP TABLE d100 AS
  SELECT s.source, x.*
    FROM srcs s, LATERAL timing_source_durations(s.source, 0.002, 100)
         WITH ORDINALITY AS x(ns, pct, running_pct, count, bar, ord);

-- 5: a running_pct rounded up to the cutoff may still be below it: only
-- one at least half a unit above it must have stopped the rows.
-- 6: and they do not stop before it: the rows before the largest reach the
-- cutoff, or the largest is the row that completes it (within rounding).
-- Checked at cutoff 50, which differences below 10,000 ns (the exact
-- table) always reach unless half the reads took 10 us; at 99.99 a busy
-- machine can have more than 0.01% of reads beyond the exact table.
SELECT check_name, ok FROM (VALUES
  (1, 'durations: strictly ascending',
   (SELECT count(*) FROM (SELECT ns <= lag(ns) OVER w AS bad FROM d
                           WINDOW w AS (PARTITION BY source, cutoff ORDER BY ord)) x
     WHERE bad) = 0),
  (2, 'durations: the largest difference is last',
   (SELECT count(*) FROM d_last l
     WHERE l.ns = (SELECT max(ns) FROM d WHERE d.source = l.source AND d.cutoff = l.cutoff))
   = (SELECT count(*) * 3 FROM srcs)),
  (3, 'durations: the last row has running_pct exactly 100',
   (SELECT count(*) FROM d_last WHERE running_pct = 100 AND count > 0) = (SELECT count(*) * 3 FROM srcs)),
  (4, 'durations: running_pct never decreases',
   (SELECT count(*) FROM (SELECT running_pct < lag(running_pct) OVER w AS bad FROM d
                           WINDOW w AS (PARTITION BY source, cutoff ORDER BY ord)) x
     WHERE bad) = 0),
  (5, 'durations: rows stop once the running percentage reaches the cutoff, then the largest',
   (SELECT count(*) FROM d
     WHERE running_pct >= cutoff + 0.00005
       AND ord < (SELECT max(ord) FROM d_last l WHERE l.source = d.source AND l.cutoff = d.cutoff) - 1) = 0),
  (6, 'durations: rows continue until the running percentage reaches the cutoff',
   (SELECT count(*) FROM d_last l
     WHERE l.cutoff = 50 AND coalesce((SELECT running_pct FROM d p
                                        WHERE p.source = l.source AND p.cutoff = l.cutoff AND p.ord = l.ord - 1), 0)
           + l.pct < l.cutoff - 0.0001) = 0),
  (7, 'durations: with cutoff 100 no difference below 10,000 ns is skipped',
   (SELECT count(*) FROM (SELECT ns, abs(running_pct - coalesce(lag(running_pct) OVER w, 0) - pct) > 0.00015 AS bad
                            FROM d100 WINDOW w AS (PARTITION BY source ORDER BY ord)) x
     WHERE bad AND ns < 10000) = 0),
  (8, 'durations: in that short run one reading is more than 0.0003%, so a skipped one would show',
   (SELECT bool_and(one_reading_pct > 0.0003) FROM
      (SELECT DISTINCT ON (source) source, pct / count AS one_reading_pct
         FROM d100 ORDER BY source, count DESC) x)),
  (9, 'durations: every listed difference was observed',
   (SELECT count(*) FROM d WHERE ns < 0 OR count <= 0 OR pct < 0 OR pct > 100) = 0),
  (10, 'durations: percentages are numeric with 4 decimals',
   (SELECT count(*) FROM d WHERE pg_typeof(pct) <> 'numeric'::regtype OR scale(pct) <> 4
                              OR scale(running_pct) <> 4) = 0),
  (11, 'durations: the bar is the count relative to the most frequent difference (cutoff 100 lists them all)',
   (SELECT count(*) FROM (SELECT bar,
                                 CASE WHEN floor(40.0 * count / max(count) OVER (PARTITION BY source)) = 0 THEN '.'
                                      ELSE repeat('#', floor(40.0 * count / max(count) OVER (PARTITION BY source))::int) END AS want
                            FROM d WHERE cutoff = 100) x
     WHERE bar IS DISTINCT FROM want) = 0)
) AS v(n, check_name, ok) ORDER BY n;

-- timing_source_test(): one row per available source
CREATE TEMP TABLE tt AS SELECT * FROM timing_source_test(0.2);
SELECT check_name, ok FROM (VALUES
  (1, 'test: one row per available source',
   (SELECT array_agg(source ORDER BY source) FROM tt) = (SELECT array_agg(source ORDER BY source) FROM srcs)),
  (2, 'test: loops and average loop time are positive',
   (SELECT count(*) FROM tt WHERE loops > 0 AND avg_loop_ns > 0) = (SELECT count(*) FROM srcs)),
  (3, 'test: 0 <= median <= p99 <= max',
   (SELECT count(*) FROM tt WHERE 0 <= median_ns AND median_ns <= p99_ns AND p99_ns <= max_ns)
   = (SELECT count(*) FROM srcs)),
  (4, 'test: loops x average loop time covers the requested duration (within its rounding)',
   (SELECT bool_and(loops * (avg_loop_ns + 0.005) >= 0.2e9) FROM tt)),
  (5, 'test: CLOCK_MONOTONIC never went backwards',
   (SELECT backwards FROM tt WHERE source = 'system') = 0),
  (6, 'test: backwards counts are within the loop count',
   (SELECT bool_and(backwards >= 0 AND backwards <= loops) FROM tt)),
  (7, 'test: average loop time is plausible (under 100 us)',
   (SELECT bool_and(avg_loop_ns < 100000) FROM tt)),
  (8, 'test: average loop time is numeric with 2 decimals, as pg_test_timing prints it',
   (SELECT count(*) FROM tt WHERE pg_typeof(avg_loop_ns) = 'numeric'::regtype AND scale(avg_loop_ns) = 2)
   = (SELECT count(*) FROM srcs))
) AS v(n, check_name, ok) ORDER BY n;

-- Calibration needs RDTSCP only (arm64: a counter readable from user
-- space).  Where it is possible each check looks at the runs; where not,
-- the same call must be refused with the reason timing_source_tsc() gives.
SELECT coalesce(rdtscp, frequency_source ~ '^arm64'
                AND coalesce(reason_unusable, '') !~ 'CNTVCT_EL0.*faults') AS calibrable,
       '0A000: TSC calibration is not available on this system / ' || coalesce(reason_unusable, '') AS refusal
  FROM tsc \gset
-- (a constant false qual: the function is not called where it is refused)
CREATE TEMP TABLE cal3 AS SELECT * FROM timing_source_calibrate(3) WHERE :'calibrable'::boolean;
CREATE TEMP TABLE cal3b AS SELECT * FROM timing_source_calibrate(3) WHERE :'calibrable'::boolean;
CREATE TEMP TABLE cal4 AS SELECT * FROM timing_source_calibrate(4) WHERE :'calibrable'::boolean;
CREATE TEMP TABLE cal2 AS SELECT * FROM timing_source_calibrate(2) WHERE :'calibrable'::boolean;
-- 4: a usable TSC passed a converged calibration at start-up (so did one
-- disabled by the environment, which still reports its frequency), so at
-- least one of three runs converges; every converged one must agree
SELECT check_name, ok FROM (VALUES
  (1, 'calibrate: one row per run',
   CASE WHEN :'calibrable'::boolean THEN (SELECT count(*) FROM cal3) = 3
        ELSE ts_error_of('SELECT * FROM timing_source_calibrate(3)') = :'refusal' END),
  (2, 'calibrate: runs numbered 1..n',
   CASE WHEN :'calibrable'::boolean THEN (SELECT array_agg(run ORDER BY run) FROM cal4) = '{1,2,3,4}'
        ELSE ts_error_of('SELECT * FROM timing_source_calibrate(4)') = :'refusal' END),
  (3, 'calibrate: iterations and time positive, converged frequencies plausible',
   CASE WHEN :'calibrable'::boolean
        THEN (SELECT count(*) FROM cal3
               WHERE iterations > 0 AND elapsed_us > 0
                 AND (NOT converged OR
                      CASE WHEN (SELECT frequency_source ~ '^arm64' FROM tsc)
                           THEN frequency_khz BETWEEN 1000 AND 5000000
                           ELSE frequency_khz BETWEEN 100000 AND 20000000 END)) = 3
        ELSE ts_error_of('SELECT * FROM timing_source_calibrate(1000)') = :'refusal' END),
  (4, 'calibrate: with a frequency in use, a run converges and every converged run agrees with it within 10%',
   CASE WHEN NOT :'calibrable'::boolean
        THEN ts_error_of('SELECT * FROM timing_source_calibrate(1)') = :'refusal'
        WHEN (SELECT frequency_khz IS NOT NULL FROM tsc)
        THEN (SELECT count(*) FILTER (WHERE converged) >= 1
                     AND coalesce(bool_and(abs(ppm_vs_in_use) < 100000) FILTER (WHERE converged), false)
                FROM cal3b)
        ELSE (SELECT bool_and(ppm_vs_in_use IS NULL) FROM cal3b) END),
  (5, 'calibrate: ppm_vs_in_use is NULL exactly when a frequency is missing',
   CASE WHEN :'calibrable'::boolean
        THEN (SELECT bool_and((ppm_vs_in_use IS NULL) = (frequency_khz IS NULL OR (SELECT frequency_khz IS NULL FROM tsc)))
                FROM cal3)
        ELSE ts_error_of('SELECT * FROM timing_source_calibrate(2)') = :'refusal' END),
  (6, 'calibrate: elapsed_us and ppm_vs_in_use are numeric with 3 decimals',
   CASE WHEN :'calibrable'::boolean
        THEN (SELECT bool_and(pg_typeof(elapsed_us) = 'numeric'::regtype AND scale(elapsed_us) = 3
                              AND coalesce(scale(ppm_vs_in_use) = 3, true))
                FROM cal2)
        ELSE ts_error_of('SELECT * FROM timing_source_calibrate(5)') = :'refusal' END)
) AS v(n, check_name, ok) ORDER BY n;

-- the report
CREATE TEMP TABLE r AS SELECT * FROM timing_source_report(0.05) WITH ORDINALITY AS x(line, ord);
SET timing_clock_source = 'auto';
SELECT check_name, ok FROM (VALUES
  (1, 'report: one average loop time per available source',
   (SELECT count(*) FROM r WHERE line ~ '^Average loop time including overhead: [0-9.]+ ns$')
   = (SELECT count(*) FROM srcs)),
  (2, 'report: one histogram per available source',
   (SELECT count(*) FROM r WHERE line = 'Histogram of timing durations:') = (SELECT count(*) FROM srcs)),
  (3, 'report: one exact-duration block per available source',
   (SELECT count(*) FROM r WHERE line = 'Observed timing durations up to 99.9900%:') = (SELECT count(*) FROM srcs)),
  (4, 'report: system section',
   (SELECT count(*) FROM r WHERE line = 'System clock source: clock_gettime (CLOCK_MONOTONIC)') = 1),
  (5, 'report: ordered and plain counter sections (RDTSCP and RDTSC; on arm64 ISB + CNTVCT_EL0 and CNTVCT_EL0) exactly where the TSC is usable',
   (SELECT count(*) FROM r WHERE line IN ('Clock source: RDTSCP', 'Fast clock source: RDTSC',
                                          'Clock source: ISB + CNTVCT_EL0', 'Fast clock source: CNTVCT_EL0'))
   = CASE WHEN (SELECT available FROM tsc) THEN 2 ELSE 0 END),
  (6, 'report: frequency in use exactly where the TSC is usable',
   (SELECT count(*) FROM r WHERE line ~ '^TSC frequency in use: [0-9]+ kHz$')
   = CASE WHEN (SELECT available FROM tsc) THEN 1 ELSE 0 END),
  (7, 'report: the frequency in use is the one timing_source_tsc() reports',
   (SELECT line FROM r WHERE line LIKE 'TSC frequency in use:%')
   IS NOT DISTINCT FROM CASE WHEN (SELECT available FROM tsc)
                             THEN 'TSC frequency in use: ' || (SELECT frequency_khz FROM tsc) || ' kHz' END),
  -- a build with a counter (x86-64, arm64) reports invariant
  (8, 'report: the frequency source is the one timing_source_tsc() reports',
   (SELECT line FROM r WHERE line LIKE 'TSC frequency source:%')
   IS NOT DISTINCT FROM CASE WHEN (SELECT invariant IS NOT NULL FROM tsc)
                             THEN 'TSC frequency source: ' || (SELECT frequency_source FROM tsc) END),
  (9, 'report: the reason, exactly where the TSC is not usable',
   (SELECT line FROM r WHERE line LIKE 'TSC clock source is not usable:%')
   IS NOT DISTINCT FROM CASE WHEN NOT (SELECT available FROM tsc)
                             THEN 'TSC clock source is not usable: ' || (SELECT reason_unusable FROM tsc) END),
  (10, 'report: "will be used by default" exactly when auto picks the TSC',
   (SELECT count(*) FROM r WHERE line LIKE 'TSC clock source will be used by default%')
   = CASE WHEN (SELECT in_use FROM timing_source_tsc()) THEN 1 ELSE 0 END),
  (11, 'report: no calibration warning on this machine',
   (SELECT count(*) FROM r WHERE line LIKE 'WARNING:%') = 0),
  (12, 'report: histogram header as in pg_test_timing',
   (SELECT count(*) FROM r r1, r r2
     WHERE r1.line = 'Histogram of timing durations:' AND r2.ord = r1.ord + 1
       AND r2.line = '   <= ns   % of total  running %      count') = (SELECT count(*) FROM srcs)),
  (13, 'report: histogram rows formatted as in pg_test_timing',
   (SELECT count(*) FROM r WHERE line ~ '^ *[0-9]+ +[0-9]+\.[0-9]{4} +[0-9]+\.[0-9]{4} +[0-9]+$') > 10)
) AS v(n, check_name, ok) ORDER BY n;
RESET timing_clock_source;

-- Arguments are validated before anything is measured (the messages are
-- in tsdiag_errors).  Where the TSC is unusable, asking for it says why,
-- as the setting does.  On arm64 cntvct and cntvct_isb are the
-- instructions' own names for the two counter reads, the same sources
-- (refused with the same error, which names the source by its usual name);
-- elsewhere they are not sources at all.
SELECT check_name, ok FROM (VALUES
  (1, 'histogram: unknown source refused',
   ts_error_of($$SELECT * FROM timing_source_histogram('hpet')$$) LIKE '22023: %'),
  (2, 'durations: cutoff 0 refused',
   ts_error_of($$SELECT * FROM timing_source_durations('system', 1, 0)$$) LIKE '22023: %'),
  (3, 'test: duration over an hour refused',
   ts_error_of($$SELECT * FROM timing_source_test(3600.5)$$) LIKE '22023: %'),
  (4, 'rdtsc: accepted exactly where the TSC is usable, else refused with the reason timing_source_tsc() gives',
   ts_error_of($$SELECT * FROM timing_source_histogram('rdtsc', 0.01)$$)
   = (SELECT CASE WHEN available THEN 'no error'
                  ELSE '0A000: clock source "rdtsc" is not available on this system / ' || reason_unusable END
        FROM tsc)),
  (5, 'rdtscp: accepted exactly where the TSC is usable, else refused with the reason timing_source_tsc() gives',
   ts_error_of($$SELECT * FROM timing_source_histogram('rdtscp', 0.01)$$)
   = (SELECT CASE WHEN available THEN 'no error'
                  ELSE '0A000: clock source "rdtscp" is not available on this system / ' || reason_unusable END
        FROM tsc)),
  (6, 'cntvct: the same as rdtsc on arm64, not a source elsewhere',
   CASE WHEN (SELECT frequency_source ~ '^arm64' FROM tsc)
        THEN ts_error_of($$SELECT * FROM timing_source_histogram('cntvct', 0.01)$$)
             = ts_error_of($$SELECT * FROM timing_source_histogram('rdtsc', 0.01)$$)
        ELSE ts_error_of($$SELECT * FROM timing_source_histogram('cntvct', 0.01)$$)
             LIKE '22023: invalid clock source "cntvct" / %' END),
  (7, 'cntvct_isb: the same as rdtscp on arm64, not a source elsewhere',
   CASE WHEN (SELECT frequency_source ~ '^arm64' FROM tsc)
        THEN ts_error_of($$SELECT * FROM timing_source_histogram('cntvct_isb', 0.01)$$)
             = ts_error_of($$SELECT * FROM timing_source_histogram('rdtscp', 0.01)$$)
        ELSE ts_error_of($$SELECT * FROM timing_source_histogram('cntvct_isb', 0.01)$$)
             LIKE '22023: invalid clock source "cntvct_isb" / %' END)
) AS v(n, check_name, ok) ORDER BY n;
