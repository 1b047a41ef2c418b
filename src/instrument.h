/*-------------------------------------------------------------------------
 *
 * instrument.h
 *	  What the executor glue files share: which clock the node wrappers
 *	  read in this build, the inline helpers that read and accumulate it,
 *	  and the per-query modules the wrappers' hooks call.
 *
 * Two products share the wrappers (instrument.c):
 *
 * - 15-18: the extension's own TSC (tsclock), converted to nanoseconds
 *	 with its own calibration, and checked per query against the system
 *	 clock by the watchdog (watchdog.c);
 * - 19 (TS_CORE_CLOCK): core's clock as core had chosen it when the query
 *	 started, its ticks accumulated unconverted as core does, and rebased
 *	 should core's unit change during the query (rebase.c).
 *
 * Everything that differs between the two is in this header or in the
 * product's own file, so that a further product (another major's
 * instrumentation) is another block here and another file, not more
 * conditionals in the wrappers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_INSTRUMENT_H
#define TS_INSTRUMENT_H

#include "timing_source.h"

#ifdef TS_HAVE_EXECUTOR_HOOK
#include "executor/execdesc.h"
#include "executor/instrument.h"
#include "nodes/execnodes.h"
#include "nodes/pg_list.h"

/*
 * Keeps a counter read in its place: the instructions before it complete
 * first, and those after it wait for it (x86-64: LFENCE; arm64: ISB).
 * Around the rare calls sampled timing times (instrument.c says why); a
 * no-op in a build without the counter.
 */
static pg_attribute_always_inline void
ts_clock_fence(void)
{
#if defined(TSCLOCK_X86) || defined(TSCLOCK_ARM64)
	tsclock_order_after();
#endif
}
#endif

/*
 * TS_HAVE_NODE_WRAPPERS: the wrappers are built.  TS_NODE_CLOCK_TSC and
 * TS_NODE_CLOCK_SYSTEM (0 or 1): which clocks they can read, as
 * TS_CLOCK_TSC and TS_CLOCK_SYSTEM.  TS_CLOCK_TRACKS_NODES: the product
 * needs the list of a query's timed nodes.
 */
#if defined(TS_HAVE_EXECUTOR_HOOK) && defined(TS_CORE_CLOCK)

#define TS_HAVE_NODE_WRAPPERS 1
#if TS_CORE_HAVE_TSC
#define TS_NODE_CLOCK_TSC		1
#else
#define TS_NODE_CLOCK_TSC		0
#endif
#define TS_NODE_CLOCK_SYSTEM	1
#define TS_CLOCK_TRACKS_NODES	1

/* core's clock, read as core reads it for per-node timing */
static pg_attribute_always_inline int64
ts_clock_read(TimingClockSource clock)
{
	if (clock == TS_CLOCK_TSC)
		return ts_core_read_tsc();
	return ts_core_read_system();
}

/* add a positive interval of "ticks", times weight: core's ticks as is */
static pg_attribute_always_inline void
ts_clock_accum(TimingClockSource clock, instr_time *counter, int64 ticks,
			   uint64 weight)
{
	counter->ticks += ticks * (int64) weight;
}

/*
 * a positive interval of "ticks" of the clock in nanoseconds, in that
 * clock's unit even after timing_clock_source changed (the variance and
 * the caps of sampled nodes are summed as the query runs)
 */
static inline double
ts_clock_ticks_ns(TimingClockSource clock, int64 ticks)
{
	return (double) ts_core_ticks_to_ns(ticks,
										ts_core_clock_unit(clock == TS_CLOCK_TSC));
}

/*
 * keep a counter at most "ns" nanoseconds (>= 0); returns what it took
 * off, in nanoseconds
 */
static inline double
ts_clock_clamp_ns(TimingClockSource clock, instr_time *counter, double ns)
{
	double		was = ts_clock_ticks_ns(clock, counter->ticks);

	if (was > ns)
	{
		counter->ticks = (int64) ((double) counter->ticks * (ns / was));
		return was - ns;
	}
	return 0.0;
}

