/*
 * test_insitu.c
 *	  Unit tests of the in-plan measurement of a timed call's cost
 *	  (src/insitu.h), TAP output for prove.
 *
 * Spans are drawn here from known distributions: a bare span is a base
 * duration with noise, a timed one the same plus the cost being measured,
 * and a few of either kind are made enormous (a preemption).  The checks:
 * the cost comes back within its stated interval, and the interval covers
 * it in most of many independent runs; the enormous spans are left out and
 * do not move it; a node with too few spans, or spans that read as zero,
 * has no figure; spans that outgrow the cap set it again, and steady ones
 * keep it; the gaps between probes have the mean they are drawn at,
 * grow with a node's calls within their bounds, and are never below 1.
 * And the bare calls' lengths: a node whose calls grow dearer over its
 * life is run through the probes' schedule as the wrapper runs it, and
 * its total with the bare calls given their neighbours' lengths must be
 * unbiased, where the node's mean call (the bare calls fall more often
 * among its early, cheap calls) overstates it.  A probe whose last bare
 * call returned nothing: the outer side of a nested loop, whose calls are
 * far apart, and a join that drains its outer side in its last call, each
 * must get about what its bare calls took, not the span around them.
 */
#include "insitu.h"
#include "tap.h"

#include <stdio.h>
#include <string.h>

/* uniform in (0, 1] */
static double
uniform(void)
{
	return ((double) (tap_random() >> 11) + 1.0) / 9007199254740992.0;
}

/* a span: base, exponential noise of mean "noise", "cost" if timed */
static double
span(bool bare, double base, double noise, double cost, double outliers)
{
	double		ns = base - noise * log(uniform());

	if (!bare)
		ns += cost;
	if (uniform() < outliers)
		ns += 1e6;				/* a millisecond away: preempted */
	return ns;
}

/* spans of both kinds at random, as the wrapper assigns them */
static void
fill(TsSpanStats *s, int n, double base, double noise, double cost,
	 double outliers)
{
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < n; i++)
	{
		bool		bare = uniform() < 0.5;

		ts_span_add(s, bare, span(bare, base, noise, cost, outliers), -1);
	}
}

/*
 * One loop of "n" calls, the i-th lasting 200 ns plus up to 1800 more as
 * the loop goes on, with noise, run through the probes' schedule; its
 * total with the bare calls given their neighbours' lengths and given the
 * mean of the later timed calls, each over the true total
 */
static void
rising_node(int n, double *by_neighbours, double *by_mean)
{
	double		truth = 0;
	double		seen = 0;		/* what the timer adds up */
	double		later_sum = 0;	/* the same without the loop's first call */
	double		first_ns = 0;
	double		bare_ns = 0;
	double		bare = 0;
	double		pending = 0;
	double		orphans = 0;
	double		later_mean;
	int64_t		timed = 0;
	int64_t		countdown = ts_probe_gap(TS_PROBE_GAP_MIN, uniform());
	int			stage = 0;		/* 0 between probes, 1 to 4 middle, 5 last */
	bool		probe_bare = false;

	for (int i = 0; i < n; i++)
	{
		double		d = 200 + 1800.0 * i / n - 50 * log(uniform());
		bool		is_bare = false;

		truth += d;
		if (stage == 0 && --countdown <= 0)
		{
			/* the probe's first call; a loop's first cannot stand in */
			first_ns = i == 0 ? -1 : d;
			probe_bare = uniform() < 0.5;
			stage = 1;
		}
		else if (stage >= 1 && stage <= TS_PROBE_RUN)
		{
			is_bare = probe_bare;
			stage++;
		}
		else if (stage == TS_PROBE_RUN + 1)
		{
			double		ns = ts_bare_imputed(pending, first_ns, d);

			if (ns >= 0)
				bare_ns += ns;
			else
				orphans += pending;
			pending = 0;
			stage = 0;
			countdown = ts_probe_gap(ts_probe_gap_mean(i + 1), uniform());
		}
		if (is_bare)
		{
			bare += 1;
			pending += 1;
			continue;
		}
		timed++;
		seen += d;
		if (i > 0)
			later_sum += d;
	}
	/* a probe cut short by the loop's end keeps only its first call */
	if (pending > 0)
	{
		double		ns = ts_bare_imputed(pending, first_ns, -1);

		if (ns >= 0)
			bare_ns += ns;
		else
			orphans += pending;
	}
	later_mean = later_sum / (double) (timed - 1);
	*by_neighbours = (seen + bare_ns + orphans * later_mean) / truth;
	*by_mean = (seen + bare * later_mean) / truth;
}

