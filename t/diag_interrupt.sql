-- The measurement loops stop promptly on statement_timeout (the same
-- QueryCancelPending path as pg_cancel_backend): each function is started
-- for far longer than the timeout, and the time from the timeout to the
-- caught cancel is measured.  Without interrupt checks in the loops the
-- call would run its whole 20 s.  The bound is the issue's 100 ms, taken
-- as the best of three attempts so that one unlucky scheduling delay on a
-- busy machine does not fail the test; every attempt must have been
-- cancelled, and not before the timeout.
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;
SELECT plan(11);

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

CREATE TEMP TABLE cases (fn text, q text);
INSERT INTO cases VALUES
  ('histogram(system)', $$SELECT * FROM timing_source_histogram('system', 20)$$),
  ('durations(system)', $$SELECT * FROM timing_source_durations('system', 20)$$),
  ('test', $$SELECT * FROM timing_source_test(20)$$),
  ('report', $$SELECT * FROM timing_source_report(20)$$);
INSERT INTO cases
  SELECT * FROM (VALUES
    ('histogram(rdtsc)', $$SELECT * FROM timing_source_histogram('rdtsc', 20)$$),
    ('durations(rdtscp)', $$SELECT * FROM timing_source_durations('rdtscp', 20)$$),
    ('calibrate', $$SELECT * FROM timing_source_calibrate(1000)$$)) v
   WHERE (SELECT available FROM timing_source_tsc());

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

SELECT diag(fn || ': stopped ' || string_agg(round(ms::numeric, 2)::text, ' / ' ORDER BY attempt)
            || ' ms after the timeout')
  FROM lat GROUP BY fn ORDER BY fn;

SELECT is((SELECT count(*) FROM lat WHERE ms IS NULL), 0::bigint,
          'every long call was cancelled by statement_timeout');
SELECT is((SELECT count(*) FROM lat WHERE ms < 0), 0::bigint,
          'no call stopped before the timeout');

-- one assertion per function (the TSC ones skipped where the TSC is unusable)
SELECT ok((SELECT min(ms) < 100 FROM lat WHERE fn = 'histogram(system)'), 'histogram(system) stops within 100 ms');
SELECT ok((SELECT min(ms) < 100 FROM lat WHERE fn = 'durations(system)'), 'durations(system) stops within 100 ms');
SELECT ok((SELECT min(ms) < 100 FROM lat WHERE fn = 'test'), 'test stops within 100 ms');
SELECT ok((SELECT min(ms) < 100 FROM lat WHERE fn = 'report'), 'report stops within 100 ms');
SELECT CASE WHEN (SELECT available FROM timing_source_tsc())
  THEN collect_tap(
    ok((SELECT min(ms) < 100 FROM lat WHERE fn = 'histogram(rdtsc)'), 'histogram(rdtsc) stops within 100 ms'),
    ok((SELECT min(ms) < 100 FROM lat WHERE fn = 'durations(rdtscp)'), 'durations(rdtscp) stops within 100 ms'),
    ok((SELECT min(ms) < 100 FROM lat WHERE fn = 'calibrate'), 'calibrate stops within 100 ms'))
  ELSE skip('the TSC is not usable here: no TSC loops to interrupt', 3)
  END;

-- and the session is usable afterwards
SELECT ok((SELECT count(*) > 0 FROM timing_source_histogram('system', 0.01)),
          'the functions work again after the cancels');
SELECT is((SELECT count(*) FROM lat), (SELECT count(*) * 3 FROM cases), 'three attempts per function');

SELECT * FROM finish();
ROLLBACK;
