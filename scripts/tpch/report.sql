-- scripts/tpch/report.sql -- the figures of the TPC-H accuracy run, from
-- what runner.sql recorded in tpch_run.obs (run 0 is the warm-up, left
-- out).  Builds tpch_run.node_stats (one row per plan node whose
-- reference is at least 1 ms) and tpch_run.query_stats (one row per query
-- and an overall row, q = 0), then prints them and the targets.
--
-- References, which carry no exact timing's cost:
--   top node     the median Execution Time of EXPLAIN (ANALYZE, TIMING OFF)
--   inner nodes  the mean over the ref runs (sampled at 1 in :ref): an
--                unbiased estimate whose own noise is the standard error
--                of that mean (ref_se_pct), and whose residual clock cost
--                is 1/:ref of exact timing's
-- Errors are relative to the reference: exact and exactsub per node from
-- the median of their runs; sampled per run (what one EXPLAIN shows), its
-- median and worst over the node's runs; coverage counts the sampled runs
-- whose 95% interval (total_ms +/- margin_ms) contains the reference.
-- Shares: node total / top node total within each mode, against the
-- reference node / untimed Execution Time, in percentage points; and
-- against the profile (mode profile): a node's ticks over the top node's,
-- pooled over the profiled runs, whose standard error is binomial
-- (prof_se_pp).  The profile reads no clock at a node's boundary, so it
-- holds a busy parent's work where it runs, which the sampled reference
-- does not (docs/internals.md, "Fenced reads").
SET search_path = tpch_run;
SET client_min_messages = warning;
DROP TABLE IF EXISTS node_stats, query_stats;

CREATE TABLE node_stats AS
WITH o AS (
	-- each row with the run's top node total next to it, for shares
	SELECT *, max(total_ms) FILTER (WHERE node_id = 1) OVER (PARTITION BY q, mode, run) AS top_ms
	  FROM obs WHERE run > 0),
untimed AS (
	SELECT q, percentile_cont(0.5) WITHIN GROUP (ORDER BY exec_ms) AS ms
	  FROM o WHERE mode = 'untimed' GROUP BY q),
refn AS (
	-- the ref runs' node total as a fraction of their own Execution Time:
	-- a slower or faster phase of the machine scales both alike
	SELECT q, node_id, min(parent_id) AS parent_id, min(node_type) AS node_type,
		   min(relation) AS relation, max(loops) AS loops,
		   avg(total_ms / exec_ms) AS frac, stddev_samp(total_ms / exec_ms) / sqrt(count(*)) AS frac_se,
		   avg(total_ms) AS raw_mean, count(*) AS runs,
		   count(*) FILTER (WHERE NOT reliable) AS unreliable_runs,
		   -- the standard error of the mean as the estimator states it
		   -- (from each run's 95% margin): it sees what 30 alike runs
		   -- cannot, an estimate every run gets wrong the same way
		   sqrt(sum((coalesce(margin_ms, 0) / 1.96) ^ 2)) / count(*) / nullif(avg(total_ms), 0) AS model_se
	  FROM o WHERE mode = 'ref' GROUP BY q, node_id),
ex AS (
	SELECT q, node_id,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY total_ms) FILTER (WHERE mode = 'exact') AS exact,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY total_ms) FILTER (WHERE mode = 'exactsub') AS exactsub,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY total_ms / top_ms) FILTER (WHERE mode = 'exact') AS exact_share,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY total_ms / top_ms) FILTER (WHERE mode = 'exactsub') AS exactsub_share,
		   avg(total_ms) FILTER (WHERE mode = 'sampled') AS sampled_mean,
		   -- the node's own run-to-run spread, from the exact runs (no
		   -- sampling), each as a fraction of its run's Execution Time
		   stddev_samp(total_ms / exec_ms) FILTER (WHERE mode = 'exact')
			   / nullif(avg(total_ms / exec_ms) FILTER (WHERE mode = 'exact'), 0) AS exact_spread
	  FROM o WHERE mode IN ('exact', 'exactsub', 'sampled') GROUP BY q, node_id),
nodes AS (
	SELECT r.q, r.node_id, r.parent_id, r.node_type, r.relation, r.loops, r.runs AS ref_runs,
		   CASE WHEN r.node_id = 1 THEN u.ms ELSE u.ms * r.frac END AS reference,
		   100 * r.frac_se / nullif(r.frac, 0) AS ref_se_pct, 100 * r.model_se AS ref_model_se_pct, r.unreliable_runs,
		   r.raw_mean AS ref_raw_mean, u.ms AS untimed,
		   e.exact, e.exactsub, e.exact_share, e.exactsub_share, e.sampled_mean, e.exact_spread
	  FROM refn r
	  JOIN untimed u USING (q)
	  JOIN ex e USING (q, node_id)
	 WHERE CASE WHEN r.node_id = 1 THEN u.ms ELSE u.ms * r.frac END >= 1),
