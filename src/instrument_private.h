/*-------------------------------------------------------------------------
 *
 * instrument_private.h
 *	  What the node wrappers (instrument.c) and the estimate of their own
 *	  cost (overhead.c) share: the state a bound node carries, the wrapper
 *	  sets and a bound query's settings.  No other file includes it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_INSTRUMENT_PRIVATE_H
#define TS_INSTRUMENT_PRIVATE_H

#include "instrument.h"

#ifdef TS_HAVE_NODE_WRAPPERS

#include "executor/execdesc.h"
#include "executor/instrument.h"
#include "nodes/execnodes.h"

#include "insitu.h"

/* Where a node is in a probe (insitu.h): the call that comes next */
typedef enum TsProbeStage
{
	TS_PROBE_FIRST,				/* the first call: a reading after it */
	TS_PROBE_MIDDLE,			/* the middle calls: timed or bare */
	TS_PROBE_LAST				/* the last call: a reading before it */
} TsProbeStage;

/*
 * Sampled timing (timing_source.sample_every = N > 1).  A sampled node's
 * Instrumentation is replaced at bind time by this larger struct, core's
 * part first, so that core keeps using it as before.  Each node times the
 * first call of every loop (so startup times stay exact) and, in addition,
 * each other call independently with a known probability: 1 for the
 * node's first few, falling to 1/N (the warm-up, ts_warm_weight).  The
 * gap to the next timed call is drawn from the geometric distribution, so
 * no periodic workload can alias with the choice.  A call timed with
 * probability 1/w adds w times its duration (the Horvitz-Thompson
 * estimator: unbiased for the node's total whatever the distribution of
 * call durations); untimed calls read no clock.
 *
 * A sampled call's two reads are fenced: each waits for the instructions
 * before it and holds back those after it.  Unfenced, as exact timing
 * reads (and core does), a read can run ahead of work still pending from
 * before it or before the call's own last loads complete; over every call
 * of a node that skew cancels out between neighbours, but a sampled call
 * is not like the others: it follows a mispredicted branch and the drawing
 * of the next gap, and without fences such calls measured about half as
 * long as the calls around them (docs/internals.md), an estimate biased
 * low by as much.  The fences cost a few dozen cycles on 1 in N
 * calls.
 *
 * The estimator's variance is that of its rare slow calls times N: a
 * sampled call that was preempted (common with more busy processes than
 * CPUs, parallel workers included) counts its preemption N times.  So
 * after each sampled call the node's estimate, all its loops so far, is
 * capped at the wall time since its first call began, which no node can
 * exceed: an estimate may still be high, but never longer than the node
 * has been running.  Not each loop at its own wall time: a loop of fewer
 * calls than N runs for less than one sampled call counts, so such a cap
 * would cut nearly every sampled call of a node whose loops are short (an
 * inner index scan of a few rows a loop), an estimate biased low by most
 * of what its calls after the first take.
 */
