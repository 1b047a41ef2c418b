/*-------------------------------------------------------------------------
 *
 * insitu.h
 *	  The per-call cost of exact node timing, measured in the plan that
 *	  pays it (timing_source.subtract_overhead): the statistics of the
 *	  probes the node wrappers run, free of executor knowledge.
 *
 * A probe is TS_PROBE_RUN + 2 consecutive calls of one node inside one
 * loop.  The first and the last are timed as usual; a reading taken after
 * the first and one taken before the last bound the span, which holds the
 * node's middle calls and the work its parent (and anything else) did
 * around them.  The middle calls are all timed ("timed" span) or, with
 * probability one half, all run without their clock reads ("bare" span).
 * Both kinds of span hold the same work in expectation, so the difference
 * of their means, divided by the middle calls, is what one timed call
 * costs whatever encloses it: the reads, the bookkeeping, and the work of
 * the node and its parent that the reads keep from overlapping with them.
 * No model of the node is involved; docs/internals.md says why that
 * matters, and why several middle calls rather than one.
 *
 * Spans far longer than usual (a preemption, a page read, the parent's
 * rare expensive call) would dominate a mean of a few thousand, so spans
 * above a cap are left out, of both kinds alike: the cap is a multiple of
 * the median of the node's first spans, decided before any span is
 * counted.  A node whose spans outgrow it (a join whose calls grow dearer
 * as its hash table fills) would lose more of its timed spans than of its
 * bare ones, the timed being longer, and measure its cost low; once too
 * many of the spans since the cap was set are left out, the next spans
 * set it again, never lower.  The difference of two means of spans
 * assigned at random has a standard error estimated from their spread.
 *
 * Plain C without PostgreSQL headers, so that test/unit can check it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_INSITU_H
#define TS_INSITU_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* the first spans of a node, whose median sets the cap */
#define TS_SPAN_SEEDS		16
/* spans above this multiple of that median are left out */
#define TS_SPAN_CAP_FACTOR	8.0
/* spans of each kind below which the node has no measured cost */
#define TS_SPAN_MIN			64
/* timed spans below which the gap around a middle call is unknown */
#define TS_GAP_MIN			8
/*
 * The cap is set again once more than 1 in this many spans since it was
 * set (and at least TS_SPAN_SEEDS of them) were left out.  Preemptions
 * and page reads leave out 1-2% of a steady node's spans; a node whose
 * spans grew past its cap loses a share of them, and even a few percent
 * cut from the top of the bulk of the spans moves the cost.
 */
#define TS_SPAN_RESEED_SHARE 16

/*
 * The middle calls of a probe.  A single bare call between timed ones
 * cannot overlap with its neighbours as calls of a clock-less plan do, and
 * measured the cost a quarter low where that mattered most; in a run of
 * four, most bare calls follow a bare one.
 */
#define TS_PROBE_RUN		4
/*
 * The mean gap between probes grows with the calls a node has made, from
 * 1 in TS_PROBE_GAP_MIN (a node of a few thousand calls gets enough
 * probes for a figure) to 1 in TS_PROBE_GAP_MAX (a node of millions pays
 * for few), so that its bare calls, half of each probe's middle ones,
 * stay a small part of its calls.
 */
#define TS_PROBE_GAP_MIN	16
#define TS_PROBE_GAP_MAX	256
#define TS_PROBE_GAP_CALLS	512
/*
 * A probe goes on past its first call only where that call took less than
 * this.  A call this long varies by far more than a timed call costs, so
 * no number of spans a query makes could measure that cost among such
 * calls; and a bare call's length, taken from its neighbours, could be off
 * by as much as a call, which put a join of a few long calls above the
 * Sort that read it.  The comparison is made before a probe draws its
 * kind, so both kinds of span still hold the same calls in expectation.
 */
#define TS_PROBE_CALL_MAX_NS	20000.0

static inline bool
ts_probe_call_short(double first_ns)
{
	return first_ns < TS_PROBE_CALL_MAX_NS;
}