prof AS (
	-- a node's ticks over the top node's, pooled over the profiled runs,
	-- and the binomial standard error of that share.  A node of a tiny
	-- run can have more ticks than the top (t/100's scale 0.002 on 19
	-- once): its share above 1 is reported as it is, its standard error
	-- as 0 rather than the square root of a negative number
	SELECT q, node_id, share, sqrt(greatest(share * (1 - share), 0) / nullif(top_ticks, 0)) AS share_se
	  FROM (SELECT q, node_id, ticks / nullif(top_ticks, 0) AS share, top_ticks
			  FROM (SELECT q, node_id, sum(ticks)::float8 AS ticks,
						   max(sum(ticks)) FILTER (WHERE node_id = 1) OVER (PARTITION BY q)::float8 AS top_ticks
					  FROM o WHERE mode = 'profile' AND ticks IS NOT NULL
					 GROUP BY q, node_id) AS pooled) AS shares),
samp AS (
	-- raw: the run's estimate as printed; normalised: scaled by untimed
	-- over that run's Execution Time, which takes out the machine's phase
	-- (and the sampled run's own small overhead) and leaves the estimator
	SELECT n.q, n.node_id,
		   100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(s.total_ms / n.reference - 1)) AS med_err,
		   100 * max(abs(s.total_ms / n.reference - 1)) AS worst_err,
		   100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(s.total_ms * n.untimed / s.exec_ms / n.reference - 1)) AS norm_med_err,
		   100 * max(abs(s.total_ms * n.untimed / s.exec_ms / n.reference - 1)) AS norm_worst_err,
		   count(*) AS runs,
		   count(*) FILTER (WHERE s.margin_ms > 0) AS with_interval,
		   count(*) FILTER (WHERE s.margin_ms > 0 AND abs(s.total_ms - n.reference) <= s.margin_ms) AS covered,
		   count(*) FILTER (WHERE s.margin_ms > 0 AND abs(s.total_ms - n.reference * s.exec_ms / n.untimed) <= s.margin_ms) AS norm_covered,
		   count(*) FILTER (WHERE s.margin_ms > 0 AND abs(s.total_ms - n.reference * s.exec_ms / n.untimed)
							<= sqrt(s.margin_ms ^ 2 + (1.96 * coalesce(n.exact_spread, 0) * s.total_ms) ^ 2)) AS spread_covered,
		   count(*) FILTER (WHERE NOT s.reliable) AS unreliable,
		   100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY s.margin_ms / nullif(s.total_ms, 0)) AS margin_pct,
		   avg(s.sampled_calls) AS sampled_calls
	  FROM nodes n
	  JOIN o s ON s.q = n.q AND s.node_id = n.node_id AND s.mode = 'sampled'
	 GROUP BY n.q, n.node_id)
