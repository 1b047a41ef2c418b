--
-- timing_source_explain_nodes(): argument checks, the shape of its rows,
-- and that exact and sampled nodes are told apart (the coverage of the
-- sampled intervals is t/082_sampled_intervals.pl's)
--
SET max_parallel_workers_per_gather = 0;
CREATE TABLE en_t AS SELECT g AS id, g % 10 AS k FROM generate_series(1, 1000) g;
CREATE INDEX en_t_k ON en_t (k);
ANALYZE en_t;

-- bad arguments: clear errors, before anything runs
SELECT ts_error_of($$SELECT * FROM timing_source_explain_nodes(NULL)$$);
SELECT ts_error_of($$SELECT * FROM timing_source_explain_nodes('')$$);
SELECT ts_error_of($$SELECT * FROM timing_source_explain_nodes('SELECT 1; SELECT 2')$$);
SELECT ts_error_of($$SELECT * FROM timing_source_explain_nodes('VACUUM en_t')$$);
SELECT ts_error_of($$SELECT * FROM timing_source_explain_nodes('CREATE TABLE en_x AS SELECT 1')$$);
SELECT ts_error_of($$SELECT * FROM timing_source_explain_nodes('SELECT 1', 0)$$);
SELECT ts_error_of($$SELECT * FROM timing_source_explain_nodes('SELECT 1', -5)$$);
SELECT ts_error_of($$SELECT * FROM timing_source_explain_nodes('SELECT 1', 1000001)$$);
SELECT ts_error_of($$SELECT * FROM timing_source_explain_nodes('SELECT * FROM en_nosuch')$$);
-- a syntax error points into the query, not into the calling statement
SELECT * FROM timing_source_explain_nodes('SELECT FROM WHERE');
-- the query's own errors come through; the setting is left as it was
SET timing_source.sample_every = 3;
SELECT ts_error_of($$SELECT * FROM timing_source_explain_nodes('SELECT 1/0', 7)$$);
SHOW timing_source.sample_every;
RESET timing_source.sample_every;

-- the tree: pre-order numbering, parents, depths, EXPLAIN's node names,
-- schema-qualified relations, rows and loops summed over all loops
SELECT node_id, parent_id, depth, node_type, relation, loops, rows
  FROM timing_source_explain_nodes(
    $$SELECT a.k, count(*) FROM en_t a JOIN en_t b ON a.id = b.id
       WHERE a.k < 5 GROUP BY a.k ORDER BY a.k$$)
 ORDER BY node_id;

-- a correlated subplan: its nodes are children of the node running it,
-- with one loop per outer row
SELECT node_id, parent_id, depth, node_type, relation, loops, rows
  FROM timing_source_explain_nodes(
    $$SELECT id, (SELECT max(b.id) FROM en_t b WHERE b.k = a.k)
        FROM en_t a WHERE a.id <= 20$$)
 ORDER BY node_id;

-- times: present for nodes that ran, startup within total, every node
-- within the run's execution time (which every row carries), NULL for
-- nodes that never ran
-- (the second member of the Append, after the Limit has its row)
SELECT count(*) FILTER (WHERE loops = 0) > 0 AS some_never_ran,
       bool_and((total_ms IS NULL) = (loops = 0) AND
                (startup_ms IS NULL) = (loops = 0)) AS times_exactly_where_ran,
       bool_and(coalesce(startup_ms <= total_ms, true)) AS startup_within_total,
       bool_and(coalesce(total_ms <= execution_ms, true)) AS within_execution,
       bool_and(execution_ms > 0) AS has_execution_time,
       min(execution_ms) = max(execution_ms) AS one_execution_time
  FROM timing_source_explain_nodes(
    $$SELECT 1 FROM (SELECT id FROM en_t WHERE id = 5
                     UNION ALL SELECT id FROM en_t WHERE k = 3) u LIMIT 1$$);

-- a modifying statement runs, reports, and is rolled back
SELECT node_id, node_type, relation, rows
  FROM timing_source_explain_nodes($$UPDATE en_t SET k = k + 100 WHERE id <= 10$$)
 ORDER BY node_id;
SELECT count(*) AS untouched FROM en_t WHERE k >= 100;

-- exact timing (sample_every 1, also over a session setting): no
-- sampling columns
SET timing_source.sample_every = 50;
SELECT bool_and(sample_every IS NULL AND sampled_calls IS NULL AND
                margin_ms IS NULL AND estimate_reliable IS NULL) AS exact
  FROM timing_source_explain_nodes('SELECT count(*) FROM en_t', 1);
RESET timing_source.sample_every;
SELECT bool_and(sample_every IS NULL) AS exact_by_default
  FROM timing_source_explain_nodes('SELECT count(*) FROM en_t');

-- sampled: the wrappers sample with the TSC or the system clock through
-- 18 (not in a build without a counter, where core times every call),
-- with either of core's clocks on 19; Hash runs
-- through MultiExecProcNode and stays exact.  A sampled node that ran
-- says whether its estimate has an interval, and has a margin exactly
-- when it does; a node whose every call was the first of its loop is
-- exact, margin 0.
SELECT ts_set_tsc() AS tsc_set_where_available;
CREATE TEMP TABLE en_samples AS
SELECT n.*, ts_wrappers_sample() AS can_sample
  FROM timing_source_explain_nodes(
    $$SELECT a.k, count(*) FROM en_t a JOIN en_t b ON a.id = b.id
       GROUP BY a.k$$, 4) n;
SELECT node_id, node_type,
       (sample_every IS NOT NULL) = (can_sample AND node_type <> 'Hash') AS sampled_where_expected,
       coalesce(sample_every = 4, true) AS n_as_asked,
       (estimate_reliable IS NOT NULL) = (sample_every IS NOT NULL) AS reliability_told,
       (margin_ms IS NOT NULL) = coalesce(estimate_reliable, false) AS margin_when_reliable,
       coalesce(margin_ms >= 0, true) AS margin_not_negative
  FROM en_samples ORDER BY node_id;
-- the scan's 1,000 calls at 1 in 4 are well above the threshold of 30
-- sampled calls; the aggregate's ten calls after its first (one a group)
-- are all in the warm-up, timed exactly: no call sampled, no call left
-- out, so the estimate is exact and its margin nil
SELECT node_type,
       CASE WHEN can_sample THEN sampled_calls BETWEEN 100 AND 500 ELSE true END AS sampled_about_1_in_4,
       CASE WHEN can_sample THEN estimate_reliable ELSE true END AS reliable
  FROM en_samples WHERE node_type = 'Seq Scan' ORDER BY node_id;
SELECT CASE WHEN can_sample
            THEN sampled_calls = 0 AND estimate_reliable AND margin_ms < 0.001
            ELSE true END AS warm_up_exact
  FROM en_samples WHERE node_id = 1;

-- a node nearly all of whose time is in calls timed exactly (a top-N
-- sort's first call sorts 20,000 rows, its 300 output calls are cheap):
-- the sampling's own variance would state a margin far below what timing
-- a call perturbs it, so an estimate that left calls out states at least
-- half a percent of its total (to the printed 0.001 ms).  300 calls give
-- about 58 sampled ones (fewer than 30 with odds of about 1e-6).
CREATE TEMP TABLE en_sort AS SELECT g, md5(g::text) AS m FROM generate_series(1, 20000) g;
SELECT CASE WHEN ts_wrappers_sample()
            THEN n.estimate_reliable AND n.margin_ms >= 0.005 * n.total_ms - 0.001
            ELSE n.sample_every IS NULL END AS margin_floor
  FROM timing_source_explain_nodes(
    $$SELECT * FROM en_sort ORDER BY m LIMIT 300$$, 64) n
 WHERE n.node_type = 'Sort';

-- a scan of 31 rows makes 31 calls after its first (the last returns no
-- row): 30 timed exactly, the 31st at weight 2 with probability 1/2.  Timed or not, its estimate is not exact
-- (a call weighted or one left out) and rests on at most one sampled call:
-- never reliable.  Over 20 runs, a rule that took "every call timed" for
-- exact would call about half of them reliable.  (Each run's query text
-- differs, so that each is run, not a rescan of the first.)
CREATE TEMP TABLE en_31 AS SELECT g FROM generate_series(1, 31) g;
SELECT CASE WHEN ts_wrappers_sample()
            THEN bool_and(NOT n.estimate_reliable AND n.margin_ms IS NULL AND n.sampled_calls <= 1)
            ELSE bool_and(n.sample_every IS NULL) END AS weighted_not_exact,
       count(*) AS runs
  FROM generate_series(1, 20) r,
       LATERAL timing_source_explain_nodes('SELECT * FROM en_31 WHERE g > -' || r, 64) n;
-- timing_source.sample_budget: 0 (off) or at least 1,000 sampled calls
-- before a node is thinned
SELECT ts_error_of($$SET timing_source.sample_budget = 999$$);
SELECT ts_error_of($$SET timing_source.sample_budget = -1$$);
SHOW timing_source.sample_budget;
-- with a budget of 1,000 at 1 in 4, the scan's calls past 4,000 are timed
-- with probability 1,000 / k: about 2,600 sampled calls of its 20,000
-- (some 1,000 up to call 4,000, 1,000 ln(20,000 / 4,000) = 1,609 after
-- it), where 1 in 4 alone samples some 5,000; each count is a sum of
-- independent draws, whose spread is about 50
CREATE TEMP TABLE en_thin AS SELECT g FROM generate_series(1, 20000) g;
SET timing_source.sample_budget = 1000;
SELECT CASE WHEN ts_wrappers_sample()
            THEN n.sampled_calls BETWEEN 2000 AND 3500 AND n.estimate_reliable
            ELSE n.sample_every IS NULL END AS budget_thins
  FROM timing_source_explain_nodes('SELECT count(*) FROM en_thin', 4) n
 WHERE n.node_type = 'Seq Scan';
RESET timing_source.sample_budget;
SELECT CASE WHEN ts_wrappers_sample()
            THEN n.sampled_calls BETWEEN 4500 AND 5500
            ELSE n.sample_every IS NULL END AS no_budget_no_thinning
  FROM timing_source_explain_nodes('SELECT count(*) FROM en_thin', 4) n
 WHERE n.node_type = 'Seq Scan';

-- privileges: monitoring roles only
SELECT has_function_privilege('public', 'timing_source_explain_nodes(text, int)', 'EXECUTE') AS public_may,
       has_function_privilege('pg_monitor', 'timing_source_explain_nodes(text, int)', 'EXECUTE') AS pg_monitor_may;

DROP TABLE en_t;
RESET max_parallel_workers_per_gather;
RESET timing_clock_source;
