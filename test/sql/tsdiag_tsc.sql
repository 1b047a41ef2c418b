--
-- Diagnostics with the TSC sources.  Two expected outputs: tsdiag_tsc.out
-- where the TSC is usable, tsdiag_tsc_1.out where it is not (the error
-- detail names the host's reason, so it is not shown here).
--
SET client_min_messages = warning;
-- init creates the extension; this lets the file also run on its own
CREATE EXTENSION IF NOT EXISTS timing_source;
RESET client_min_messages;

SELECT available FROM timing_source_tsc();

\set VERBOSITY terse
SELECT count(*) > 0 AS ok FROM timing_source_histogram('rdtsc', 0.01);
SELECT count(*) > 0 AS ok FROM timing_source_histogram('RDTSCP', 0.01);
SELECT count(*) > 0 AS ok FROM timing_source_durations('rdtsc', 0.01);
SELECT count(*) > 0 AS ok FROM timing_source_durations('rdtscp', 0.01, 50);
\set VERBOSITY default

-- only the sources that can be measured
SELECT source FROM timing_source_test(0.01) ORDER BY source;
SELECT mode FROM timing_source_compare('SELECT 1', 1);
SELECT count(*) FILTER (WHERE line LIKE 'Average loop time including overhead: % ns') AS sections,
       count(*) FILTER (WHERE line LIKE 'TSC frequency in use: % kHz') AS tsc_in_use,
       count(*) FILTER (WHERE line LIKE 'TSC clock source is not usable: %') AS tsc_unusable
  FROM timing_source_report(0.01) AS line;

-- the error for a TSC source where the TSC is unusable carries the host's
-- reason as its detail (the same as timing_source_tsc() gives) and a hint
DO $$
DECLARE
    d text;
    h text;
    reason text;
BEGIN
    SELECT reason_unusable INTO reason FROM timing_source_tsc();
    BEGIN
        PERFORM count(*) FROM timing_source_histogram('rdtsc', 0.01);
        RAISE NOTICE 'rdtsc accepted; reason_unusable is null: %', reason IS NULL;
    EXCEPTION WHEN feature_not_supported THEN
        GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
        RAISE NOTICE 'rdtsc refused; detail is the reason: %, hint: %', d = reason, h;
    END;
END
$$;

-- PostgreSQL 19 and later: core times the plan nodes with its own TSC
-- frequency; the report names it, and it agrees with the frequency
-- detected here within the 10% cross-check (tsdiag_tsc_2.out)
SELECT current_setting('server_version_num')::int >= 190000 AS core_owns_setting \gset
\if :core_owns_setting
SELECT count(*) AS core_frequency_lines,
       bool_and(abs(m.khz::float8 / t.frequency_khz - 1) <= 0.10) AS core_frequency_agrees
  FROM timing_source_report(0.01) AS line,
       LATERAL (SELECT (regexp_match(line, '^PostgreSQL''s own TSC frequency \(EXPLAIN uses it\): ([0-9]+) kHz, from .+$'))[1]::bigint AS khz) m,
       timing_source_tsc() t
 WHERE m.khz IS NOT NULL;
\endif