SELECT n.q, n.node_id, n.parent_id, n.node_type, n.relation, n.loops,
	   CASE WHEN n.node_id = 1 THEN 'untimed' ELSE 'ref' END AS ref_kind,
	   -- judged only against a reference whose own noise is well below the
	   -- 5% being judged, and whose runs the estimator itself called reliable
	   n.node_id = 1 OR (n.ref_se_pct <= current_setting('tpch.ref_se_max')::float8
						 AND coalesce(n.ref_model_se_pct, 0) <= current_setting('tpch.ref_se_max')::float8
						 AND coalesce(n.unreliable_runs, 0) = 0) AS judged,
	   n.ref_model_se_pct,
	   n.unreliable_runs AS ref_unreliable_runs,
	   n.reference AS reference_ms, n.ref_runs, n.ref_se_pct,
	   CASE WHEN n.node_id = 1 THEN 100 * (n.ref_raw_mean / n.untimed - 1) END AS ref_top_err_pct,
	   n.exact AS exact_ms, n.exactsub AS exactsub_ms, n.sampled_mean AS sampled_mean_ms,
	   100 * (n.exact / n.reference - 1) AS exact_err_pct,
	   100 * (n.exactsub / n.reference - 1) AS exactsub_err_pct,
	   100 * (n.sampled_mean / n.reference - 1) AS sampled_mean_err_pct,
	   s.med_err AS sampled_med_err_pct, s.worst_err AS sampled_worst_err_pct,
	   s.norm_med_err AS sampled_norm_med_err_pct, s.norm_worst_err AS sampled_norm_worst_err_pct,
	   s.runs AS sampled_runs, s.with_interval, s.covered, s.norm_covered, s.spread_covered, s.unreliable,
	   s.margin_pct, s.sampled_calls, 100 * n.exact_spread AS run_spread_pct,
	   CASE WHEN n.node_id > 1 THEN 100 * n.reference / n.untimed END AS share_ref_pct,
	   CASE WHEN n.node_id > 1 THEN 100 * (n.exact_share - n.reference / n.untimed) END AS share_exact_pp,
	   CASE WHEN n.node_id > 1 THEN 100 * (n.exactsub_share - n.reference / n.untimed) END AS share_exactsub_pp,
	   100 * p.share AS share_prof_pct,
	   100 * p.share_se AS prof_se_pp,
	   CASE WHEN n.node_id > 1 THEN 100 * (n.exact_share - p.share) END AS share_exact_prof_pp,
	   CASE WHEN n.node_id > 1 THEN 100 * (n.exactsub_share - p.share) END AS share_exactsub_prof_pp,
	   CASE WHEN n.node_id > 1 THEN 100 * (n.reference / n.untimed - p.share) END AS share_ref_prof_pp
  FROM nodes n
  JOIN samp s USING (q, node_id)
  LEFT JOIN prof p USING (q, node_id);

-- the overheads: each mode's median statement time over plain's
CREATE TABLE query_stats AS
WITH walls AS (
	SELECT q, mode, percentile_cont(0.5) WITHIN GROUP (ORDER BY wall_ms) AS ms
	  FROM (SELECT DISTINCT q, mode, run, wall_ms FROM obs WHERE run > 0) AS d
	 GROUP BY q, mode),
over AS (
	SELECT q,
		   max(ms) FILTER (WHERE mode = 'plain') AS plain_ms,
		   max(ms) FILTER (WHERE mode = 'untimed') / max(ms) FILTER (WHERE mode = 'plain') AS untimed_x,
		   max(ms) FILTER (WHERE mode = 'exact') / max(ms) FILTER (WHERE mode = 'plain') AS exact_x,
		   max(ms) FILTER (WHERE mode = 'exactsub') / max(ms) FILTER (WHERE mode = 'plain') AS exactsub_x,
		   max(ms) FILTER (WHERE mode = 'sampled') / max(ms) FILTER (WHERE mode = 'plain') AS sampled_x,
		   max(ms) FILTER (WHERE mode = 'ref') / max(ms) FILTER (WHERE mode = 'plain') AS ref_x
	  FROM walls GROUP BY q),
noise AS (
	-- the machine's own run-to-run spread: untimed runs against their
	-- median, no estimator involved
	SELECT u.q, 100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(u.exec_ms / m.ms - 1)) AS noise_pct
	  FROM obs u
	  JOIN (SELECT q, percentile_cont(0.5) WITHIN GROUP (ORDER BY exec_ms) AS ms
			  FROM obs WHERE mode = 'untimed' AND run > 0 GROUP BY q) AS m USING (q)
	 WHERE u.mode = 'untimed' AND u.run > 0
	 GROUP BY u.q),
shapes AS (
	-- the same plan in every run: one node type per node id
	SELECT q, bool_and(types = 1) AS stable
	  FROM (SELECT q, node_id, count(DISTINCT node_type) AS types
			  FROM obs WHERE node_id IS NOT NULL GROUP BY q, node_id) AS t
	 GROUP BY q),
per_node AS (
	SELECT n.*, o.total_ms AS run_ms, o.margin_ms AS run_margin,
		   (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY u.exec_ms) FROM obs u
			 WHERE u.q = n.q AND u.mode = 'untimed' AND u.run > 0) / o.exec_ms AS run_scale
	  FROM node_stats n
	  JOIN obs o ON o.q = n.q AND o.node_id = n.node_id AND o.mode = 'sampled' AND o.run > 0
	 WHERE n.judged),