/*
 * The clock a query's nodes are bound to, or false when the extension
 * does not time them: core's clock as core uses it now, for the whole
 * query.  A worker has its leader's settings, timing_source.node_wrappers
 * included.
 */
static inline bool
ts_node_clock_choose(TimingClockSource *clock, bool timer)
{
	if (!ts_node_wrappers)
		return false;
	*clock = (TS_NODE_CLOCK_TSC && ts_core_uses_tsc()) ?
		TS_CLOCK_TSC : TS_CLOCK_SYSTEM;
	return true;
}

/* whether the wrappers sample with this clock: either of core's */
static inline bool
ts_node_clock_samples(bool tsc)
{
	return ts_node_wrappers;
}

#elif defined(TS_HAVE_EXECUTOR_HOOK) && defined(TSCLOCK_HAVE_TSC)

#define TS_HAVE_NODE_WRAPPERS 1
#define TS_HAVE_WATCHDOG 1
#define TS_NODE_CLOCK_TSC		1
#define TS_NODE_CLOCK_SYSTEM	1
#define TS_CLOCK_TRACKS_NODES	0

/*
 * The extension's TSC, or CLOCK_MONOTONIC in nanoseconds for the sampled
 * wrappers of a session without it; each wrapper set has one clock, so
 * the test folds away.  The rows-only wrappers read no clock at all.
 */
static pg_attribute_always_inline int64
ts_clock_read(TimingClockSource clock)
{
	if (clock == TS_CLOCK_TSC)
		return (int64) tsclock_read_fast();
	return (int64) tsclock_system_ns();
}

/* a positive interval of "ticks" in nanoseconds */
static pg_attribute_always_inline uint64
ts_clock_ns(TimingClockSource clock, int64 ticks)
{
	if (clock == TS_CLOCK_TSC)
		return tsclock_ticks_to_ns((uint64) ticks);
	return (uint64) ticks;
}

/* add a positive interval of "ticks", times weight, in nanoseconds */
static pg_attribute_always_inline void
ts_clock_accum(TimingClockSource clock, instr_time *counter, int64 ticks,
			   uint64 weight)
{
	ts_instr_time_add_ns(counter, ts_clock_ns(clock, ticks) * weight);
}

/* keep a counter at most "ns" nanoseconds (>= 0); returns what it took off */
pg_attribute_unused() static inline double
ts_clock_clamp_ns(TimingClockSource clock, instr_time *counter, double ns)
{
	double		was = INSTR_TIME_GET_DOUBLE(*counter) * 1e9;

	if (was > ns)
	{
		INSTR_TIME_SET_ZERO(*counter);
		ts_instr_time_add_ns(counter, (uint64) ns);
		return was - ns;
	}
	return 0.0;
}

/* a positive interval of "ticks" in nanoseconds */
static inline double
ts_clock_ticks_ns(TimingClockSource clock, int64 ticks)
{
	return (double) ts_clock_ns(clock, ticks);
}

/*
 * The clock a query's nodes are bound to, or false when the extension
 * does not time them.  Deciding brings the process's view up to date;
 * the decision is then passed on, since workers this query starts must
 * decide as this process does now, also when that is the system clock.
 * Without the TSC the wrappers still time every timed query, with the
 * system clock: core would read the same clock as often, but only the
 * wrappers sample (sample_every > 1) and estimate, and can subtract,
 * their own cost.  An untimed query (TIMING OFF) stays core's there.
 */
static inline bool
ts_node_clock_choose(TimingClockSource *clock, bool timer)
{
	/* after a watchdog trip, re-calibrate when it is time (rarely) */
	ts_recover_tick();
	*clock = ts_session_uses_tsc() ? TS_CLOCK_TSC : TS_CLOCK_SYSTEM;
	ts_export_decision();
	return *clock == TS_CLOCK_TSC || timer;
}

/* the wrappers sample with either clock */
static inline bool
ts_node_clock_samples(bool tsc)
{
	return true;
}