typedef struct TsInstrumentation
{
	TsNodeInstr instr;			/* core's, must be first */
	uint64		weight;			/* N: the weight once warmed up */
	int64		countdown;		/* calls until the next candidate */
	uint64		gap_weight;		/* 1 / the probability the gap to that
								 * candidate was drawn at */
	double		inv_log_q;		/* 1 / ln(1 - 1/N), for the gap at N */
	uint64		budget;			/* timing_source.sample_budget B, 0: off */
	int64		thin_after;		/* N B: calls past it weigh ceil(k / B) */
	int64		node_start;		/* clock reading at the node's first call,
								 * 0 before it */
	double		prev_loops_ns;	/* the estimate of the loops before this one */
	/* for the estimate's variance, updated on sampled calls only: */
	uint64		sampled;		/* calls timed at a weight above 1 */
	uint64		warm;			/* calls after the first of their loop
								 * timed at weight 1 (the warm-up) */
	double		var_ns2;		/* sum over sampled calls of w (w - 1) x^2,
								 * ns^2: the variance estimate */
	int64		gap_sum;		/* sum of all gaps drawn: minus countdown,
								 * the number of calls that could be sampled */
	double		capped_ns;		/* what the caps took off the estimate */

	/*
	 * The check of sampled estimates (timing_source_explain_nodes_check):
	 * every call is timed as well, its ticks summed here, so that the
	 * estimate can be set against the same run's exact total
	 */
	bool		checked;
	TimingClockSource check_clock;
	int64		check_ticks;

	/*
	 * Exact timing: calls that returned no tuple (once per completed loop,
	 * so counting them is off the hot path), which with the tuples gives
	 * the calls this process made; the overhead estimate once made.
	 */
	double		nulls;
	int64		null_ticks;		/* the clock's ticks of those after the
								 * first call of their loop */
	double		null_timed;		/* and how many they were */
	double		overhead_ns;	/* < 0: not estimated yet */
	bool		subtracted;		/* removed from total and startup */
	double		run_calls;		/* a data-modifying CTE's calls before
								 * ExecutorFinish, which runs the rest
								 * outside every node; < 0: not one */

	/*
	 * Exact timing with timing_source.subtract_overhead: the probes that
	 * measure what a timed call costs in this plan (insitu.h).  countdown
	 * counts the calls to the next probe; a probe's calls are its stages.
	 * The calls run without reads are counted, and each is given the mean
	 * of its probe's timed first and last calls (ts_bare_imputed), or,
	 * lacking both, the node's mean timed call when the estimate is made.
	 */
	bool		probed;
	TsProbeStage probe_stage;
	bool		probe_bare;		/* the middle calls run without reads */
	int			probe_left;		/* middle calls still to run */
	int64		probe_mark;		/* the reading after the probe's first call */
	double		probe_mark_ns;	/* and the node's counter then */
	double		probe_first_ns; /* its first call's duration, < 0: none */
	double		probe_pending;	/* its bare calls, not yet given a length */
	double		bare_calls;
	double		bare_ns;		/* the length given to bare calls so far */
	double		bare_orphans;	/* bare calls whose probe had no neighbour */
	double		probes;			/* probes begun */
	bool		imputed;		/* bare calls added to the total */
	TsSpanStats spans;
	double		call_ns;		/* the cost the probes measured, < 0: none */
	bool		call_pooled;	/* that of the plan's other nodes */

	/*
	 * In the leader: what the parallel workers that ran the node probed
	 * (worker_sampling.c), their spans merged into spans.  workers_probed
	 * says every one of them reported; the bare calls were already given
	 * their lengths in the worker's own figures.
	 */
	bool		workers_merged; /* looked for once */
	bool		workers_probed;
	double		worker_probes;
	double		worker_bare_calls;

	/*
	 * timing_source.sample_buffers: buffer/WAL usage is looked at on timed
	 * calls only, a sampled call's difference counting N times
	 */
	bool		usage_sampled;

	/*
	 * A profiled run (profile.h): the timer's ticks while one of this
	 * node's calls (or core's start/stop pair) was open
	 */
	uint64		profile_hits;

	/*
	 * The counters as a timed call began: here rather than on the stack,
	 * which would give every call a larger frame and a stack-protector
	 * check.  A scan node's calls never nest.
	 */
	BufferUsage bufusage_start;
	WalUsage	walusage_start;
} TsInstrumentation;

/*
 * How a wrapper keeps buffer/WAL usage: not at all (and no async mode),
 * with plain copies and comparisons, or with AVX2 ("wide").
 *
 * The copy and comparison of ts_usage_changed() are what keeping usage
 * costs per call; compiled for the x86-64 baseline they are 16-byte moves.
 * The wide wrappers are the same code compiled for AVX2, with the 32-byte
 * snapshots of usage_snap.h, which take half the instructions; they are
 * chosen per node (ts_node_usage) where the CPU and the kernel support it
 * (ts_instrument_init).  docs/benchmark.md has the measured costs.
 */
typedef enum TsUsage
{
	TS_USAGE_NONE,
	TS_USAGE_FULL,
	TS_USAGE_WIDE,
	TS_USAGE_SAMPLED			/* on timed calls only (instrument.c) */
} TsUsage;

/* The wrappers of one clock, and the first-call functions that pick them */
typedef struct TsWrapperSet
{
	TimingClockSource clock;	/* the clock they read */
	ExecProcNodeMtd first;		/* every call timed */
	ExecProcNodeMtd timer;		/* its variants */
	ExecProcNodeMtd full;
	ExecProcNodeMtd wide;
	ExecProcNodeMtd first_sampled;	/* timing_source.sample_every > 1 */
	ExecProcNodeMtd sampled;
	ExecProcNodeMtd sampled_full;
	ExecProcNodeMtd sampled_wide;
	ExecProcNodeMtd first_sampled_usage;	/* and sample_buffers */
	ExecProcNodeMtd sampled_usage;
	ExecProcNodeMtd first_check;	/* sampled, checked */
	ExecProcNodeMtd check;
	ExecProcNodeMtd first_probed;	/* every call timed, with probes */
	ExecProcNodeMtd probed;
	ExecProcNodeMtd probed_full;
	ExecProcNodeMtd probed_wide;
} TsWrapperSet;

/* the wrapper sets built: one per clock the wrappers can read */
#define TS_WRAPPER_SETS		(TS_NODE_CLOCK_TSC + TS_NODE_CLOCK_SYSTEM)

