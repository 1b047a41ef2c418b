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
 * has no figure; the gaps between probes have the mean they are drawn at,
 * grow with a node's calls within their bounds, and are never below 1.
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

		ts_span_add(s, bare, span(bare, base, noise, cost, outliers));
	}
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

	/* no cost at all: the figure is near zero, either sign */
	fill(&s, 20000, 100, 30, 0, 0);
	have = ts_span_cost(&s, &cost, &se);
	ok(have && fabs(cost) <= 4 * se,
	   "no cost measures as %.2f +/- %.2f", cost, 1.96 * se);

	/* too few spans of one kind: no figure */
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 1000; i++)
		ts_span_add(&s, i % 20 == 0, 100);
	ok(s.n[1] < TS_SPAN_MIN && !ts_span_cost(&s, &cost, &se),
	   "%llu bare spans (under %d): no figure",
	   (unsigned long long) s.n[1], TS_SPAN_MIN);
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 2 * TS_SPAN_MIN - 2; i++)
		ts_span_add(&s, i % 2, 100);
	ok(!ts_span_cost(&s, &cost, &se), "63 spans of each kind: no figure");
	ts_span_add(&s, 0, 100);
	ts_span_add(&s, 1, 100);
	have = ts_span_cost(&s, &cost, &se);
	ok(have && cost == 0 && se == 0,
	   "64 of each kind, all alike: a cost of 0 +/- 0");

	/* a clock too coarse to see the spans: no figure, ever */
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 10000; i++)
		ts_span_add(&s, i % 2, i < TS_SPAN_SEEDS ? 0 : 1000);
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

	return done_testing();
}