agg AS (
	SELECT grouping(q) AS is_all, coalesce(q, 0) AS q,
		   count(DISTINCT node_id::text || '/' || q::text) AS nodes,
		   100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(run_ms / reference_ms - 1)) AS sampled_med,
		   100 * max(abs(run_ms / reference_ms - 1)) AS sampled_worst,
		   100.0 * count(*) FILTER (WHERE run_margin > 0 AND abs(run_ms - reference_ms) <= run_margin)
			   / nullif(count(*) FILTER (WHERE run_margin > 0), 0) AS coverage_pct,
		   count(*) AS node_runs, count(*) FILTER (WHERE run_margin > 0) AS with_interval,
		   100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(run_ms * run_scale / reference_ms - 1))
			   FILTER (WHERE node_id > 1) AS sampled_norm_med,
		   100 * max(abs(run_ms * run_scale / reference_ms - 1)) FILTER (WHERE node_id > 1) AS sampled_norm_worst,
		   100.0 * count(*) FILTER (WHERE node_id > 1 AND run_margin > 0 AND abs(run_ms * run_scale - reference_ms) <= run_margin * run_scale)
			   / nullif(count(*) FILTER (WHERE node_id > 1 AND run_margin > 0), 0) AS norm_coverage_pct,
		   100.0 * count(*) FILTER (WHERE node_id > 1 AND run_margin > 0 AND abs(run_ms * run_scale - reference_ms)
									<= sqrt(run_margin ^ 2 + (1.96 * coalesce(run_spread_pct, 0) / 100 * run_ms) ^ 2) * run_scale)
			   / nullif(count(*) FILTER (WHERE node_id > 1 AND run_margin > 0), 0) AS spread_coverage_pct
	  FROM per_node GROUP BY ROLLUP (q)),
agg_nodes AS (
	SELECT coalesce(q, 0) AS q,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(exact_err_pct)) AS exact_med,
		   max(abs(exact_err_pct)) AS exact_worst,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(exactsub_err_pct)) AS exactsub_med,
		   max(abs(exactsub_err_pct)) AS exactsub_worst,
		   max(abs(share_exact_pp)) AS share_exact_worst_pp,
		   max(abs(share_exactsub_pp)) AS share_exactsub_worst_pp,
		   max(abs(exact_err_pct)) FILTER (WHERE node_id = 1) AS top_exact_err,
		   max(abs(exactsub_err_pct)) FILTER (WHERE node_id = 1) AS top_exactsub_err,
		   max(abs(sampled_mean_err_pct)) FILTER (WHERE node_id = 1) AS top_sampled_err,
		   max(abs(ref_top_err_pct)) FILTER (WHERE node_id = 1) AS ref_top_err,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY ref_se_pct) FILTER (WHERE node_id > 1) AS ref_se_med,
		   max(ref_se_pct) FILTER (WHERE node_id > 1) AS ref_se_worst
	  FROM node_stats WHERE judged GROUP BY ROLLUP (q)),
unjudged AS (
	SELECT coalesce(q, 0) AS q, count(*) AS unjudged
	  FROM node_stats WHERE NOT judged GROUP BY ROLLUP (q)),
agg_prof AS (
	-- shares against the profile, inner nodes whose profiled share is
	-- known to 2 pp (its own standard error)
	SELECT coalesce(q, 0) AS q, count(*) AS prof_nodes,
		   max(abs(share_exactsub_prof_pp)) AS share_exsub_prof_worst_pp,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(share_exactsub_prof_pp)) AS share_exsub_prof_med_pp,
		   max(abs(share_exact_prof_pp)) AS share_exact_prof_worst_pp,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(share_exact_prof_pp)) AS share_exact_prof_med_pp,
		   max(abs(share_ref_prof_pp)) AS share_ref_prof_worst_pp,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(share_ref_prof_pp)) AS share_ref_prof_med_pp,
		   (array_agg(q ORDER BY abs(share_exactsub_prof_pp) DESC))[1] AS worst_q,
		   (array_agg(node_id ORDER BY abs(share_exactsub_prof_pp) DESC))[1] AS worst_node
	  FROM node_stats WHERE node_id > 1 AND prof_se_pp <= 2 GROUP BY ROLLUP (q))