#endif

#ifdef TS_HAVE_EXECUTOR_HOOK

/*
 * A list of queries, innermost first (nesting makes several), each entry
 * living in its query's memory and leaving the list when that memory goes
 * (normally after ExecutorEnd, or on error).  An entry of a module's own
 * type starts with a TsQueryEntry.  (query_list.c)
 */
typedef struct TsQueryEntry
{
	QueryDesc  *queryDesc;
	struct TsQueryList *list;
	struct TsQueryEntry *next;
	MemoryContextCallback cb;
} TsQueryEntry;

typedef struct TsQueryList
{
	TsQueryEntry *head;
} TsQueryList;

/* a zeroed entry of size bytes for queryDesc, added to list */
extern void *ts_query_add(TsQueryList *list, QueryDesc *queryDesc,
						  size_t size);

/* queryDesc's entry in list, or NULL */
extern void *ts_query_find(TsQueryList *list, QueryDesc *queryDesc);

/* take an entry off its list now, before its memory goes */
extern void ts_query_remove(TsQueryEntry *entry);

#endif							/* TS_HAVE_EXECUTOR_HOOK */

#ifdef TS_HAVE_NODE_WRAPPERS

/*
 * The product's per-query work (watchdog.c through 18, rebase.c on 19):
 * ts_clock_query_start() once a query's nodes are bound, with the timed
 * ones (NIL unless TS_CLOCK_TRACKS_NODES), ts_clock_query_end() at its
 * ExecutorEnd, ts_clock_init() when the library is loaded.
 */
extern void ts_clock_query_start(QueryDesc *queryDesc, List *timed);
extern void ts_clock_query_end(QueryDesc *queryDesc);
extern void ts_clock_init(void);

#ifdef TS_HAVE_WATCHDOG
/* a timed query not on the TSC, watched while the TSC is on probation */
extern void ts_clock_probation_start(QueryDesc *queryDesc);
#endif

/* The N of a node bound to sampled timing, else 0 (instrument.c) */
extern uint64 ts_node_sample_every(PlanState *node);

#endif							/* TS_HAVE_NODE_WRAPPERS */

#ifdef TS_HAVE_EXECUTOR_HOOK

/*
 * The estimated instrumentation cost included in an exactly timed node's
 * total, all loops (>= 0, ns), once its query has run; < 0 for a node
 * not exactly timed.  Whether it was removed from the node's times
 * (timing_source.subtract_overhead).  Without the wrappers: never.
 */
extern double ts_node_overhead_ns(PlanState *node);
extern bool ts_node_overhead_subtracted(PlanState *node);

/*
 * What one timed call of the node cost, as probes measured it in its plan
 * (ns, >= 0; insitu.h), where its estimate used that figure; < 0 where it
 * used the calibration's.  *pooled says whether the figure is the plan's
 * other nodes' (the node had too few probes of its own).
 */
extern double ts_node_overhead_call_ns(PlanState *node, bool *pooled);

/* How the wrappers timed a plan state's query, if they did */
typedef struct TsPlanTiming
{
	TimingClockSource clock;
	int			sample_every;	/* > 1: sampled */
	int			sample_budget;	/* timing_source.sample_budget, 0: none */
	bool		subtracted;		/* overhead removed from printed times */
} TsPlanTiming;

extern bool ts_plan_timing(PlanState *node, TsPlanTiming *timing);

/*
 * The N of a node whose buffer/WAL usage is an estimate from its sampled
 * calls (timing_source.sample_buffers), else 0
 */
extern uint64 ts_node_usage_sampled(PlanState *node);

/*
 * EXPLAIN's notes on how a plan was timed, where core has the hook
 * (explain.c); also in builds without the wrappers, whose plans core
 * times with the system clock
 */
#ifdef TS_HAVE_EXPLAIN_NODE_HOOK
extern void ts_explain_init(void);
#else
static inline void
ts_explain_init(void)
{
}
#endif