int
main(void)
{
	TsSpanStats s;
	double		cost = 0,
				se = 0;
	bool		have;
	int			covered = 0,
				runs = 400;
	double		sum_gap = 0;
	int64_t		min_gap = INT64_MAX;

	/* a cost of 45 ns in spans of 120 ns +- 40, 20000 spans, 0.5% preempted */
	fill(&s, 20000, 120, 40, 45, 0.005);
	have = ts_span_cost(&s, &cost, &se);
	ok(have && fabs(cost - 45) <= 1.96 * se + 0.5,
	   "cost 45 ns measured as %.2f +/- %.2f", cost, 1.96 * se);
	ok(se > 0 && se < 1.5, "its standard error is small and positive: %.3f", se);
	ok(s.dropped > 50 && s.dropped < 200,
	   "the preempted spans (about 100) are left out: %llu",
	   (unsigned long long) s.dropped);
	ok(s.cap > 120 && s.cap < 8 * 250,
	   "the cap is a multiple of the first spans' median: %.1f", s.cap);

	/* coverage of the 95% interval over many runs */
	for (int r = 0; r < runs; r++)
	{
		fill(&s, 4000, 80, 60, 20, 0.002);
		if (ts_span_cost(&s, &cost, &se) && fabs(cost - 20) <= 1.96 * se)
			covered++;
	}
	ok(covered >= runs * 90 / 100,
	   "the 95%% interval covers the cost in %d of %d runs (at least 90%%)",
	   covered, runs);

	/* intervals shrink as spans grow */
	{
		double		se_small,
					se_large;

		fill(&s, 1000, 80, 60, 20, 0);
		ts_span_cost(&s, &cost, &se_small);
		fill(&s, 64000, 80, 60, 20, 0);
		ts_span_cost(&s, &cost, &se_large);
		ok(se_large < se_small / 4,
		   "64 times the spans, an eighth of the error: %.3f then %.3f",
		   se_small, se_large);
	}

	/*
	 * Spans that outgrow the cap: a node whose first 500 spans last 100 ns
	 * (+ 30 noise) and the rest 700 (+ 300), cost 45 throughout.  The cap
	 * from its first spans (about 1,000) would leave out about a quarter of
	 * the later spans, more of the timed than of the bare, and the cost
	 * would come out about 40% low.  Set again from the later spans, it
	 * keeps them.
	 */
	{
		int			good = 0;

		for (int r = 0; r < 20; r++)
		{
			memset(&s, 0, sizeof(s));
			for (int i = 0; i < 20000; i++)
			{
				bool		bare = uniform() < 0.5;

				ts_span_add(&s, bare, i < 500 ? span(bare, 100, 30, 45, 0) :
							span(bare, 700, 300, 45, 0), -1);
			}
			if (ts_span_cost(&s, &cost, &se) && fabs(cost - 45) <= 1.96 * se + 2)
				good++;
		}
		ok(good >= 17,
		   "spans that outgrow the first cap: the cost within its interval in %d of 20 runs (last %.2f +/- %.2f)",
		   good, cost, 1.96 * se);
		ok(s.cap > 8 * 700 && s.dropped < 1000,
		   "the cap was set again from the later spans (%.0f), and few were left out (%llu)",
		   s.cap, (unsigned long long) s.dropped);
	}

	/* spans that stay as they were: the cap is set once */
	{
		double		first_cap;

		memset(&s, 0, sizeof(s));
		for (int i = 0; i < TS_SPAN_SEEDS; i++)
			ts_span_add(&s, i % 2 == 0, span(i % 2 == 0, 120, 40, 45, 0), -1);
		first_cap = s.cap;
		for (int i = 0; i < 20000; i++)
		{
			bool		bare = uniform() < 0.5;

			ts_span_add(&s, bare, span(bare, 120, 40, 45, 0.01), -1);
		}
		ok(s.cap == first_cap && s.dropped > 100,
		   "steady spans, 1%% preempted: the cap stays (%.0f, then %.0f), %llu left out",
		   first_cap, s.cap, (unsigned long long) s.dropped);
	}

	/* no cost at all: the figure is near zero, either sign */
	fill(&s, 20000, 100, 30, 0, 0);
	have = ts_span_cost(&s, &cost, &se);
	ok(have && fabs(cost) <= 4 * se,
	   "no cost measures as %.2f +/- %.2f", cost, 1.96 * se);

	/*
	 * Which figure stands for a node, and the plan's pooled one.  A scan
	 * that filters out most rows: 400 spans of 20 us with exponential
	 * noise of 15 us, the same 45 ns cost; beside a calibration of 45 ns
	 * its figure is too imprecise to count for each of its calls, while a
	 * node of short steady spans measures it closely.
	 */
	{
		TsCostPool	pool = {0, 0};
		double		wide_cost = 0,
					wide_se = 0,
					narrow_cost = 0,
					narrow_se = 0,
					pooled = 0,
					pooled_se = 0,
					by_spans;

		fill(&s, 400, 20000, 15000, 45, 0);
		have = ts_span_cost(&s, &wide_cost, &wide_se);
		ok(have && !ts_span_cost_precise(wide_se, 45),
		   "long uneven spans: %.0f +/- %.0f ns, too imprecise to stand for a 45 ns cost",
		   wide_cost, 1.96 * wide_se);
		fill(&s, 4000, 120, 40, 45, 0);
		have = ts_span_cost(&s, &narrow_cost, &narrow_se);
		ok(have && ts_span_cost_precise(narrow_se, 45),
		   "short steady spans: %.2f +/- %.2f ns, precise enough",
		   narrow_cost, 1.96 * narrow_se);

		/*
		 * Pooled by precision, the wide node barely counts; pooled by
		 * spans (the old rule: 400 against 4000), its error would pass
		 * a tenth into the plan's figure
		 */
		ok(!ts_cost_pool_get(&pool, &pooled, &pooled_se), "an empty pool has no figure");
		ts_cost_pool_add(&pool, wide_cost, wide_se);
		ts_cost_pool_add(&pool, narrow_cost, narrow_se);
		by_spans = (wide_cost * 400 + narrow_cost * 4000) / 4400;
		have = ts_cost_pool_get(&pool, &pooled, &pooled_se);
		ok(have &&
		   fabs(pooled - narrow_cost) <= 0.05 * narrow_se + 0.01 &&
		   pooled_se <= narrow_se && ts_span_cost_precise(pooled_se, 45),
		   "pooled by precision: %.2f +/- %.2f ns (by spans it would be %.2f)",
		   pooled, 1.96 * pooled_se, by_spans);

		ok(ts_span_cost_precise(0.9, 2) && !ts_span_cost_precise(1.1, 2),
		   "beside a clock read of 2 ns, a standard error of 0.9 ns is precise enough and 1.1 is not");

		/* imprecise nodes alone pool into an imprecise figure */
		pool.sum = pool.weight = 0;
		for (int k = 0; k < 3; k++)
		{
			fill(&s, 400, 20000, 15000, 45, 0);
			ts_span_cost(&s, &wide_cost, &wide_se);
			ts_cost_pool_add(&pool, wide_cost, wide_se);
		}
		have = ts_cost_pool_get(&pool, &pooled, &pooled_se);
		ok(have && !ts_span_cost_precise(pooled_se, 45),
		   "three wide nodes pool into %.0f +/- %.0f ns: still too imprecise",
		   pooled, 1.96 * pooled_se);

		/* spans all alike (se 0): a finite weight, the node's own figure */
		pool.sum = pool.weight = 0;
		ts_cost_pool_add(&pool, 30, 0);
		ts_cost_pool_add(&pool, 50, 10);
		have = ts_cost_pool_get(&pool, &pooled, &pooled_se);
		ok(have && isfinite(pooled) &&
		   fabs(pooled - 30) < 1e-3 && pooled_se > 0,
		   "a node with no spread of its own: %.4f +/- %.4f ns", pooled, pooled_se);
	}

	/* too few spans of one kind: no figure */
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 1000; i++)
		ts_span_add(&s, i % 20 == 0, 100, -1);
	ok(s.n[1] < TS_SPAN_MIN && !ts_span_cost(&s, &cost, &se),
	   "%llu bare spans (under %d): no figure",
	   (unsigned long long) s.n[1], TS_SPAN_MIN);
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 2 * TS_SPAN_MIN - 2; i++)
		ts_span_add(&s, i % 2, 100, -1);
	ok(!ts_span_cost(&s, &cost, &se), "63 spans of each kind: no figure");
	ts_span_add(&s, 0, 100, -1);
	ts_span_add(&s, 1, 100, -1);
	have = ts_span_cost(&s, &cost, &se);
	ok(have && cost == 0 && se == 0,
	   "64 of each kind, all alike: a cost of 0 +/- 0");

	/* a clock too coarse to see the spans: no figure, ever */
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 10000; i++)
		ts_span_add(&s, i % 2, i < TS_SPAN_SEEDS ? 0 : 1000, -1);
	ok(!ts_span_cost(&s, &cost, &se) && s.dropped == 10000,
	   "spans that read as zero at first leave no figure");

	/* the gaps between probes */
	ok(ts_probe_gap_mean(0) == TS_PROBE_GAP_MIN &&
	   ts_probe_gap_mean(1e9) == TS_PROBE_GAP_MAX &&
	   ts_probe_gap_mean(TS_PROBE_GAP_CALLS * 100.0) == 100,
	   "the mean gap grows with the calls, from %d to %d",
	   TS_PROBE_GAP_MIN, TS_PROBE_GAP_MAX);
	for (int i = 0; i < 200000; i++)
	{
		int64_t		g = ts_probe_gap(64, uniform());

		sum_gap += (double) g;
		if (g < min_gap)
			min_gap = g;
	}
	ok(fabs(sum_gap / 200000 - 64) < 1.0 && min_gap == 1,
	   "gaps drawn at mean 64 average %.2f, the shortest 1", sum_gap / 200000);
	ok(ts_probe_gap(1, 0.5) == 1 && ts_probe_gap(16, 1.0) == 1,
	   "a gap is at least 1");

	/* the bare calls' lengths, over many nodes whose calls grow dearer */
	{
		double		neighbours = 0,
					mean = 0;
		double		a,
					b;
		int			runs = 200;

		memset(&s, 0, sizeof(s));
		ok(!ts_span_usual(&s, 100), "before the cap is set no call may stand in");
		for (int i = 0; i < TS_SPAN_SEEDS; i++)
			ts_span_add(&s, i % 2, 100, -1);
		ok(ts_span_usual(&s, 100 * TS_SPAN_CAP_FACTOR) &&
		   !ts_span_usual(&s, 100 * TS_SPAN_CAP_FACTOR + 1),
		   "then only calls within the spans' cap");
		ok(ts_bare_imputed(4, 100, 300) == 800 &&
		   ts_bare_imputed(4, -1, 300) == 1200 &&
		   ts_bare_imputed(2, 100, -1) == 200 &&
		   ts_bare_imputed(4, -1, -1) < 0,
		   "bare calls take their probe's neighbours' mean, or the one there is, or none");
		for (int r = 0; r < runs; r++)
		{
			rising_node(20000, &a, &b);
			neighbours += a / runs;
			mean += b / runs;
		}
		ok(fabs(neighbours - 1) < 0.002,
		   "given their neighbours' lengths, the total is %.4f of the truth",
		   neighbours);
		ok(mean - 1 > 0.005,
		   "given the node's mean call it would be %.4f: the bare calls are no random draw",
		   mean);
	}

	/* the gap around middle calls, from timed spans that know it */
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < TS_GAP_MIN - 1; i++)
		ts_span_add(&s, false, 150, 100);
	ok(ts_span_gap(&s) < 0, "%d timed spans: no gap yet", TS_GAP_MIN - 1);
	for (int i = 0; i < 400; i++)
	{
		ts_span_add(&s, false, 150, 90 + 20 * (i % 2));
		ts_span_add(&s, true, 140, -1);
	}
	ts_span_add(&s, false, 1e6, 1e6 - 50);
	ok(fabs(ts_span_gap(&s) - 100) < 0.1,
	   "the mean gap of timed spans within the cap: %.2f", ts_span_gap(&s));

	/* a probe cut short by an empty bare call */
	{
		double		orphans;
		double		ns;
		double		old_err = 0,
					outer_err = 0,
					drain_err = 0;
		int			trials = 2000;

		ns = ts_bare_null_imputed(3, 5000, 1000, 70, 40, &orphans);
		ok(ns == 70 + 2 * 40 && orphans == 0,
		   "the empty call takes the node's empty calls' mean, the others their neighbour");
		ns = ts_bare_null_imputed(3, 5000, 1000, 70, -1, &orphans);
		ok(ns == 70 && orphans == 2,
		   "without a neighbour the others are left to the node's mean");
		ns = ts_bare_null_imputed(1, 5000, 1000, 70, -1, &orphans);
		ok(ns == 70 && orphans == 0, "an empty call alone needs no neighbour");
		ns = ts_bare_null_imputed(3, 5000, 1000, -1, 40, &orphans);
		ok(ns == 2000 && orphans == 0,
		   "without timed empty calls: the span less a gap for each");
		ns = ts_bare_null_imputed(3, 2500, 1000, -1, 40, &orphans);
		ok(ns == 0 && orphans == 0, "never below zero");
		ns = ts_bare_null_imputed(3, 5000, -1, -1, 40, &orphans);
		ok(ns == 0 && orphans == 3, "with no gap known either: all left to the mean");

		/*
		 * A nested loop's outer side: calls of 100 ns, 100 us of inner
		 * loop (+- 1%) between two; its one loop's last call, empty, was
		 * the third bare call of a probe.  And a join whose last call
		 * reads 1 ms more, with 50 ns (+- 20%) of parent between calls.
		 */
		for (int t = 0; t < trials; t++)
		{
			double		outer_gap = 1e5;
			double		outer_span = 0;
			double		drain_span = 0;

			memset(&s, 0, sizeof(s));
			for (int i = 0; i < 200; i++)
			{
				double		g = outer_gap * (0.99 + 0.02 * uniform());

				ts_span_add(&s, i % 2, g + 100, i % 2 ? -1 : g);
			}
			for (int k = 0; k < 3; k++)
				outer_span += outer_gap * (0.99 + 0.02 * uniform()) + 100;
			ns = ts_bare_null_imputed(3, outer_span, ts_span_gap(&s), -1, 100,
									  &orphans);
			outer_err += fabs(ns - 300) / trials;
			old_err += fabs(outer_span - 300) / trials;

			memset(&s, 0, sizeof(s));
			for (int i = 0; i < 200; i++)
			{
				double		g = 50 * (0.8 + 0.4 * uniform());

				ts_span_add(&s, i % 2, g + 100, i % 2 ? -1 : g);
			}
			for (int k = 0; k < 3; k++)
				drain_span += 50 * (0.8 + 0.4 * uniform()) + (k == 2 ? 1e6 : 100);
			ns = ts_bare_null_imputed(3, drain_span, ts_span_gap(&s), -1, 100,
									  &orphans);
			drain_err += fabs(ns - (1e6 + 200)) / (1e6 + 200) / trials;
		}
		ok(outer_err < 0.02 * 1e5,
		   "the outer side's bare calls are off by %.0f ns on average, not the %.0f of the span",
		   outer_err, old_err);
		ok(drain_err < 0.001,
		   "the draining call gets its length to %.4f%%", 100 * drain_err);
	}

	/*
	 * Parallel workers' spans merged into their leader's: processes whose
	 * spans differ in length (a leader whose calls wait on its workers'
	 * tuples, workers that scan) still measure the cost they share, with
	 * the error of all their spans together; and merging adds exactly
	 * what each process counted.
	 */
	{
		TsSpanStats leader,
					worker;
		TsSpanSums	sums;
		uint64_t	n0;
		double		se_alone,
					se_merged;
		int			merged_covered = 0;

		for (int r = 0; r < runs; r++)
		{
			fill(&leader, 2000, 300, 150, 30, 0.002);
			fill(&worker, 4000, 80, 60, 30, 0.002);
			memset(&sums, 0, sizeof(sums));
			ts_span_sums_add(&sums, &worker);
			ts_span_merge(&leader, &sums);
			if (ts_span_cost(&leader, &cost, &se) && fabs(cost - 30) <= 1.96 * se)
				merged_covered++;
		}
		ok(merged_covered >= runs * 90 / 100,
		   "spans of processes of different lengths, merged: the interval covers the cost in %d of %d runs",
		   merged_covered, runs);

		fill(&leader, 2000, 80, 60, 30, 0);
		fill(&worker, 6000, 80, 60, 30, 0);
		ts_span_cost(&leader, &cost, &se_alone);
		n0 = leader.n[0] + leader.n[1] + worker.n[0] + worker.n[1];
		memset(&sums, 0, sizeof(sums));
		ts_span_sums_add(&sums, &worker);
		ts_span_merge(&leader, &sums);
		ts_span_cost(&leader, &cost, &se_merged);
		ok(leader.n[0] + leader.n[1] == n0 && se_merged < se_alone * 0.6,
		   "merged, the spans add up (%llu) and four times the spans halve the error: %.3f then %.3f",
		   (unsigned long long) (leader.n[0] + leader.n[1]), se_alone, se_merged);

		/* a worker with nothing counted changes nothing */
		fill(&worker, 0, 80, 60, 30, 0);
		memset(&sums, 0, sizeof(sums));
		ts_span_sums_add(&sums, &worker);
		ts_span_merge(&leader, &sums);
		ok(leader.n[0] + leader.n[1] == n0 && ts_span_cost(&leader, &cost, &se) &&
		   se == se_merged,
		   "a worker that counted no span leaves the figure as it was");
	}

	return done_testing();
}