typedef struct TsSpanStats
{
	double		seed[TS_SPAN_SEEDS];
	bool		seed_bare[TS_SPAN_SEEDS];
	double		seed_gap[TS_SPAN_SEEDS];
	int			nseed;
	double		cap;			/* set once the seeds are in; 0 before */
	uint64_t	n[2];			/* [0] timed, [1] bare: spans counted */
	double		sum[2];
	double		sum2[2];
	uint64_t	dropped;		/* spans above the cap */
	uint64_t	since_cap;		/* spans since the cap was last set */
	uint64_t	dropped_since_cap;	/* of those, left out */
	uint64_t	gap_n;			/* timed spans whose gap is known */
	double		gap_sum;
} TsSpanStats;

static inline void
ts_span_count(TsSpanStats *s, bool bare, double ns, double gap)
{
	s->since_cap++;
	if (ns > s->cap)
	{
		s->dropped++;
		/*
		 * The spans have outgrown the cap: the next ones set it again
		 * (not where they read as zero: that clock cannot see them)
		 */
		if (++s->dropped_since_cap >= TS_SPAN_SEEDS && s->cap > 0 &&
			s->dropped_since_cap * TS_SPAN_RESEED_SHARE > s->since_cap)
			s->nseed = 0;
		return;
	}
	s->n[bare]++;
	s->sum[bare] += ns;
	s->sum2[bare] += ns * ns;
	if (!bare && gap >= 0)
	{
		s->gap_n++;
		s->gap_sum += gap;
	}
}

/*
 * Add one span (per middle call), "bare" if its middle calls were not
 * timed.  "gap" is, for a timed span, what of it (per middle call) the
 * middle calls' own timers did not see: the work around them, mostly
 * their parent's; < 0 where unknown.
 */
static inline void
ts_span_add(TsSpanStats *s, bool bare, double ns, double gap)
{
	double		sorted[TS_SPAN_SEEDS];
	double		cap;

	if (s->nseed == TS_SPAN_SEEDS)
	{
		ts_span_count(s, bare, ns, gap);
		return;
	}
	s->seed[s->nseed] = ns;
	s->seed_bare[s->nseed] = bare;
	s->seed_gap[s->nseed] = gap;
	if (++s->nseed < TS_SPAN_SEEDS)
		return;

	/*
	 * The seeds are in: their median sets the cap (never lower than one
	 * set before), then they count too
	 */
	for (int i = 0; i < TS_SPAN_SEEDS; i++)
	{
		int			j = i;

		for (; j > 0 && sorted[j - 1] > s->seed[i]; j--)
			sorted[j] = sorted[j - 1];
		sorted[j] = s->seed[i];
	}
	cap = TS_SPAN_CAP_FACTOR *
		(sorted[TS_SPAN_SEEDS / 2 - 1] + sorted[TS_SPAN_SEEDS / 2]) / 2;
	if (cap < s->cap)
		cap = s->cap;
	/* a node whose spans read as zero (a coarse clock) keeps none */
	s->cap = cap > 0 ? cap : -1;
	s->since_cap = s->dropped_since_cap = 0;
	for (int i = 0; i < TS_SPAN_SEEDS; i++)
		ts_span_count(s, s->seed_bare[i], s->seed[i], s->seed_gap[i]);
}

/*
 * The counted spans of one process, without its seeds: what a parallel
 * worker passes to its leader (worker_sampling.c).  Each process decides
 * its own cap and leaves out its own long spans; its timed and bare
 * spans were assigned at random alike, so spans pooled from several
 * still differ by the cost alone.
 */
typedef struct TsSpanSums
{
	uint64_t	n[2];
	double		sum[2];
	double		sum2[2];
	uint64_t	dropped;
	uint64_t	gap_n;
	double		gap_sum;
} TsSpanSums;

/* sums += what s counted */
static inline void
ts_span_sums_add(TsSpanSums *sums, const TsSpanStats *s)
{
	for (int k = 0; k < 2; k++)
	{
		sums->n[k] += s->n[k];
		sums->sum[k] += s->sum[k];
		sums->sum2[k] += s->sum2[k];
	}
	sums->dropped += s->dropped;
	sums->gap_n += s->gap_n;
	sums->gap_sum += s->gap_sum;
}