SELECT k.q, k.title, coalesce(s.stable, true) AS plan_stable,
	   coalesce(a.nodes, 0) AS nodes, coalesce(j.unjudged, 0) AS unjudged, o.plain_ms, z.noise_pct,
	   o.untimed_x, o.exact_x, o.exactsub_x, o.sampled_x, o.ref_x,
	   n.top_exact_err, n.top_exactsub_err, n.top_sampled_err, n.ref_top_err,
	   n.exact_med, n.exact_worst, n.exactsub_med, n.exactsub_worst,
	   a.sampled_med, a.sampled_worst, a.coverage_pct, a.node_runs, a.with_interval,
	   a.sampled_norm_med, a.sampled_norm_worst, a.norm_coverage_pct, a.spread_coverage_pct,
	   n.share_exact_worst_pp, n.share_exactsub_worst_pp, n.ref_se_med, n.ref_se_worst,
	   p.prof_nodes, p.share_exsub_prof_worst_pp, p.share_exsub_prof_med_pp,
	   p.share_exact_prof_worst_pp, p.share_exact_prof_med_pp,
	   p.share_ref_prof_worst_pp, p.share_ref_prof_med_pp, p.worst_q AS prof_worst_q, p.worst_node AS prof_worst_node
  FROM (SELECT q, title FROM queries UNION ALL SELECT 0, 'all queries') AS k
  LEFT JOIN agg a USING (q)
  LEFT JOIN agg_nodes n USING (q)
  LEFT JOIN shapes s USING (q)
  LEFT JOIN unjudged j USING (q)
  LEFT JOIN agg_prof p USING (q)
  LEFT JOIN (SELECT q, noise_pct FROM noise
			 UNION ALL
			 SELECT 0, percentile_cont(0.5) WITHIN GROUP (ORDER BY noise_pct) FROM noise) AS z USING (q)
  LEFT JOIN (SELECT q, plain_ms, untimed_x, exact_x, exactsub_x, sampled_x, ref_x FROM over
			 UNION ALL
			 SELECT 0, NULL,
					percentile_cont(0.5) WITHIN GROUP (ORDER BY untimed_x),
					percentile_cont(0.5) WITHIN GROUP (ORDER BY exact_x),
					percentile_cont(0.5) WITHIN GROUP (ORDER BY exactsub_x),
					percentile_cont(0.5) WITHIN GROUP (ORDER BY sampled_x),
					percentile_cont(0.5) WITHIN GROUP (ORDER BY ref_x)
			   FROM over) AS o USING (q)
 ORDER BY k.q = 0, k.q;

-- The estimator's own check (mode checked): each sampled estimate against
-- the exact total of the same calls in the same run, for every node-run of
-- at least 1 ms; no reference, no run-to-run noise, only the sampling.
DROP TABLE IF EXISTS check_stats;
CREATE TABLE check_stats AS
SELECT q, node_id, min(node_type) AS node_type, min(relation) AS relation, max(loops) AS loops,
	   count(*) AS runs, count(*) FILTER (WHERE margin_ms > 0) AS with_interval,
	   count(*) FILTER (WHERE margin_ms > 0 AND abs(total_ms - check_ms) <= margin_ms) AS covered,
	   100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(total_ms / check_ms - 1)) AS med_err_pct,
	   100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY total_ms / check_ms - 1) AS med_signed_pct,
	   100 * max(abs(total_ms / check_ms - 1)) AS worst_err_pct,
	   100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY margin_ms / nullif(total_ms, 0)) AS margin_pct,
	   avg(check_ms) AS check_ms, avg(sampled_calls) AS sampled_calls
  FROM obs
 WHERE mode = 'checked' AND run > 0 AND check_ms >= 1
 GROUP BY q, node_id;

-- ---- printing ----
\pset footer off
\pset null '-'
\echo
\echo 'Overhead, statement time over plain (medians; server-side, planning included), and the top node''s error against'
\echo 'the untimed Execution Time, % (exact, exsub: median of runs; sampled, ref: mean of runs); noise: the untimed runs'' median'
\echo 'deviation from their median (the machine, no estimator); row all: median overheads and noise, worst errors:'
SELECT CASE WHEN q = 0 THEN 'all' ELSE 'Q' || lpad(q::text, 2, '0') END AS q,
	   CASE WHEN plan_stable THEN '' ELSE 'plan changed' END AS " ",
	   nodes AS "nodes>=1ms", unjudged AS "no ref", round(plain_ms::numeric, 1) AS "plain ms",
	   to_char(noise_pct, 'FM990.0') AS "noise%",
	   to_char(untimed_x, 'FM990.00') AS "untimed/", to_char(exact_x, 'FM990.00') AS "exact/",
	   to_char(exactsub_x, 'FM990.00') AS "exsub/", to_char(sampled_x, 'FM990.00') AS "sampled/",
	   to_char(ref_x, 'FM990.00') AS "ref/",
	   to_char(top_exact_err, 'FM9990.0') AS "top exact err%",
	   to_char(top_exactsub_err, 'FM9990.0') AS "top exsub err%",
	   to_char(top_sampled_err, 'FM9990.0') AS "top sampled err%",
	   to_char(ref_top_err, 'FM9990.0') AS "top ref err%"
  FROM query_stats ORDER BY q = 0, q;