#endif							/* TS_HAVE_EXECUTOR_HOOK */

#include "nodes/execnodes.h"

/*
 * A sampled node's estimate of its total time over all loops and the
 * uncertainty of that estimate (instrument.c; docs/internals.md derives
 * it), on every build: where nothing samples, no node has one.  margin_ns is the half-width of a 95% interval around total_ns;
 * it means something only when reliable is true, and "why" then is
 * TS_ESTIMATE_OK.  Read once the node's loops have ended (InstrEndLoop).
 */
typedef enum TsEstimateWhy
{
	TS_ESTIMATE_OK,				/* the interval holds */
	TS_ESTIMATE_FEW_CALLS,		/* too few sampled calls for an interval */
	TS_ESTIMATE_WORKERS			/* parallel workers' share has no variance */
} TsEstimateWhy;

typedef struct TsSampleEstimate
{
	uint64		sample_every;	/* N */
	uint64		thinned_to;		/* past N B calls (sample_budget): the last
								 * call's weight; else 0 */
	uint64		sampled_calls;	/* calls timed at a weight above 1 (the
								 * leader's alone where why is
								 * TS_ESTIMATE_WORKERS, else every
								 * process's) */
	uint64		other_calls;	/* calls after the first of each loop, the
								 * ones that could be sampled (the same) */
	double		total_ns;		/* the estimate, all loops, workers' too */
	double		margin_ns;		/* 95% half-width */
	double		capped_ns;		/* what the cap took off (included
								 * in margin_ns) */
	double		check_ns;		/* checked runs: the exact total of the
								 * leader's calls; else < 0 */
	bool		exact;			/* every call timed at weight 1 (the
								 * leader's): margin 0 */
	bool		reliable;
	TsEstimateWhy why;
} TsSampleEstimate;

/*
 * Fewer calls timed at a weight above 1 than this, while some calls were
 * not timed or weighted: no interval.  The interval is a normal
 * approximation from the sampled calls' own spread; with fewer, that
 * spread is itself too uncertain (and zero with none sampled).  A node
 * all of whose calls were timed at weight 1 is exact.
 */
#define TS_MIN_SAMPLED_CALLS	30

/*
 * The smallest margin an estimate that left calls out or weighted
 * states, as a fraction of its total (instrument.c,
 * ts_node_sample_estimate): above what the reads' perturbation of the
 * sampled calls was seen to move a nearly exact node, small beside what
 * separates one run of most nodes from the next.
 */
#define TS_MIN_MARGIN_FRACTION	0.005

/* false (est untouched) unless the node was bound to sampled timing */
extern bool ts_node_sample_estimate(PlanState *node, TsSampleEstimate *est);

/*
 * While on, nodes bound to sampled timing also time every call, so that
 * each estimate comes with the same run's exact total (check_ns): for
 * timing_source_explain_nodes_check(), which turns it on for one run and
 * off however the run ends.  A no-op where nothing samples.
 */
extern void ts_instrument_set_sample_check(bool on);

/*
 * While on, the next query to start binds its plan nodes for a profile
 * (profile.h) instead of timing them: for
 * timing_source_explain_nodes_profile(), which turns it on for one run
 * and off however the run ends.  Then, before that query's ExecutorEnd,
 * a node's ticks (-1: not profiled).  No node is profiled where the
 * wrappers are not built or not used.
 */
extern void ts_instrument_set_profile(bool on);
extern int64 ts_node_profile_hits(PlanState *node);

/*
 * The top node's estimate of the last query whose top node was sampled,
 * read at its ExecutorEnd once its loop had ended (EXPLAIN ends it), and
 * forgetting it before a run (instrument.c, for compare.c)
 */
extern bool ts_last_top_estimate(TsSampleEstimate *est);
extern void ts_forget_top_estimate(void);

/* What an estimate's "why" means, for EXPLAIN and SQL (instrument.c) */
extern const char *ts_estimate_why_text(TsEstimateWhy why);

#endif							/* TS_INSTRUMENT_H */