/* another process's counted spans of the same node into s */
static inline void
ts_span_merge(TsSpanStats *s, const TsSpanSums *add)
{
	for (int k = 0; k < 2; k++)
	{
		s->n[k] += add->n[k];
		s->sum[k] += add->sum[k];
		s->sum2[k] += add->sum2[k];
	}
	s->dropped += add->dropped;
	s->gap_n += add->gap_n;
	s->gap_sum += add->gap_sum;
}

/*
 * The mean gap around a middle call (see ts_span_add), < 0 while fewer
 * than TS_GAP_MIN timed spans have counted one
 */
static inline double
ts_span_gap(const TsSpanStats *s)
{
	if (s->gap_n < TS_GAP_MIN)
		return -1.0;
	return s->gap_sum / (double) s->gap_n;
}

/*
 * The cost of one timed call (timed spans' mean minus bare spans') and
 * its standard error, in the spans' unit; false while either kind has
 * fewer than TS_SPAN_MIN spans.  The difference may come out negative
 * where the cost is small beside the spans' spread: the caller decides
 * what to make of it.
 */
static inline bool
ts_span_cost(const TsSpanStats *s, double *cost, double *se)
{
	double		var[2];

	if (s->n[0] < TS_SPAN_MIN || s->n[1] < TS_SPAN_MIN)
		return false;
	for (int k = 0; k < 2; k++)
	{
		double		mean = s->sum[k] / (double) s->n[k];

		var[k] = (s->sum2[k] - mean * s->sum[k]) / (double) (s->n[k] - 1);
		if (var[k] < 0)
			var[k] = 0;
	}
	*cost = s->sum[0] / (double) s->n[0] - s->sum[1] / (double) s->n[1];
	*se = sqrt(var[0] / (double) s->n[0] + var[1] / (double) s->n[1]);
	return true;
}

/*
 * A node's own cost stands for it only while its standard error is within
 * this share of the calibrated cost.  A node whose calls are long and
 * uneven (a scan that filters out most rows, a join that probes deep) has
 * spans microseconds wide, whose difference puts a cost of tens of
 * nanoseconds anywhere from zero to thousands; counted for each of the
 * node's calls, such a figure moves its total by more than the whole cost
 * it stands for.  The same bound holds for the plan's pooled figure.
 */
#define TS_SPAN_SE_SHARE	0.25
/*
 * A standard error this small (ns) is precise whatever the calibration: a
 * clock read that costs next to nothing (RDTSC on some hosts) would
 * otherwise ask more of a figure than its spans' noise can give, and an
 * error of a nanosecond is a few percent of the cheapest node's call.
 */
#define TS_SPAN_SE_ENOUGH	1.0
/* a pooled node's weight is at most that of this standard error, in ns */
#define TS_POOL_SE_FLOOR	0.01

/* whether a cost measured with standard error se may stand for cal's */
static inline bool
ts_span_cost_precise(double se, double cal)
{
	return se <= TS_SPAN_SE_SHARE * cal || se <= TS_SPAN_SE_ENOUGH;
}

/*
 * The plan's cost of a timed call, from its nodes' own: each weighted by
 * its precision (1 / se^2), the least-variance mean of estimates of one
 * cost.  Weighted by spans, as first done, one long-span node's wild
 * figure could outweigh every precise one (a TPC-H-shaped query's plan
 * measured 292 ns a call where its precise nodes said 29-45).
 */
typedef struct TsCostPool
{
	double		sum;			/* cost x weight */
	double		weight;
} TsCostPool;

static inline void
ts_cost_pool_add(TsCostPool *p, double cost, double se)
{
	double		floor_se = se > TS_POOL_SE_FLOOR ? se : TS_POOL_SE_FLOOR;
	double		w = 1.0 / (floor_se * floor_se);

	p->sum += cost * w;
	p->weight += w;
}

/* the pooled cost and its standard error; false if nothing was pooled */
static inline bool
ts_cost_pool_get(const TsCostPool *p, double *cost, double *se)
{
	if (!(p->weight > 0))
		return false;
	*cost = p->sum / p->weight;
	*se = 1.0 / sqrt(p->weight);
	return true;
}