\echo 'Per-node error against the references, % (exact, exsub: median of runs per node; sampled: every run),'
\echo 'coverage of the sampled 95% interval, worst share error in percentage points, the reference''s own standard error;'
\echo 'exsub/prof, ref/prof: worst share error against the profile (inner nodes whose profiled share is known to 2 pp);'
\echo 'norm: the sampled runs scaled by untimed over their own Execution Time (takes out the machine''s phase), inner nodes;'
\echo 'row all: the same over every node of every query:'
SELECT CASE WHEN q = 0 THEN 'all' ELSE 'Q' || lpad(q::text, 2, '0') END AS q,
	   to_char(exact_med, 'FM9990.0') AS "exact med", to_char(exact_worst, 'FM9990.0') AS "exact worst",
	   to_char(exactsub_med, 'FM9990.0') AS "exsub med", to_char(exactsub_worst, 'FM9990.0') AS "exsub worst",
	   to_char(sampled_med, 'FM9990.0') AS "sampled med", to_char(sampled_worst, 'FM9990.0') AS "sampled worst",
	   to_char(coverage_pct, 'FM990') AS "coverage%",
	   to_char(sampled_norm_med, 'FM9990.0') AS "norm med", to_char(sampled_norm_worst, 'FM9990.0') AS "norm worst",
	   to_char(norm_coverage_pct, 'FM990') AS "norm cov%",
	   to_char(share_exact_worst_pp, 'FM990.0') AS "share exact pp",
	   to_char(share_exactsub_worst_pp, 'FM990.0') AS "share exsub pp",
	   to_char(ref_se_med, 'FM990.0') || ' / ' || to_char(ref_se_worst, 'FM990.0') AS "ref se% med/worst",
	   to_char(share_exsub_prof_worst_pp, 'FM990.0') AS "exsub/prof pp",
	   to_char(share_ref_prof_worst_pp, 'FM990.0') AS "ref/prof pp"
  FROM query_stats ORDER BY q = 0, q;

\echo 'Targets:'
WITH a AS (SELECT * FROM query_stats WHERE q = 0),
node_ms AS (
	-- each node's total per mode: the reference's mean, the others' median
	SELECT mode, q, node_id, min(parent_id) AS parent_id,
		   CASE WHEN mode = 'ref' THEN avg(total_ms)
				ELSE percentile_cont(0.5) WITHIN GROUP (ORDER BY total_ms) END AS ms
	  FROM obs WHERE run > 0 AND mode IN ('ref', 'exactsub', 'exact')
	 GROUP BY mode, q, node_id),
excess AS (
	-- how much more than its parent a parent's children add up to
	SELECT p.mode, p.q, p.node_id, p.ms, sum(c.ms) / nullif(p.ms, 0) - 1 AS excess
	  FROM node_ms p
	  JOIN node_ms c ON c.mode = p.mode AND c.q = p.q AND c.parent_id = p.node_id
	 GROUP BY p.mode, p.q, p.node_id, p.ms)