/* the wrappers of one usage variant that the overhead estimate runs */
typedef struct TsVariantWrappers
{
	ExecProcNodeMtd timer;		/* every call timed */
	ExecProcNodeMtd probed;		/* the same, with probes */
	ExecProcNodeMtd rows;		/* no clock: what TIMING OFF runs */
} TsVariantWrappers;

/* A bound query's settings, for its overhead estimate and EXPLAIN */
typedef struct TsPlanEntry
{
	TsQueryEntry entry;			/* must be first */
	const TsWrapperSet *set;
	int			sample_every;
	int			sample_budget;
	bool		subtract;
	bool		estimated;		/* the estimate has been made */
	double		call_ns;		/* the plan's measured cost of a timed call
								 * (its nodes' own, weighted by their
								 * precision); < 0: none measured */
	double		call_se;		/* its standard error */
	List	   *moved;			/* TsMovedCost: initPlans' costs on their way
								 * to the node that runs them */
	struct TsPlanLinks *links;	/* where its initPlans run */
	List	   *seen;			/* the subplans the estimate has met */
	struct dsm_segment *workers;	/* the parallel workers' sampling
									 * figures (worker_sampling.c), or NULL */
} TsPlanEntry;

/*
 * A sampled node's figures behind its estimate's interval, one process's
 * or summed over several: what a parallel worker passes to its leader
 * (worker_sampling.c) and ts_node_sample_estimate() adds to the leader's.
 */
typedef struct TsSampling
{
	uint64		sampled;
	uint64		warm;
	uint64		other_calls;
	double		var_ns2;
	double		capped_ns;
	double		check_ns;		/* checked runs: the calls' exact total;
								 * < 0: not every process's is known */
} TsSampling;

/* one process's figures of a sampled node */
static inline void
ts_node_sampling(const TsInstrumentation *ti, TsSampling *s)
{
	s->sampled = ti->sampled;
	s->warm = ti->warm;
	s->other_calls = (uint64) Max(ti->gap_sum - ti->countdown, 0);
	s->var_ns2 = ti->var_ns2;
	s->capped_ns = ti->capped_ns;
	s->check_ns = ti->checked ?
		ts_clock_ticks_ns(ti->check_clock, ti->check_ticks) : -1.0;
}

/* sum += add: calls of different processes are independent samples */
static inline void
ts_sampling_add(TsSampling *sum, const TsSampling *add)
{
	sum->sampled += add->sampled;
	sum->warm += add->warm;
	sum->other_calls += add->other_calls;
	sum->var_ns2 += add->var_ns2;
	sum->capped_ns += add->capped_ns;
	/* checked only if every process timed every call */
	sum->check_ns = (sum->check_ns >= 0 && add->check_ns >= 0) ?
		sum->check_ns + add->check_ns : -1.0;
}

extern struct dsm_segment *ts_worker_sampling_prepare(QueryDesc *queryDesc,
													  int eflags,
													  int sample_every,
													  bool check,
													  bool probe);
extern bool ts_worker_sampling_checked(void);
extern void ts_worker_sampling_report(QueryDesc *queryDesc);
extern bool ts_worker_sampling_collect(PlanState *node, TsSampling *sum);
extern bool ts_worker_probes_wanted(QueryDesc *queryDesc);
extern bool ts_worker_probes_collect(PlanState *node, TsInstrumentation *ti);

/* The calls a node has made so far, all loops: the tuples and empty returns */
static inline double
ts_node_calls_so_far(TsInstrumentation *ti)
{
	return ti->instr.ntuples + ti->instr.tuplecount + ti->nulls;
}

/* instrument.c */
extern uint64 ts_pending_calls;
extern int	ts_wrapper_set_index(const TsWrapperSet *set);
extern void ts_variant_wrappers(const TsWrapperSet *set, TsUsage usage,
								TsVariantWrappers *w);
extern TsUsage ts_node_usage(TsNodeInstr *instr);
extern bool ts_multi_exec_node(PlanState *node);
extern bool ts_is_exact(PlanState *node, const TsWrapperSet *set);
extern bool ts_node_probed(PlanState *node);
extern TsPlanEntry *ts_plan_of(PlanState *node);
extern double ts_rng_uniform(void);
extern void ts_probe_settle(TsInstrumentation *ti, double last_ns);

/* overhead.c */
extern void ts_probe_impute(TsInstrumentation *ti, double timed);
extern void ts_overhead_mark_run(QueryDesc *queryDesc, TsPlanEntry *plan);
extern void ts_overhead_finish(QueryDesc *queryDesc, TsPlanEntry *plan);

#endif							/* TS_HAVE_NODE_WRAPPERS */

#endif							/* TS_INSTRUMENT_PRIVATE_H */