/* the mean gap to the next probe of a node that has made "calls" calls */
static inline double
ts_probe_gap_mean(double calls)
{
	double		m = calls / TS_PROBE_GAP_CALLS;

	if (m < TS_PROBE_GAP_MIN)
		return TS_PROBE_GAP_MIN;
	if (m > TS_PROBE_GAP_MAX)
		return TS_PROBE_GAP_MAX;
	return m;
}

/*
 * Calls until the next probe (>= 1): geometric with mean "mean", from u
 * uniform in (0, 1], so that probes fall at no fixed period (a periodic
 * one could meet the plan's own periodic work every time)
 */
static inline int64_t
ts_probe_gap(double mean, double u)
{
	if (mean <= 1)
		return 1;
	return 1 + (int64_t) floor(log(u) / log1p(-1.0 / mean));
}

/*
 * Whether a call of "ns" may stand in for bare calls: not one above the
 * spans' cap (a single call longer than a usual span, such as a join's
 * last call that drains its outer side, would be counted again for every
 * bare call beside it), nor any where the spans read as zero, nor any
 * before the cap is set, when nothing tells a preempted call from a usual
 * one (the node's mean call stands in then: its probes are still evenly
 * spread over its calls).
 */
static inline bool
ts_span_usual(const TsSpanStats *s, double ns)
{
	return s->cap > 0 && ns <= s->cap;
}

/*
 * What the bare calls of one probe are taken to have lasted: each the mean
 * of the probe's timed neighbours, its first and last calls ("first_ns",
 * "last_ns"; < 0 where a neighbour cannot serve: a loop's first call,
 * which is its startup, or a last call that never came because the loop
 * ended).  Returns < 0 when neither can.  Neighbours rather than the
 * node's mean call: probes come more often while a node is young, so
 * where its calls grow dearer or cheaper over its life (a join whose last
 * call drains its outer side) the bare calls are no random draw of its
 * calls, but each lies next to its neighbours, which are drawn exactly as
 * they are.  A neighbour's duration holds its own clock reads' part; the
 * caller counts that part as the bare calls' overhead.
 */
static inline double
ts_bare_imputed(double bare, double first_ns, double last_ns)
{
	if (first_ns >= 0 && last_ns >= 0)
		return bare * (first_ns + last_ns) / 2;
	if (first_ns >= 0)
		return bare * first_ns;
	if (last_ns >= 0)
		return bare * last_ns;
	return -1;
}

/*
 * What the bare calls of a probe cut short by an empty return are taken
 * to have lasted: "pending" of them, the empty one last, which is most
 * likely its loop's end and may be the dearest call of all (a join
 * draining its outer side), so its neighbour cannot stand for it; none
 * comes after it.  "span_ns" is the reading since the probe's first call
 * returned: the bare calls and, before each, the work around it, which is
 * mostly the parent's and may be far longer (a nested loop runs a whole
 * inner loop between two calls of its outer side).  So the empty call
 * takes, in order of preference:
 *
 * - the mean of the node's timed empty calls after the first of their
 *   loops ("null_ns", < 0 if none), the others the first neighbour's
 *   length ("first_ns", < 0 if it cannot serve);
 * - the span less the usual gap around a middle call for each ("gap_ns",
 *   ts_span_gap, < 0 if unknown), never below zero, for all of them;
 * - nothing, all of them counted as "orphans", left to the node's mean.
 *
 * Returns the length given; *orphans the calls given none.
 */
static inline double
ts_bare_null_imputed(double pending, double span_ns, double gap_ns,
					 double null_ns, double first_ns, double *orphans)
{
	*orphans = 0;
	if (pending <= 0)
		return 0;
	if (null_ns >= 0)
	{
		double		others = ts_bare_imputed(pending - 1, first_ns, -1);

		if (pending - 1 <= 0)
			return null_ns;
		if (others >= 0)
			return null_ns + others;
		*orphans = pending - 1;
		return null_ns;
	}
	if (gap_ns >= 0 && span_ns >= 0)
	{
		double		ns = span_ns - pending * gap_ns;

		return ns > 0 ? ns : 0;
	}
	*orphans = pending;
	return 0;
}

#endif							/* TS_INSITU_H */