SELECT target, value,
	   CASE WHEN k >= 5 OR k = 4.2 THEN 'info' WHEN value IS NULL THEN 'not run' WHEN ok THEN 'met' ELSE 'MISSED' END AS result
  FROM (SELECT 1 AS k, 'sampled 1/' || current_setting('tpch.sample') || ': median per-node error <= 5%' AS target,
			   to_char(sampled_med, 'FM9990.0') || '%' AS value, sampled_med <= 5 AS ok FROM a
		UNION ALL
		SELECT 2, 'sampled 1/' || current_setting('tpch.sample') || ': interval coverage >= 90%',
			   to_char(coverage_pct, 'FM990.0') || '% of ' || with_interval || ' node-runs with an interval ('
			   || node_runs - with_interval || ' without: nothing sampled, or too little to state one)', coverage_pct >= 90 FROM a
		UNION ALL
		SELECT 2.1, '  the same, speed-normalised (inner nodes): median error <= 5%',
			   to_char(sampled_norm_med, 'FM9990.0') || '%', sampled_norm_med <= 5 FROM a
		UNION ALL
		SELECT 2.2, '  the same, speed-normalised (inner nodes): coverage >= 90%',
			   to_char(norm_coverage_pct, 'FM990.0') || '%', norm_coverage_pct >= 90 FROM a
		UNION ALL
		SELECT 2.3, '  the same, interval widened by the node''s own run-to-run spread: coverage >= 90%',
			   to_char(spread_coverage_pct, 'FM990.0') || '%', spread_coverage_pct >= 90 FROM a
		UNION ALL
		SELECT 2.4, 'sampled 1/' || current_setting('tpch.sample') || ', checked against the same run''s exact total: interval coverage >= 90%',
			   to_char(100.0 * sum(covered) / nullif(sum(with_interval), 0), 'FM990.0') || '% of ' || sum(with_interval)
			   || ' node-runs with an interval (' || sum(runs) - sum(with_interval) || ' without)',
			   sum(covered) >= 0.9 * sum(with_interval) FROM check_stats HAVING sum(with_interval) > 0
		UNION ALL
		SELECT 2.5, '  checked: median error against the same run''s exact total <= 5%',
			   to_char((SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(total_ms / check_ms - 1)) * 100
						  FROM obs WHERE mode = 'checked' AND run > 0 AND check_ms >= 1), 'FM9990.0') || '%',
			   (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(total_ms / check_ms - 1)) * 100
				  FROM obs WHERE mode = 'checked' AND run > 0 AND check_ms >= 1) <= 5 FROM a
		UNION ALL
		SELECT 3, 'exact, overhead subtracted: top node within 5% on every query',
			   'worst ' || to_char(top_exactsub_err, 'FM9990.0') || '%', top_exactsub_err <= 5 FROM a
		UNION ALL
		SELECT 4, 'exact, overhead subtracted: shares within 5 pp of the sampled reference',
			   'worst ' || to_char(share_exactsub_worst_pp, 'FM990.0') || ' pp', share_exactsub_worst_pp <= 5 FROM a
		UNION ALL
		SELECT 4.1, 'exact, overhead subtracted: shares within 5 pp of the profile',
			   'worst ' || to_char(share_exsub_prof_worst_pp, 'FM990.0') || ' pp (Q' || lpad(prof_worst_q::text, 2, '0')
			   || ' node ' || prof_worst_node || '), median ' || to_char(share_exsub_prof_med_pp, 'FM990.0')
			   || ' pp, over ' || prof_nodes || ' inner nodes', share_exsub_prof_worst_pp <= 5 FROM a
		UNION ALL
		SELECT 4.2, '  exact, not subtracted: shares against the profile (not a target)',
			   'worst ' || to_char(share_exact_prof_worst_pp, 'FM990.0') || ' pp, median '
			   || to_char(share_exact_prof_med_pp, 'FM990.0') || ' pp', NULL FROM a
		UNION ALL
		SELECT 5, 'reference check: the ref runs'' top node against untimed (not a target)',
			   'worst ' || to_char(ref_top_err, 'FM9990.0') || '%', NULL FROM a
		UNION ALL
		SELECT 5.1, 'reference check: the ref runs'' shares against the profile (not a target)',
			   'worst ' || to_char(share_ref_prof_worst_pp, 'FM990.0') || ' pp, median '
			   || to_char(share_ref_prof_med_pp, 'FM990.0') || ' pp', NULL FROM a
		UNION ALL
		SELECT 6, 'the reference''s residual clock cost: exact''s median top-node inflation / ' || current_setting('tpch.ref'),
			   to_char((SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY exact_err_pct) FROM node_stats WHERE node_id = 1)
					   / current_setting('tpch.ref')::float8, 'FM990.00') || '%', NULL FROM a
		UNION ALL
		-- A node's time holds its children's (no parallel workers here):
		-- exactly timed, the children's intervals lie within the parent's,
		-- and add up to more only where the plan counts a child twice (a
		-- CTE beside the scans that read it).  Children that exceed their
		-- parent by more than that in another mode overstate the children
		-- (or understate the parent) there, the reference included.
		SELECT 7, 'reference check: parents of >= 1 ms whose children add up to > 5% more than they do timed exactly',
			   string_agg(mode || ' ' || over || ' of ' || parents
						  || coalesce(', worst Q' || lpad(worst_q::text, 2, '0') || ' node ' || worst_node
									  || ' +' || to_char(worst_pct, 'FM990.0') || '%', ''), '; ' ORDER BY mode),
			   NULL
		  FROM (SELECT mode, count(*) FILTER (WHERE ms >= 1 AND beyond > 0.05) AS over,
					   count(*) FILTER (WHERE ms >= 1) AS parents,
					   (array_agg(q ORDER BY beyond DESC) FILTER (WHERE ms >= 1))[1] AS worst_q,
					   (array_agg(node_id ORDER BY beyond DESC) FILTER (WHERE ms >= 1))[1] AS worst_node,
					   100 * max(beyond) FILTER (WHERE ms >= 1 AND beyond > 0.05) AS worst_pct
				  FROM (SELECT e.mode, e.q, e.node_id, e.ms, e.excess - x.excess AS beyond
						  FROM excess e
						  JOIN excess x ON x.mode = 'exact' AND x.q = e.q AND x.node_id = e.node_id
						 WHERE e.mode <> 'exact') b
				 GROUP BY mode) m
		HAVING count(*) > 0) AS t
 ORDER BY k;

