--
-- The measurement loops stop promptly on statement_timeout (the same
-- QueryCancelPending path as pg_cancel_backend): each function is started
-- for far longer than the timeout, and the time from the timeout to the
-- caught cancel is measured.  Without interrupt checks in the loops the
-- call would run its whole 20 s.  The bound is 100 ms, taken as the best
-- of three attempts so that one unlucky scheduling delay on a busy machine
-- does not fail the test; every attempt must have been cancelled, and not
-- before the timeout.  Every row is one check and must be t.  The TSC
-- loops are timed where the TSC is usable (calibration: where it is
-- possible); elsewhere the same calls must be refused with the reason.
--

-- ms from the statement's timeout to the caught cancel; NULL if the call
-- completed without being cancelled
CREATE FUNCTION pg_temp.stop_latency_ms(q text, timeout_ms int) RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
  t1 timestamptz;
BEGIN
  BEGIN
    EXECUTE q;
    RETURN NULL;
  EXCEPTION WHEN query_canceled THEN
    t1 := clock_timestamp();
  END;
  -- statement_timestamp() is taken before the timer is armed, so this
  -- errs on the long side
  RETURN extract(epoch FROM t1 - statement_timestamp()) * 1000 - timeout_ms;
END
$$;

CREATE TEMP TABLE tsc AS
  SELECT *, coalesce(rdtscp, frequency_source ~ '^arm64'
                     AND coalesce(reason_unusable, '') !~ 'CNTVCT_EL0.*faults') AS calibrable
    FROM timing_source_tsc();

CREATE TEMP TABLE cases (fn text, q text);
INSERT INTO cases VALUES
  ('histogram(system)', $$SELECT * FROM timing_source_histogram('system', 20)$$),
  ('durations(system)', $$SELECT * FROM timing_source_durations('system', 20)$$),
  ('test', $$SELECT * FROM timing_source_test(20)$$),
  ('report', $$SELECT * FROM timing_source_report(20)$$);
INSERT INTO cases
  SELECT * FROM (VALUES
    ('histogram(rdtsc)', $$SELECT * FROM timing_source_histogram('rdtsc', 20)$$),
    ('durations(rdtscp)', $$SELECT * FROM timing_source_durations('rdtscp', 20)$$)) v
   WHERE (SELECT available FROM tsc);
INSERT INTO cases
  SELECT 'calibrate', $$SELECT * FROM timing_source_calibrate(1000)$$
   WHERE (SELECT calibrable FROM tsc);

CREATE TEMP TABLE lat (fn text, attempt int, ms float8);

SET statement_timeout = '300ms';
INSERT INTO lat SELECT fn, 1, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'histogram(system)';
INSERT INTO lat SELECT fn, 2, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'histogram(system)';
INSERT INTO lat SELECT fn, 3, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'histogram(system)';
INSERT INTO lat SELECT fn, 1, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'durations(system)';
INSERT INTO lat SELECT fn, 2, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'durations(system)';
INSERT INTO lat SELECT fn, 3, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'durations(system)';
INSERT INTO lat SELECT fn, 1, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'test';
INSERT INTO lat SELECT fn, 2, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'test';
INSERT INTO lat SELECT fn, 3, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'test';
INSERT INTO lat SELECT fn, 1, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'report';
INSERT INTO lat SELECT fn, 2, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'report';
INSERT INTO lat SELECT fn, 3, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'report';
INSERT INTO lat SELECT fn, 1, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'histogram(rdtsc)';
INSERT INTO lat SELECT fn, 2, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'histogram(rdtsc)';
INSERT INTO lat SELECT fn, 3, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'histogram(rdtsc)';
INSERT INTO lat SELECT fn, 1, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'durations(rdtscp)';
INSERT INTO lat SELECT fn, 2, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'durations(rdtscp)';
INSERT INTO lat SELECT fn, 3, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'durations(rdtscp)';
INSERT INTO lat SELECT fn, 1, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'calibrate';
INSERT INTO lat SELECT fn, 2, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'calibrate';
INSERT INTO lat SELECT fn, 3, pg_temp.stop_latency_ms(q, 300) FROM cases WHERE fn = 'calibrate';
RESET statement_timeout;

-- the measured latencies go to the server log, for a failure's diagnosis
DO $$
DECLARE
  l text;
BEGIN
  FOR l IN SELECT fn || ': stopped ' || string_agg(round(ms::numeric, 2)::text, ' / ' ORDER BY attempt)
                  || ' ms after the timeout'
             FROM lat GROUP BY fn ORDER BY fn
  LOOP
    RAISE LOG 'diag_interrupt: %', l;
  END LOOP;
END $$;

SELECT check_name, ok FROM (VALUES
  (1, 'every long call was cancelled by statement_timeout',
   (SELECT count(*) FROM lat WHERE ms IS NULL) = 0),
  (2, 'no call stopped before the timeout',
   (SELECT count(*) FROM lat WHERE ms < 0) = 0),
  (3, 'histogram(system) stops within 100 ms',
   (SELECT min(ms) < 100 FROM lat WHERE fn = 'histogram(system)')),
  (4, 'durations(system) stops within 100 ms',
   (SELECT min(ms) < 100 FROM lat WHERE fn = 'durations(system)')),
  (5, 'test stops within 100 ms',
   (SELECT min(ms) < 100 FROM lat WHERE fn = 'test')),
  (6, 'report stops within 100 ms',
   (SELECT min(ms) < 100 FROM lat WHERE fn = 'report')),
  (7, 'histogram(rdtsc) stops within 100 ms (refused with the reason where the TSC is unusable)',
   CASE WHEN (SELECT available FROM tsc)
        THEN (SELECT min(ms) < 100 FROM lat WHERE fn = 'histogram(rdtsc)')
        ELSE ts_error_of($$SELECT * FROM timing_source_histogram('rdtsc', 20)$$)
             = (SELECT '0A000: clock source "rdtsc" is not available on this system / ' || reason_unusable FROM tsc) END),
  (8, 'durations(rdtscp) stops within 100 ms (refused with the reason where the TSC is unusable)',
   CASE WHEN (SELECT available FROM tsc)
        THEN (SELECT min(ms) < 100 FROM lat WHERE fn = 'durations(rdtscp)')
        ELSE ts_error_of($$SELECT * FROM timing_source_durations('rdtscp', 20)$$)
             = (SELECT '0A000: clock source "rdtscp" is not available on this system / ' || reason_unusable FROM tsc) END),
  (9, 'calibrate stops within 100 ms (refused with the reason where calibration is not possible)',
   CASE WHEN (SELECT calibrable FROM tsc)
        THEN (SELECT min(ms) < 100 FROM lat WHERE fn = 'calibrate')
        ELSE ts_error_of($$SELECT * FROM timing_source_calibrate(1000)$$)
             = (SELECT '0A000: TSC calibration is not available on this system / ' || reason_unusable FROM tsc) END),
  (10, 'the functions work again after the cancels',
   (SELECT count(*) > 0 FROM timing_source_histogram('system', 0.01))),
  (11, 'three attempts per function',
   (SELECT count(*) FROM lat) = (SELECT count(*) * 3 FROM cases))
) AS v(n, check_name, ok) ORDER BY n;
