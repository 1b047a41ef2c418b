--
-- Diagnostics: argument checking and every error path that does not
-- depend on the host's TSC (see tsdiag_tsc for those).
--
SET client_min_messages = warning;
-- init creates the extension; this lets the file also run on its own
CREATE EXTENSION IF NOT EXISTS timing_source;
RESET client_min_messages;

-- unknown clock source, any function taking one
SELECT * FROM timing_source_histogram('hpet', 0.01);
SELECT * FROM timing_source_durations('tsc', 0.01);
SELECT * FROM timing_source_histogram('', 0.01);

-- duration must be in (0, 3600]
SELECT * FROM timing_source_histogram('system', 0);
SELECT * FROM timing_source_histogram('system', -1);
SELECT * FROM timing_source_histogram('system', 3600.001);
SELECT * FROM timing_source_histogram('system', 'NaN');
SELECT * FROM timing_source_durations('system', 'Infinity');
SELECT * FROM timing_source_test(0);
SELECT * FROM timing_source_test(-0.5);
SELECT * FROM timing_source_report(0);
SELECT * FROM timing_source_report(7200);

-- cutoff must be in (0, 100]
SELECT * FROM timing_source_durations('system', 0.01, 0);
SELECT * FROM timing_source_durations('system', 0.01, 100.5);
SELECT * FROM timing_source_durations('system', 0.01, -3);
SELECT * FROM timing_source_durations('system', 0.01, 'NaN');

-- runs: [1, 1000] for calibrate, [1, 100] for compare
SELECT * FROM timing_source_calibrate(0);
SELECT * FROM timing_source_calibrate(1001);
SELECT * FROM timing_source_calibrate(-1);
SELECT * FROM timing_source_compare('SELECT 1', 0);
SELECT * FROM timing_source_compare('SELECT 1', 101);

-- the boundaries themselves are accepted
SELECT count(*) > 0 AS ok FROM timing_source_durations('system', 0.001, 100);
SELECT count(*) > 0 AS ok FROM timing_source_histogram('SYSTEM', 0.001);

-- STRICT: a NULL argument gives no rows
SELECT count(*) FROM timing_source_histogram(NULL);
SELECT count(*) FROM timing_source_histogram('system', NULL);
SELECT count(*) FROM timing_source_durations('system', 0.01, NULL);
SELECT count(*) FROM timing_source_test(NULL);
SELECT count(*) FROM timing_source_calibrate(NULL);
SELECT count(*) FROM timing_source_report(NULL);
SELECT count(*) FROM timing_source_compare(NULL);
SELECT count(*) FROM timing_source_compare('SELECT 1', NULL);

-- compare: exactly one plannable statement
SELECT * FROM timing_source_compare('');
SELECT * FROM timing_source_compare('  -- just a comment');
SELECT * FROM timing_source_compare('SELECT 1; SELECT 2');
SELECT * FROM timing_source_compare('VACUUM');
SELECT * FROM timing_source_compare('EXPLAIN ANALYZE SELECT 1');
SELECT * FROM timing_source_compare('CREATE TABLE diag_never (x int)');
SELECT * FROM timing_source_compare('SELECT 1 INTO diag_never');
SELECT * FROM timing_source_compare('BEGIN');
SELECT * FROM timing_source_compare('SET timing_clock_source = system');

-- an invalid query gets its own error
SELECT * FROM timing_source_compare('SELEC 1');
SELECT * FROM timing_source_compare('SELECT * FROM diag_no_such_table');
SELECT * FROM timing_source_compare('SELECT 1/0');

-- a single statement with a trailing semicolon or comment is fine
SELECT mode, runs FROM timing_source_compare('SELECT 1;', 1) WHERE mode <> 'tsc';
SELECT mode, runs FROM timing_source_compare('SELECT 1 -- trailing comment', 1) WHERE mode <> 'tsc';