\echo 'Where a target is missed: nodes whose sampled runs have a median error > 5% or a coverage < 90%,'
\echo 'top nodes whose subtracted total is > 5% off, nodes whose subtracted share is > 5 pp off (the reference''s or the profile''s):'
SELECT 'Q' || lpad(q::text, 2, '0') AS q, node_id AS node, node_type || coalesce(' on ' || relation, '') AS node_type,
	   round(loops) AS loops, round(reference_ms::numeric, 2) AS "ref ms",
	   to_char(sampled_med_err_pct, 'FM9990.0') AS "sampled med%",
	   to_char(sampled_norm_med_err_pct, 'FM9990.0') AS "norm med%",
	   covered || '/' || with_interval AS covered, norm_covered || '/' || with_interval AS "norm cov",
	   round(run_spread_pct::numeric, 1) AS "run spread%", round(margin_pct::numeric, 1) AS "margin%",
	   round(sampled_calls) AS "sampled calls",
	   to_char(exactsub_err_pct, 'FM9990.0') AS "exsub err%", to_char(share_exactsub_pp, 'FM990.0') AS "exsub pp",
	   to_char(exact_err_pct, 'FM9990.0') AS "exact err%",
	   to_char(share_prof_pct, 'FM990.0') || ' +/- ' || to_char(1.96 * prof_se_pp, 'FM990.0') AS "prof share%",
	   to_char(share_exactsub_prof_pp, 'FM990.0') AS "exsub/prof pp", to_char(share_ref_prof_pp, 'FM990.0') AS "ref/prof pp"
  FROM node_stats
 WHERE (judged AND (sampled_med_err_pct > 5 OR covered < 0.9 * with_interval
	OR (node_id = 1 AND abs(exactsub_err_pct) > 5) OR abs(share_exactsub_pp) > 5))
	OR (prof_se_pp <= 2 AND abs(share_exactsub_prof_pp) > 5)
 ORDER BY q, node_id;

\echo 'Nodes of >= 1 ms left out ("no ref"): the reference''s own standard error, over its runs or as its runs'' margins'
\echo 'state it, is above' :ref_se_max'%, or a reference run called its estimate unreliable (typically few long calls a'
\echo 'loop, rarely sampled, each counting' :ref 'times; or many loops of a few calls, where a sampled call is capped at its loop''s time):'
SELECT 'Q' || lpad(q::text, 2, '0') AS q, node_id AS node, node_type || coalesce(' on ' || relation, '') AS node_type,
	   round(loops) AS loops, round(reference_ms::numeric, 2) AS "ref ms", round(ref_se_pct::numeric, 1) AS "ref se%",
	   round(ref_model_se_pct::numeric, 1) AS "stated se%",
	   ref_unreliable_runs || '/' || ref_runs AS "unreliable ref runs", round(exact_ms::numeric, 2) AS "exact ms",
	   round(sampled_mean_ms::numeric, 2) AS "sampled mean ms", round(sampled_calls) AS "sampled calls"
  FROM node_stats
 WHERE NOT judged
 ORDER BY q, node_id;

\echo 'The estimator checked against the same run (mode checked: every call of the sampled nodes timed too, fenced as the'
\echo 'sampled calls are): nodes whose interval covered the exact total in fewer than 90% of the runs that had one, or'
\echo 'whose median error exceeds 5% (signed: below 0, the estimate is low):'
SELECT 'Q' || lpad(q::text, 2, '0') AS q, node_id AS node, node_type || coalesce(' on ' || relation, '') AS node_type,
	   round(loops) AS loops, round(check_ms::numeric, 2) AS "exact ms", round(sampled_calls) AS "sampled calls",
	   covered || '/' || with_interval || ' of ' || runs AS covered,
	   to_char(med_err_pct, 'FM9990.0') AS "med err%", to_char(med_signed_pct, 'FM9990.0') AS "med signed%",
	   to_char(worst_err_pct, 'FM9990.0') AS "worst%", round(margin_pct::numeric, 1) AS "margin%"
  FROM check_stats
 WHERE covered < 0.9 * with_interval OR med_err_pct > 5
 ORDER BY q, node_id;
