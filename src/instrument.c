/*-------------------------------------------------------------------------
 *
 * instrument.c
 *	  Executor glue of timing_source: per-node timing with the TSC for
 *	  EXPLAIN ANALYZE, auto_explain and anything else that asks the
 *	  executor for INSTRUMENT_TIMER.
 *
 * In PostgreSQL 15-18 every instrumented plan node is entered through
 * core's static ExecProcNodeInstr(), which calls InstrStartNode() and
 * InstrStopNode(); both read the system clock (clock_gettime).  This file
 * replaces that entry path, node by node, with its own:
 *
 * - An ExecutorStart hook (chained) runs after the plan state tree
 *	 exists.  If the query wants per-node timing and the session's
 *	 effective timing_clock_source is the TSC, it walks the whole tree
 *	 (children, initPlans, subPlans, Append/MergeAppend/BitmapAnd/BitmapOr
 *	 members, SubqueryScan and CustomScan children, plus every subplan
 *	 tree the executor state knows of) and points each timed node's
 *	 ExecProcNode at ts_exec_proc_node_first().  The source is thereby
 *	 bound once per query: changing the setting while the query runs
 *	 cannot mix two clocks inside one node's interval.
 *
 * - ts_exec_proc_node_first() does what core's first-call wrapper does
 *	 (stack depth check) and then switches the node to one of the
 *	 instrumented wrappers, so every later call costs exactly one
 *	 function.
 *
 * - The instrumented wrappers read the TSC inline on entry and exit,
 *	 convert the difference to nanoseconds with the precomputed
 *	 multiply-shift and accumulate what InstrStartNode/InstrStopNode
 *	 would: counter, tuplecount, firsttuple (first call of each cycle, and
 *	 the first tuple of async nodes), and buffer/WAL usage deltas when
 *	 requested.  They never touch instr->starttime, which stays zero, so
 *	 core's own start/stop calls on the same node (see below) and
 *	 InstrEndLoop's sanity checks keep working.
 *
 * Because the result lands in the same nanosecond instr_time counter core
 * uses, InstrEndLoop, InstrAggNode (parallel workers), EXPLAIN in every
 * format and auto_explain need no change.
 *
 * Places where core keeps timing a node with the system clock, correctly
 * and without double counting, because core then calls InstrStartNode/
 * InstrStopNode itself and our wrapper is not on that path:
 *
 * - nodes run through MultiExecProcNode (Hash, BitmapIndexScan,
 *	 BitmapAnd, BitmapOr) and async requests to async-capable nodes;
 * - nodes that call ExecSetExecProcNode() during execution (Parallel Hash
 *	 Join when its shared state is set up): that resets ExecProcNode to
 *	 core's first-call wrapper, which installs ExecProcNodeInstr for the
 *	 rest of the query;
 * - plan state trees built after ExecutorStart (EvalPlanQual).
 *
 * Parallel workers run ExecutorStart too, so the hook treats their trees
 * the same way, using the worker's copy of the leader's settings.
 *
 * PostgreSQL 19 times nodes with its own clock, the TSC where its
 * timing_clock_source resolves to it, storing ticks that it converts to
 * nanoseconds only when EXPLAIN prints.  There the wrappers
 * (timing_source.node_wrappers, on by default) are the same, but read the
 * clock core had chosen when the query started, as core reads it, and add
 * core's ticks unconverted.  Which clock a wrapper reads and how it adds
 * an interval is in instrument.h; what each clock needs per query beyond
 * the wrappers is in watchdog.c (the extension's TSC) and rebase.c
 * (core's clock).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "insitu.h"
#include "instrument.h"
#include "profile.h"
#include "track.h"
#include "usage_snap.h"

#ifdef TS_HAVE_NODE_WRAPPERS

#include <math.h>
#ifdef __linux__
#include <sched.h>
#endif
#include <unistd.h>

#include "access/parallel.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "nodes/nodeFuncs.h"

static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static ExecutorEnd_hook_type prev_ExecutorEnd = NULL;
static ExecutorFinish_hook_type prev_ExecutorFinish = NULL;

/*
 * Plan node calls timed with the TSC by this process since it last added
 * them to the shared count (at ExecutorEnd): one increment per call here,
 * one atomic add per query there.
 */
static uint64 ts_pending_calls = 0;

/* Core's static ExecProcNodeFirst, learned in ts_instrument_init() */
static ExecProcNodeMtd ts_core_first = NULL;

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

static uint64 ts_rng_state = 0;
static int	ts_rng_pid = 0;

/* xorshift64*: fast, good enough to choose calls, seeded per process */
static inline uint64
ts_rng_next(void)
{
	uint64		x = ts_rng_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	ts_rng_state = x;
	return x * UINT64CONST(2685821657736338717);
}

static void
ts_rng_seed(void)
{
	if (ts_rng_pid == MyProcPid && ts_rng_state != 0)
		return;
	/* any clock will do for a seed */
	ts_rng_state = (uint64) ts_clock_read(TS_CLOCK_TSC) ^
		((uint64) MyProcPid << 32) ^ UINT64CONST(0x9E3779B97F4A7C15);
	if (ts_rng_state == 0)
		ts_rng_state = 1;
	ts_rng_pid = MyProcPid;
}

/* uniform in (0, 1] */
static inline double
ts_rng_uniform(void)
{
	return ((double) (ts_rng_next() >> 11) + 1.0) *
		(1.0 / 9007199254740992.0);
}

/*
 * The weight of the k-th call (k >= 1) of a node after the first of its
 * loop: the warm-up.  A node's first TS_WARMUP_CALLS such calls are timed
 * exactly, later ones with probability 1 / ceil(k / TS_WARMUP_CALLS) until
 * that reaches 1 / N.  A node of a few hundred calls (a join returning a
 * few rows a loop, an aggregate's groups) is then timed well enough for an
 * interval, where 1 in N alone would time a handful of its calls and miss
 * most of its time; a node of millions of calls pays for some
 * TS_WARMUP_CALLS * (1 + ln N) timed calls instead of TS_WARMUP_CALLS,
 * which nothing measures.  The probabilities are known for every call, so
 * the estimate stays Horvitz-Thompson: unbiased, with its variance
 * estimated as before, each call at its own weight.
 */
static inline uint64
ts_warm_weight(TsInstrumentation *ti, int64 k)
{
	uint64		w = (uint64) ((k + TS_WARMUP_CALLS - 1) / TS_WARMUP_CALLS);

	return Min(Max(w, 1), ti->weight);
}

/* Calls until the next candidate: geometric with p = 1/w, at least 1 */
static int64
ts_sample_gap(TsInstrumentation *ti, uint64 w)
{
	double		inv_log_q;

	if (w <= 1)
		return 1;
	inv_log_q = (w == ti->weight) ? ti->inv_log_q : 1.0 / log1p(-1.0 / (double) w);
	return 1 + (int64) floor(log(ts_rng_uniform()) * inv_log_q);
}

/*
 * A call whose countdown ended: the weight it is timed at, or 0 if it is
 * not timed.  Out of line: it runs on the warm-up's calls and 1 in N
 * after.
 *
 * The probability falls during the warm-up, so the gap to a candidate is
 * drawn at the highest probability any later call has (the next call's),
 * and the candidate is then kept with its own probability over that one
 * (thinning): each call is then timed independently with its own
 * probability, whatever the gaps.  Once warmed up the two are the same and
 * every candidate is timed.
 */
static pg_noinline uint64
ts_sample_next(TsInstrumentation *ti)
{
	int64		k = ti->gap_sum;	/* this call's number */
	uint64		w;
	bool		take = true;

	/*
	 * Warmed up: a call's weight grows with its number up to N, so once
	 * the gap was drawn at N this call's weight and every later one's are
	 * N, and the warm-up's divisions can be skipped.  This needs gap_weight
	 * to start below N, as the bind's ts_warm_weight(1) does for N > 1.
	 */
	if (likely(ti->gap_weight == ti->weight))
	{
		ti->countdown = ts_sample_gap(ti, ti->weight);
		ti->gap_sum += ti->countdown;
		return ti->weight;
	}
	w = ts_warm_weight(ti, k);
	if (w != ti->gap_weight)
		take = ts_rng_uniform() * (double) w <= (double) ti->gap_weight;
	ti->gap_weight = ts_warm_weight(ti, k + 1);
	ti->countdown = ts_sample_gap(ti, ti->gap_weight);
	ti->gap_sum += ti->countdown;
	return take ? w : 0;
}

/*
 * What the variance of a node's estimate needs from a call timed at weight
 * w (1 during the warm-up, N after it): out of line, since it runs on few
 * calls and the conversion and floating point would only crowd the
 * wrappers' fast path.
 */
static pg_noinline void
ts_sampled_call(TsInstrumentation *ti, TimingClockSource clock, int64 ticks,
				int64 end, uint64 weight)
{
	double		ns = ticks > 0 ? ts_clock_ticks_ns(clock, ticks) : 0.0;
	double		bound;

	if (weight > 1)
	{
		ti->sampled++;
		ti->var_ns2 += (double) weight * (double) (weight - 1) * ns * ns;
	}
	else
		ti->warm++;

	/* the cap (see TsInstrumentation) */
	bound = (end > ti->node_start ? ts_clock_ticks_ns(clock, end - ti->node_start) : 0.0) -
		ti->prev_loops_ns;
	ti->capped_ns += ts_clock_clamp_ns(clock, &ti->instr.counter, Max(bound, 0.0));
}

/*
 * The first call of a loop, timed at weight 1: the node's start, or the
 * end of its previous loop (core's InstrEndLoop has moved that loop's
 * estimate into the total).  Out of line: once a loop.
 */
static pg_noinline void
ts_sampled_loop(TsInstrumentation *ti, int64 start)
{
	if (ti->node_start == 0)
		ti->node_start = start;
	ti->prev_loops_ns = ts_instr_total_ns(&ti->instr);
}

/* The calls a node has made so far, all loops: the tuples and empty returns */
static inline double
ts_node_calls_so_far(TsInstrumentation *ti)
{
	return ti->instr.ntuples + ti->instr.tuplecount + ti->nulls;
}

/*
 * How a wrapper times: not at all (rows only), every call, sampled, or
 * sampled with every call timed as well (the check of the estimates: what
 * sampling adds up is exactly what it does unchecked, so the two totals
 * differ by the sampling alone)
 */
typedef enum TsTiming
{
	TS_TIME_NONE,
	TS_TIME_EXACT,
	TS_TIME_SAMPLED,
	TS_TIME_CHECK
} TsTiming;

/* set around a checked run (ts_instrument_set_sample_check) */
static bool ts_sample_check = false;

/* set by ts_instrument_set_profile, taken by the next ExecutorStart */
static bool ts_profile_next = false;

/*
 * The nodes the last profiled run profiles, in its memory: read before
 * its ExecutorEnd, forgotten by the next ts_instrument_set_profile
 */
static List *ts_profiled_list = NIL;

/*
 * Buffer usage: core copies the whole BufferUsage struct on entry and adds
 * the field-by-field difference on exit, for every call.  The counters
 * change on a small fraction of calls (about once per page for a scan), so
 * the exit first checks whether anything changed at all, in a few wide
 * comparisons, and only then adds the difference: exactly core's figures.
 */
static pg_attribute_always_inline bool
ts_usage_changed(const void *now, const void *start, size_t size)
{
	const uint64 *a = (const uint64 *) now;
	const uint64 *b = (const uint64 *) start;
	uint64		diff = 0;

	StaticAssertStmt(sizeof(BufferUsage) % sizeof(uint64) == 0 &&
					 sizeof(WalUsage) % sizeof(uint64) == 0,
					 "usage structs are whole 64-bit words");
	for (size_t i = 0; i < size / sizeof(uint64); i++)
		diff |= a[i] ^ b[i];
	return diff != 0;
}

/*
 * How a wrapper keeps buffer/WAL usage: not at all (and no async mode),
 * with plain copies and comparisons, or with AVX2 ("wide").
 *
 * The copy and comparison above are what keeping usage costs per call;
 * compiled for the x86-64 baseline they are 16-byte moves.  The wide
 * wrappers are the same code compiled for AVX2, with the 32-byte snapshots
 * of usage_snap.h, which take half the instructions; they are chosen per
 * node (ts_node_usage) where the CPU and the kernel support it
 * (ts_instrument_init).  docs/benchmark.md has the measured costs.
 */
typedef enum TsUsage
{
	TS_USAGE_NONE,
	TS_USAGE_FULL,
	TS_USAGE_WIDE,
	TS_USAGE_SAMPLED			/* on timed calls only (see below) */
} TsUsage;

/*
 * timing_source.sample_buffers: a sampled scan node keeps usage only on
 * the calls it times, the first of each loop and the warm-up's at weight
 * 1 and the sampled ones at their weights, as it does their times (the
 * Horvitz-Thompson estimator again: unbiased for the node's total,
 * whatever the calls' differences).  Unsampled calls then cost what lean
 * counting costs.  The difference is added "weight" times, by doubling,
 * with core's own BufferUsageAccumDiff: right for every field and every
 * major's layout (instr_time included), on the few calls whose counters
 * changed.
 */
static pg_noinline void
ts_usage_add_scaled(BufferUsage *bufacc, const BufferUsage *bufstart,
					WalUsage *walacc, const WalUsage *walstart, uint64 weight)
{
	if (bufacc != NULL)
	{
		BufferUsage zero;
		BufferUsage d;
		BufferUsage t;

		memset(&zero, 0, sizeof(zero));
		memset(&d, 0, sizeof(d));
		BufferUsageAccumDiff(&d, &pgBufferUsage, bufstart);
		for (uint64 w = weight;;)
		{
			if (w & 1)
				BufferUsageAccumDiff(bufacc, &d, &zero);
			if ((w >>= 1) == 0)
				break;
			t = d;
			BufferUsageAccumDiff(&d, &t, &zero);
		}
	}
	if (walacc != NULL)
	{
		WalUsage	zero;
		WalUsage	d;
		WalUsage	t;

		memset(&zero, 0, sizeof(zero));
		memset(&d, 0, sizeof(d));
		WalUsageAccumDiff(&d, &pgWalUsage, walstart);
		for (uint64 w = weight;;)
		{
			if (w & 1)
				WalUsageAccumDiff(walacc, &d, &zero);
			if ((w >>= 1) == 0)
				break;
			t = d;
			WalUsageAccumDiff(&d, &t, &zero);
		}
	}
}

#ifdef TS_HAVE_WIDE_USAGE
/* whether the wide wrappers are used; decided once, in ts_instrument_init */
static bool ts_usage_wide = false;

typedef union TsBufSnap
{
	__m256i		y[TS_SNAP_WORDS(sizeof(BufferUsage))];
	BufferUsage u;
} TsBufSnap;
typedef union TsWalSnap
{
	__m256i		y[TS_SNAP_WORDS(sizeof(WalUsage))];
	WalUsage	u;
} TsWalSnap;

/*
 * The wide wrappers exist where AVX2 can be compiled in; elsewhere their
 * names stand for NULL and nothing chooses them.
 */
#define TS_WIDE_WRAPPER(name, timing, clock) \
	TS_WRAPPER(name, timing, clock, TS_USAGE_WIDE)
#define TS_WIDE_SAMPLED_WRAPPER(name, clock) \
	TS_SAMPLED_WRAPPER(name, clock, TS_USAGE_WIDE)
#define TS_WIDE_PROBED_WRAPPER(name, clock, timer, rows) \
	TS_PROBED_WRAPPER(name, clock, timer, rows)
#define TS_WIDE(name)			name
#define TS_USE_WIDE				ts_usage_wide
#else
#define TS_WIDE_WRAPPER(name, timing, clock)
#define TS_WIDE_SAMPLED_WRAPPER(name, clock)
#define TS_WIDE_PROBED_WRAPPER(name, clock, timer, rows)
#define TS_WIDE(name)			NULL
#define TS_USE_WIDE				false
#endif

/*
 * Whether a sampled node's call is one its wrapper need not time: not the
 * first of a loop, nor (where the variant handles async mode) an async
 * node's before its first tuple, nor the one its countdown ends at.  The
 * body's own decision (below) in the same order, without the decrement.
 */
static pg_attribute_always_inline bool
ts_sampled_untimed(TsNodeInstr *instr, TsUsage usage)
{
	return instr->running &&
		((TsInstrumentation *) instr)->countdown > 1 &&
		!(usage == TS_USAGE_FULL && instr->async_mode && instr->tuplecount < 1.0);
}

/*
 * The body of every wrapper.  "timing", "clock" and "usage" are
 * compile-time constants in each caller, so each variant contains only its
 * own tests: TS_USAGE_FULL adds buffer/WAL usage and async mode,
 * TS_USAGE_WIDE buffer/WAL usage alone, with AVX2.
 */
static pg_attribute_always_inline TupleTableSlot *
ts_exec_proc_node_body(PlanState *node, TsTiming timing,
					   TimingClockSource clock, TsUsage usage)
{
	TsNodeInstr *instr = node->instrument;
	Instrumentation *flags = TS_INSTR_FLAGS(instr);
	TupleTableSlot *result;
	bool		async = (usage == TS_USAGE_FULL);
	BufferUsage bufusage_start;
	WalUsage	walusage_start;
#ifdef TS_HAVE_WIDE_USAGE
	TsBufSnap	bufsnap;
	TsWalSnap	walsnap;
#endif
	int64		start = 0;
	int64		ticks = 0;
	bool		first;
	bool		timed;
	bool		drawn = false;
	uint64		weight = 1;

	if (usage == TS_USAGE_FULL)
	{
		if (flags->need_bufusage)
			bufusage_start = pgBufferUsage;
		if (flags->need_walusage)
			walusage_start = pgWalUsage;
	}
#ifdef TS_HAVE_WIDE_USAGE
	else if (usage == TS_USAGE_WIDE)
	{
		if (flags->need_bufusage)
			ts_snap_take(bufsnap.y, &pgBufferUsage, sizeof(BufferUsage));
		if (flags->need_walusage)
			ts_snap_take(walsnap.y, &pgWalUsage, sizeof(WalUsage));
	}
#endif

	if (timing == TS_TIME_EXACT)
		timed = true;
	else if (timing == TS_TIME_SAMPLED || timing == TS_TIME_CHECK)
	{
		TsInstrumentation *ti = (TsInstrumentation *) instr;

		/*
		 * The first call of a loop is always timed, at weight 1 (and so
		 * are an async node's calls before its first tuple): startup times
		 * stay exact.  Other calls may be timed when their countdown ends.
		 */
		if (unlikely(!instr->running) ||
			(async && instr->async_mode && instr->tuplecount < 1.0))
			timed = true;
		else if (likely(--ti->countdown > 0))
			timed = false;
		else
		{
			weight = ts_sample_next(ti);
			timed = (weight > 0);
			drawn = true;
		}
	}
	else
		timed = false;

	if (usage == TS_USAGE_SAMPLED && timed)
	{
		TsInstrumentation *ti = (TsInstrumentation *) instr;

		if (flags->need_bufusage)
			ti->bufusage_start = pgBufferUsage;
		if (flags->need_walusage)
			ti->walusage_start = pgWalUsage;
	}

	/*
	 * A sampled call's reads are fenced (see TsInstrumentation); a checked
	 * node reads, fenced, on every call, timed or not, so that the calls
	 * it adds up are measured as the sampled ones are.
	 */
	if (timing == TS_TIME_CHECK || (timing == TS_TIME_SAMPLED && timed))
	{
		ts_clock_fence();
		start = ts_clock_read(clock);
		ts_clock_fence();
	}
	else if (timed)
		start = ts_clock_read(clock);
	result = node->ExecProcNodeReal(node);
	if (timing == TS_TIME_CHECK || (timing == TS_TIME_SAMPLED && timed))
		ts_clock_fence();
	if (timed || timing == TS_TIME_CHECK)
	{
		int64		end = ts_clock_read(clock);

		ticks = end - start;

		/*
		 * The TSC is invariant and synchronized across CPUs whenever the
		 * session may use it, and the system clock is monotonic, so a
		 * negative difference cannot really happen; should it, count
		 * nothing rather than an absurd interval.
		 */
		if (timing == TS_TIME_CHECK && likely(ticks > 0))
			((TsInstrumentation *) instr)->check_ticks += ticks;
		if (timed && likely(ticks > 0))
			ts_clock_accum(clock, &instr->counter, ticks, weight);
		if (timed && (timing == TS_TIME_SAMPLED || timing == TS_TIME_CHECK))
		{
			TsInstrumentation *ti = (TsInstrumentation *) instr;

			if (unlikely(!instr->running))
				ts_sampled_loop(ti, start);
			else if (drawn)
				ts_sampled_call(ti, clock, ticks, end, weight);
		}
		if (clock == TS_CLOCK_TSC)
			ts_pending_calls++;
	}

	if (usage == TS_USAGE_SAMPLED && timed)
	{
		TsInstrumentation *ti = (TsInstrumentation *) instr;
		bool		buf = flags->need_bufusage &&
			ts_usage_changed(&pgBufferUsage, &ti->bufusage_start, sizeof(BufferUsage));
		bool		wal = flags->need_walusage &&
			ts_usage_changed(&pgWalUsage, &ti->walusage_start, sizeof(WalUsage));

		if (buf || wal)
			ts_usage_add_scaled(buf ? &flags->bufusage : NULL, &ti->bufusage_start,
								wal ? &flags->walusage : NULL, &ti->walusage_start,
								weight);
	}
	else if (usage == TS_USAGE_FULL)
	{
		if (flags->need_bufusage &&
			ts_usage_changed(&pgBufferUsage, &bufusage_start, sizeof(BufferUsage)))
			BufferUsageAccumDiff(&flags->bufusage, &pgBufferUsage,
								 &bufusage_start);
		if (flags->need_walusage &&
			ts_usage_changed(&pgWalUsage, &walusage_start, sizeof(WalUsage)))
			WalUsageAccumDiff(&flags->walusage, &pgWalUsage,
							  &walusage_start);
	}
#ifdef TS_HAVE_WIDE_USAGE
	else if (usage == TS_USAGE_WIDE)
	{
		if (flags->need_bufusage &&
			unlikely(ts_snap_changed(bufsnap.y, &pgBufferUsage, sizeof(BufferUsage))))
			BufferUsageAccumDiff(&flags->bufusage, &pgBufferUsage,
								 &bufsnap.u);
		if (flags->need_walusage &&
			unlikely(ts_snap_changed(walsnap.y, &pgWalUsage, sizeof(WalUsage))))
			WalUsageAccumDiff(&flags->walusage, &pgWalUsage, &walsnap.u);
	}
#endif

	/*
	 * First call of this cycle: remember the startup time.  An async node
	 * may run several times before its first tuple; core then moves
	 * firsttuple forward until a tuple has been counted.  Without the timer
	 * counter stays zero, and so does firsttuple, as in core.
	 */
	first = !instr->running;
	if (unlikely(first))
	{
		instr->running = true;
		TS_INSTR_SET_FIRSTTUPLE(instr);
	}
	else if (async && instr->async_mode && instr->tuplecount < 1.0)
		TS_INSTR_SET_FIRSTTUPLE(instr);

	if (!TupIsNull(result))
		instr->tuplecount += 1.0;
	else if (timing == TS_TIME_EXACT)
	{
		TsInstrumentation *ti = (TsInstrumentation *) instr;

		/*
		 * An empty return after a loop's first call is what a probe's
		 * bare call that ends the loop is likeliest like (ts_probe_call)
		 */
		ti->nulls += 1.0;
		if (!first && likely(ticks > 0))
		{
			ti->null_ticks += ticks;
			ti->null_timed += 1.0;
		}
	}

	return result;
}

/*
 * The variant a bound node runs: with buffer/WAL usage where it needs
 * them, wide where the CPU allows; async nodes keep the full variant (it
 * alone handles async mode).  Fixed when the node is initialized, so the
 * bind walker can count what the first call will choose.
 */
static inline TsUsage
ts_node_usage(TsNodeInstr *instr)
{
	Instrumentation *flags = TS_INSTR_FLAGS(instr);

	if (instr->async_mode)
		return TS_USAGE_FULL;
	if (flags->need_bufusage || flags->need_walusage)
		return TS_USE_WIDE ? TS_USAGE_WIDE : TS_USAGE_FULL;
	return TS_USAGE_NONE;
}

/*
 * First call of a bound node: core's ExecProcNodeFirst checks the stack
 * depth once per node (ExecProcNode calls for a node are made at roughly
 * the same depth each time), then removes itself.  So do these, switching
 * the node to its variant.
 */
static pg_attribute_always_inline TupleTableSlot *
ts_first_call(PlanState *node, ExecProcNodeMtd lean, ExecProcNodeMtd full,
			  ExecProcNodeMtd wide)
{
	check_stack_depth();

	switch (ts_node_usage(node->instrument))
	{
		case TS_USAGE_NONE:
			node->ExecProcNode = lean;
			break;
		case TS_USAGE_FULL:
			node->ExecProcNode = full;
			break;
		case TS_USAGE_WIDE:
			node->ExecProcNode = wide;
			break;
		case TS_USAGE_SAMPLED:
			/* ts_node_usage() never chooses it; the bind walker does */
			pg_unreachable();
	}

	return node->ExecProcNode(node);
}

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

#define TS_WRAPPER(name, timing, clock, usage) \
static TS_WRAPPER_TARGET_##usage TupleTableSlot * \
name(PlanState *node) \
{ \
	return ts_exec_proc_node_body(node, timing, clock, usage); \
}

/*
 * A sampled wrapper: most calls are neither a loop's first nor the end of
 * a countdown, and take only row counting (and usage, where kept every
 * call) and the countdown's decrement.  The other calls, the timed ones,
 * are left to a second function, out of line: inlined, their reads, fences
 * and bookkeeping would make every call save the registers they need.
 * That function takes the decision again, decrementing the countdown
 * itself where the body does (to zero, for the end of a countdown; not at
 * all for a loop's first call or an async node's before its first tuple).
 */
#define TS_SAMPLED_WRAPPER(name, clock, usage) \
static pg_noinline TS_WRAPPER_TARGET_##usage TupleTableSlot * \
name##_due(PlanState *node) \
{ \
	return ts_exec_proc_node_body(node, TS_TIME_SAMPLED, clock, usage); \
} \
static TS_WRAPPER_TARGET_##usage TupleTableSlot * \
name(PlanState *node) \
{ \
	if (likely(ts_sampled_untimed(node->instrument, usage))) \
	{ \
		((TsInstrumentation *) node->instrument)->countdown--; \
		return ts_exec_proc_node_body(node, TS_TIME_NONE, clock, usage); \
	} \
	return name##_due(node); \
}
/*
 * An exactly timed node with probes (insitu.h): every call runs the very
 * wrapper exact timing runs ("timer"), entered through a countdown; the
 * calls of a probe go to ts_probe_call, out of line, which runs the
 * middle ones through that wrapper or, bare, through the clock-less one of
 * the same variant ("rows", what TIMING OFF runs).  So the two kinds of
 * span differ by what the exact wrapper costs beyond the clock-less one,
 * in the same compiled code every other call runs: the reads' cost
 * depends on the code around them (a copy of the body inlined elsewhere
 * measured a quarter more, with the plan's cost unchanged).
 */
#define TS_PROBED_WRAPPER(name, clock, timer, rows) \
static TupleTableSlot * \
name(PlanState *node) \
{ \
	if (likely(--((TsInstrumentation *) node->instrument)->countdown > 0)) \
		return timer(node); \
	return ts_probe_call(node, clock, timer, rows); \
}
#define TS_WRAPPER_TARGET_TS_USAGE_NONE
#define TS_WRAPPER_TARGET_TS_USAGE_FULL
#define TS_WRAPPER_TARGET_TS_USAGE_WIDE TS_WIDE_TARGET
#define TS_WRAPPER_TARGET_TS_USAGE_SAMPLED

/*
 * The checked variant keeps usage and async mode as the full one does, for
 * every node: it is for measuring the estimates, not for speed.
 */

#define TS_WRAPPER_SET(set, clock) \
TS_WRAPPER(set##_timer, TS_TIME_EXACT, clock, TS_USAGE_NONE) \
TS_WRAPPER(set##_full, TS_TIME_EXACT, clock, TS_USAGE_FULL) \
TS_WIDE_WRAPPER(set##_wide, TS_TIME_EXACT, clock) \
TS_SAMPLED_WRAPPER(set##_sampled, clock, TS_USAGE_NONE) \
TS_SAMPLED_WRAPPER(set##_sampled_full, clock, TS_USAGE_FULL) \
TS_WIDE_SAMPLED_WRAPPER(set##_sampled_wide, clock) \
TS_SAMPLED_WRAPPER(set##_sampled_usage, clock, TS_USAGE_SAMPLED) \
TS_WRAPPER(set##_check, TS_TIME_CHECK, clock, TS_USAGE_FULL) \
TS_PROBED_WRAPPER(set##_probed, clock, set##_timer, ts_exec_proc_node_rows) \
TS_PROBED_WRAPPER(set##_probed_full, clock, set##_full, ts_exec_proc_node_rows_full) \
TS_WIDE_PROBED_WRAPPER(set##_probed_wide, clock, set##_wide, ts_exec_proc_node_rows_wide) \
static TupleTableSlot * \
set##_first(PlanState *node) \
{ \
	return ts_first_call(node, set##_timer, set##_full, TS_WIDE(set##_wide)); \
} \
static TupleTableSlot * \
set##_first_sampled(PlanState *node) \
{ \
	return ts_first_call(node, set##_sampled, set##_sampled_full, \
						 TS_WIDE(set##_sampled_wide)); \
} \
static TupleTableSlot * \
set##_first_sampled_usage(PlanState *node) \
{ \
	check_stack_depth(); \
	node->ExecProcNode = set##_sampled_usage; \
	return node->ExecProcNode(node); \
} \
static TupleTableSlot * \
set##_first_check(PlanState *node) \
{ \
	check_stack_depth(); \
	node->ExecProcNode = set##_check; \
	return node->ExecProcNode(node); \
} \
static TupleTableSlot * \
set##_first_probed(PlanState *node) \
{ \
	return ts_first_call(node, set##_probed, set##_probed_full, \
						 TS_WIDE(set##_probed_wide)); \
} \
static const TsWrapperSet set = { \
	clock, set##_first, set##_timer, set##_full, TS_WIDE(set##_wide), \
	set##_first_sampled, set##_sampled, set##_sampled_full, \
	TS_WIDE(set##_sampled_wide), \
	set##_first_sampled_usage, set##_sampled_usage, \
	set##_first_check, set##_check, \
	set##_first_probed, set##_probed, set##_probed_full, \
	TS_WIDE(set##_probed_wide) \
};

/* no timer (TIMING OFF): rows, loops and usage only, no clock */
TS_WRAPPER(ts_exec_proc_node_rows, TS_TIME_NONE, TS_CLOCK_SYSTEM, TS_USAGE_NONE)
TS_WRAPPER(ts_exec_proc_node_rows_full, TS_TIME_NONE, TS_CLOCK_SYSTEM, TS_USAGE_FULL)
TS_WIDE_WRAPPER(ts_exec_proc_node_rows_wide, TS_TIME_NONE, TS_CLOCK_SYSTEM)

/*
 * A profiled run: rows and loops as TIMING OFF counts them, no clock, the
 * call on the profile's stack meanwhile.  The full variant, for async
 * nodes and whatever usage the run asks for.
 */
static TupleTableSlot *
ts_exec_proc_node_profiled(PlanState *node)
{
	TupleTableSlot *result;

	ts_profile_push(&((TsInstrumentation *) node->instrument)->profile_hits);
	result = ts_exec_proc_node_body(node, TS_TIME_NONE, TS_CLOCK_SYSTEM, TS_USAGE_FULL);
	ts_profile_pop();
	return result;
}

static TupleTableSlot *
ts_exec_proc_node_first_profiled(PlanState *node)
{
	check_stack_depth();
	node->ExecProcNode = ts_exec_proc_node_profiled;
	return node->ExecProcNode(node);
}

/*
 * The duration of the probe's first call, where a neighbour may stand in
 * for its bare calls; < 0 where none may
 */
static inline double
ts_probe_first_ns(const TsInstrumentation *ti)
{
	return ts_span_usual(&ti->spans, ti->probe_first_ns) ?
		ti->probe_first_ns : -1.0;
}

/* the probe's bare calls were given "ns" in all, "orphans" of them none */
static inline void
ts_probe_close(TsInstrumentation *ti, double ns, double orphans)
{
	ti->bare_ns += ns;
	ti->bare_orphans += orphans;
	ti->bare_calls += ti->probe_pending;
	ti->probe_pending = 0;
}

/* give the bare calls of the probe under way their length (insitu.h) */
static void
ts_probe_settle(TsInstrumentation *ti, double last_ns)
{
	double		ns;

	if (ti->probe_pending <= 0)
		return;
	if (!ts_span_usual(&ti->spans, last_ns))
		last_ns = -1.0;
	ns = ts_bare_imputed(ti->probe_pending, ts_probe_first_ns(ti), last_ns);
	if (ns >= 0)
		ts_probe_close(ti, ns, 0);
	else
		ts_probe_close(ti, 0, ti->probe_pending);
}

/*
 * The probe's bare calls when the last of them returned no tuple, at
 * reading "now" (ts_bare_null_imputed)
 */
static void
ts_probe_settle_null(TsInstrumentation *ti, TimingClockSource clock,
					 int64 now)
{
	double		span_ns = now > ti->probe_mark ?
		ts_clock_ticks_ns(clock, now - ti->probe_mark) : -1.0;
	double		null_ns = ti->null_timed > 0 ?
		ts_clock_ticks_ns(clock, ti->null_ticks) / ti->null_timed : -1.0;
	double		orphans;
	double		ns;

	ns = ts_bare_null_imputed(ti->probe_pending, span_ns,
							  ts_span_gap(&ti->spans), null_ns,
							  ts_probe_first_ns(ti), &orphans);
	ts_probe_close(ti, ns, orphans);
}

/* a call through the exact wrapper "timer", and what its timer counted */
static inline TupleTableSlot *
ts_probe_timed(PlanState *node, ExecProcNodeMtd timer, double *ns)
{
	TsInstrumentation *ti = (TsInstrumentation *) node->instrument;
	double		before = TS_NODE_COUNTER_NS(&ti->instr);
	TupleTableSlot *slot = timer(node);

	*ns = TS_NODE_COUNTER_NS(&ti->instr) - before;
	return slot;
}

/* the probe is over: draw the calls to the next one */
static inline void
ts_probe_end(TsInstrumentation *ti)
{
	ti->probe_stage = TS_PROBE_FIRST;
	ti->countdown = ts_probe_gap(ts_probe_gap_mean(ts_node_calls_so_far(ti)),
								 ts_rng_uniform());
}

/*
 * A call of a probe (insitu.h), or of a loop's first call while one was
 * under way (a probe never spans a rescan, and a bare call is never a
 * loop's first).  The readings that bound the span are taken here, after
 * the first call's wrapper returns and before the last call's is entered,
 * so that both kinds of span hold the same code but for the middle calls'
 * wrapper; the middle calls' bookkeeping is the same for both kinds too.
 * A first or middle call returning no tuple ends the probe, of either
 * kind, without a span.  The first and last calls' durations, what the
 * timer adds to the loop's counter, stand for the bare calls between
 * them.
 */
static pg_noinline TupleTableSlot *
ts_probe_call(PlanState *node, TimingClockSource clock,
			  ExecProcNodeMtd timer, ExecProcNodeMtd rows)
{
	TsInstrumentation *ti = (TsInstrumentation *) node->instrument;
	TupleTableSlot *slot;
	int64		now;
	double		ns;

	if (!ti->instr.running)
	{
		ts_probe_settle(ti, -1.0);
		ti->probe_stage = TS_PROBE_FIRST;
	}

	switch (ti->probe_stage)
	{
		case TS_PROBE_FIRST:
			{
				/* a loop's first call is its startup: no bare call's like */
				bool		loop_first = !ti->instr.running;

				ti->probes += 1.0;
				slot = ts_probe_timed(node, timer, &ns);
				if (unlikely(TupIsNull(slot)))
				{
					/*
					 * The loop's end: none of the probe's calls can follow.
					 * Waiting for the next loop instead would start a probe
					 * on every call of a node whose loops are one call long
					 * (an inner index scan that finds nothing).
					 */
					ts_probe_end(ti);
					return slot;
				}
				ti->probe_first_ns = loop_first ? -1.0 : ns;
				ti->probe_mark_ns = TS_NODE_COUNTER_NS(&ti->instr);
				ti->probe_mark = ts_clock_read(clock);
				ti->probe_stage = TS_PROBE_MIDDLE;
				ti->probe_bare = (ts_rng_next() >> 63) != 0;
				ti->probe_left = TS_PROBE_RUN;
				ti->countdown = 1;
				return slot;
			}
		case TS_PROBE_MIDDLE:
			if (--ti->probe_left == 0)
				ti->probe_stage = TS_PROBE_LAST;
			ti->countdown = 1;
			slot = (ti->probe_bare ? rows : timer) (node);
			ti->probe_pending += (double) ti->probe_bare;
			if (unlikely(TupIsNull(slot)))
			{
				/* most likely the loop's end: no last call will come */
				if (ti->probe_bare)
				{
					/* counted as the exact wrapper counts its own */
					ti->nulls += 1.0;
					ts_probe_settle_null(ti, clock, ts_clock_read(clock));
				}
				ts_probe_end(ti);
			}
			return slot;
		case TS_PROBE_LAST:
			now = ts_clock_read(clock);
			if (now > ti->probe_mark)
			{
				double		span_ns = ts_clock_ticks_ns(clock, now - ti->probe_mark);
				double		gap = -1.0;

				if (!ti->probe_bare)
					gap = Max(span_ns - (TS_NODE_COUNTER_NS(&ti->instr) -
										 ti->probe_mark_ns), 0.0) / TS_PROBE_RUN;
				ts_span_add(&ti->spans, ti->probe_bare, span_ns / TS_PROBE_RUN,
							gap);
			}
			ts_probe_end(ti);
			slot = ts_probe_timed(node, timer, &ns);
			ts_probe_settle(ti, ns);
			return slot;
	}
	pg_unreachable();
	return NULL;
}

/* one set per clock the wrappers can read in this build (instrument.h) */
#if TS_NODE_CLOCK_TSC
TS_WRAPPER_SET(ts_wrappers_tsc, TS_CLOCK_TSC)
#endif
#if TS_NODE_CLOCK_SYSTEM
TS_WRAPPER_SET(ts_wrappers_system, TS_CLOCK_SYSTEM)
#endif

static const TsWrapperSet *const ts_wrapper_sets[] = {
#if TS_NODE_CLOCK_TSC
	&ts_wrappers_tsc,
#endif
#if TS_NODE_CLOCK_SYSTEM
	&ts_wrappers_system,
#endif
};

/* The wrappers that read "clock" (ts_node_clock_choose picks only those) */
static const TsWrapperSet *
ts_wrappers_for(TimingClockSource clock)
{
	for (int i = 0; i < lengthof(ts_wrapper_sets); i++)
	{
		if (ts_wrapper_sets[i]->clock == clock)
			return ts_wrapper_sets[i];
	}
	elog(ERROR, "timing_source: no node wrappers for clock %d", (int) clock);
	return NULL;
}

static TupleTableSlot *
ts_exec_proc_node_first_rows(PlanState *node)
{
	return ts_first_call(node, ts_exec_proc_node_rows, ts_exec_proc_node_rows_full,
						 TS_WIDE(ts_exec_proc_node_rows_wide));
}

/* Whether a node was bound with sampled timing */
static bool
ts_is_sampled(PlanState *node, const TsWrapperSet *set)
{
	return node->ExecProcNode == set->first_sampled ||
		node->ExecProcNode == set->sampled ||
		node->ExecProcNode == set->sampled_full ||
		(set->sampled_wide != NULL && node->ExecProcNode == set->sampled_wide) ||
		node->ExecProcNode == set->first_sampled_usage ||
		node->ExecProcNode == set->sampled_usage ||
		node->ExecProcNode == set->first_check ||
		node->ExecProcNode == set->check;
}

uint64
ts_node_usage_sampled(PlanState *node)
{
	if (ts_node_sample_every(node) > 1 &&
		((TsInstrumentation *) node->instrument)->usage_sampled)
		return ((TsInstrumentation *) node->instrument)->weight;
	return 0;
}

uint64
ts_node_sample_every(PlanState *node)
{
	for (int i = 0; i < lengthof(ts_wrapper_sets); i++)
	{
		if (ts_is_sampled(node, ts_wrapper_sets[i]))
			return ((TsInstrumentation *) node->instrument)->weight;
	}
	return 0;
}

/*
 * The variance of a sampled node's estimate.  Within a loop, the first
 * call is timed exactly; each later call i, of duration x_i, is timed
 * independently with probability p_i = 1/w_i (the warm-up's, then 1/N;
 * the gaps are geometric and thinned, so the choices are independent
 * Bernoulli trials) and then counts w_i x_i.  The estimate of those calls'
 * sum is a Horvitz-Thompson estimator under Poisson sampling, with
 * variance sum_i (1 - p_i) / p_i x_i^2 over all those calls, estimated
 * without bias by the sum over the timed calls of (1 - p_i) / p_i^2 x_i^2
 * = w_i (w_i - 1) x_i^2, which is 0 for the warm-up's exact calls.  Calls
 * of all loops are independent too, so one sum serves the whole node.
 *
 * A cap (see TsInstrumentation) lowers a node's estimate to a bound: the
 * result is no longer that estimator, but the uncapped estimate is the
 * capped one plus what the caps took off, D.  Whenever the interval of
 * half-width m around the uncapped estimate holds, the truth is within
 * m + D of the capped one, so that is the margin stated: wider, never
 * wrong.
 *
 * A node that parallel workers ran has no interval: core ships only its
 * own part of the instrumentation to the leader, so the workers' sampled
 * calls are in the total but their spread is not known here.
 */
bool
ts_node_sample_estimate(PlanState *node, TsSampleEstimate *est)
{
	TsInstrumentation *ti;
	bool		exact;

	if (node->instrument == NULL || ts_node_sample_every(node) <= 1)
		return false;
	ti = (TsInstrumentation *) node->instrument;

	est->sample_every = ti->weight;
	est->sampled_calls = ti->sampled;
	est->other_calls = (uint64) Max(ti->gap_sum - ti->countdown, 0);
	est->total_ns = ts_instr_total_ns(node->instrument);
	est->capped_ns = ti->capped_ns;
	est->margin_ns = 1.96 * sqrt(ti->var_ns2) + ti->capped_ns;
	est->check_ns = ti->checked ?
		ts_clock_ticks_ns(ti->check_clock, ti->check_ticks) : -1.0;
	/* every call timed at weight 1: the first of each loop or the warm-up */
	exact = (est->other_calls <= ti->warm);

	/*
	 * V^ is the sampling's variance alone; it does not see that timing a
	 * call perturbs it (a sampled call runs after the draw of the next
	 * gap, with fenced reads).  That is tens of nanoseconds a sampled
	 * call, lost in the interval of a node whose calls are all alike, but
	 * not in that of a node almost all of whose time is in calls timed
	 * exactly (a sort's first call, then its cheap output calls), where
	 * V^ would state a precision no read has.  So where calls were left
	 * out or weighted, no margin is stated below a floor.
	 */
	if (!exact)
		est->margin_ns = Max(est->margin_ns,
							 TS_MIN_MARGIN_FRACTION * est->total_ns);

	if (ts_instr_workers_ran(node))
		est->why = TS_ESTIMATE_WORKERS;
	else if (!exact && ti->sampled < TS_MIN_SAMPLED_CALLS)
		est->why = TS_ESTIMATE_FEW_CALLS;
	else
		est->why = TS_ESTIMATE_OK;
	est->reliable = (est->why == TS_ESTIMATE_OK);
	return true;
}

const char *
ts_estimate_why_text(TsEstimateWhy why)
{
	switch (why)
	{
		case TS_ESTIMATE_OK:
			break;
		case TS_ESTIMATE_FEW_CALLS:
			return "too few calls for an interval";
		case TS_ESTIMATE_WORKERS:
			return "no interval for parallel workers' share";
	}
	return NULL;
}

/*
 * Nodes core runs through MultiExecProcNode, with its own calls to
 * InstrStartNode/InstrStopNode: their ExecProcNode is never called, so
 * there is nothing to bind (and they must not be counted as bound).
 */
static inline bool
ts_multi_exec_node(PlanState *node)
{
	switch (nodeTag(node))
	{
		case T_HashState:
		case T_BitmapIndexScanState:
		case T_BitmapAndState:
		case T_BitmapOrState:
			return true;
		default:
			return false;
	}
}

/*
 * Whether a node may estimate its buffer/WAL usage from its timed calls
 * (timing_source.sample_buffers): a scan of a relation, not async, whose
 * calls run no other plan node, so that what a call adds is its own
 * reading of pages, spread over its calls rather than heaped on a few.
 * Any node above keeps exact figures: its calls contain its children's
 * and whatever lumps they bring (a Gather's workers' usage, a hash
 * join's batches).  The query has no subplans at all: an initPlan's
 * whole run lands in whichever call first needs its value, a scan's
 * filter's included.  A Bitmap Heap Scan's index scans run inside its
 * first call, which is always looked at.
 */
static bool
ts_usage_samplable(PlanState *node)
{
	Instrumentation *flags = TS_INSTR_FLAGS(node->instrument);

	if (node->instrument->async_mode ||
		!(flags->need_bufusage || flags->need_walusage) ||
		node->state->es_subplanstates != NIL ||
		node->initPlan != NIL || node->subPlan != NIL)
		return false;
	switch (nodeTag(node))
	{
		case T_SeqScanState:
		case T_SampleScanState:
		case T_IndexScanState:
		case T_IndexOnlyScanState:
		case T_BitmapHeapScanState:
		case T_TidScanState:
		case T_TidRangeScanState:
			return true;
		default:
			return false;
	}
}

typedef struct TsBindContext
{
	int			ntimed;			/* nodes bound to a timed wrapper */
	int			nrows;			/* nodes bound to a clock-less wrapper */
	int			nusage[TS_USAGE_WIDE + 1];	/* bound nodes by variant */
	int			sample_every;	/* > 1: sampled timing */
	bool		sample_usage;	/* timing_source.sample_buffers applies */
	bool		probe;			/* exact nodes measure their cost (insitu.h) */
	bool		profile;		/* a profiled run (profile.h) */
	int			nsampled_usage; /* nodes bound to estimate their usage */
	const TsWrapperSet *set;	/* the clock's wrappers */
	MemoryContext cxt;			/* the query's memory */
	List	   *timed;			/* PlanStates bound to a timed wrapper, if
								 * TS_CLOCK_TRACKS_NODES */
} TsBindContext;

/*
 * Give a node the larger struct, core's part copied in, in the query's
 * memory; its overhead not estimated yet
 */
static TsInstrumentation *
ts_bind_instr(TsBindContext *bc, PlanState *node)
{
	TsInstrumentation *ti = MemoryContextAllocZero(bc->cxt, sizeof(TsInstrumentation));

	memcpy(&ti->instr, node->instrument, sizeof(TsNodeInstr));
	ti->overhead_ns = -1.0;
	node->instrument = &ti->instr;
	return ti;
}

/*
 * planstate_tree_walker callback: bind one node and recurse.
 *
 * Only nodes still on core's first-call wrapper are touched: that skips
 * nodes already bound (a subplan reachable twice) and leaves alone any
 * node whose entry point another extension has replaced.
 */
static bool
ts_bind_node(PlanState *node, void *context)
{
	TsBindContext *bc = (TsBindContext *) context;

	if (node == NULL)
		return false;

	check_stack_depth();

	if (bc->profile && node->instrument != NULL &&
		node->ExecProcNode == ts_core_first)
	{
		TsInstrumentation *ti = ts_bind_instr(bc, node);
		bool		profiled;

		ti->weight = 1;
		if (!ts_multi_exec_node(node))
		{
			node->ExecProcNode = ts_exec_proc_node_first_profiled;
			profiled = true;
		}
		else
		{
			/* core's own start/stop pair, timed, shows the node open */
			profiled = TS_INSTR_FLAGS(node->instrument)->need_timer &&
				ts_profile_watch(node->instrument, &ti->profile_hits);
		}
		if (profiled)
			ts_profiled_list = lappend(ts_profiled_list, node);
	}
	else if (node->instrument != NULL &&
			 node->ExecProcNode == ts_core_first &&
			 !ts_multi_exec_node(node))
	{
		if (!TS_INSTR_FLAGS(node->instrument)->need_timer)
		{
			node->ExecProcNode = ts_exec_proc_node_first_rows;
			bc->nrows++;
		}
		else
		{
			TsInstrumentation *ti = ts_bind_instr(bc, node);

			if (bc->sample_every > 1)
			{
				ti->weight = (uint64) bc->sample_every;
				ti->inv_log_q = 1.0 / log1p(-1.0 / (double) bc->sample_every);
				ti->gap_weight = ts_warm_weight(ti, 1);
				/* ts_sample_next's shortcut relies on it */
				Assert(ti->gap_weight < ti->weight);
				ti->countdown = ts_sample_gap(ti, ti->gap_weight);
				ti->node_start = 0;
				ti->prev_loops_ns = 0.0;
				ti->sampled = 0;
				ti->warm = 0;
				ti->var_ns2 = 0.0;
				ti->gap_sum = ti->countdown;
				ti->capped_ns = 0.0;
				if (ts_sample_check)
				{
					ti->checked = true;
					ti->check_clock = bc->set->clock;
					ti->check_ticks = 0;
					node->ExecProcNode = bc->set->first_check;
				}
				else if (bc->sample_usage && ts_usage_samplable(node))
				{
					ti->usage_sampled = true;
					bc->nsampled_usage++;
					node->ExecProcNode = bc->set->first_sampled_usage;
				}
				else
					node->ExecProcNode = bc->set->first_sampled;
			}
			else if (bc->probe && !node->instrument->async_mode)
			{
				ti->weight = 1;
				ti->probed = true;
				ti->call_ns = -1.0;
				ti->probe_stage = TS_PROBE_FIRST;
				ti->countdown = ts_probe_gap(TS_PROBE_GAP_MIN, ts_rng_uniform());
				node->ExecProcNode = bc->set->first_probed;
			}
			else
			{
				ti->weight = 1;
				node->ExecProcNode = bc->set->first;
			}
			bc->ntimed++;
			if (TS_CLOCK_TRACKS_NODES)
				bc->timed = lappend(bc->timed, node);
		}
		if (node->ExecProcNode == bc->set->first_check)
			bc->nusage[TS_USAGE_FULL]++;
		else if (node->ExecProcNode != bc->set->first_sampled_usage)
			bc->nusage[ts_node_usage(node->instrument)]++;
	}
	else if (node->instrument != NULL && ts_multi_exec_node(node) &&
			 bc->sample_every <= 1 &&
			 TS_INSTR_FLAGS(node->instrument)->need_timer)
	{
		/*
		 * Core times it, exactly: give it the larger struct too, so that
		 * its overhead estimate has a place (weight 0 marks core's timing).
		 */
		(void) ts_bind_instr(bc, node);
	}

	return planstate_tree_walker(node, ts_bind_node, context);
}

/*
 * The instrumentation's own cost (timing_source.subtract_overhead).
 *
 * An exactly timed node's total includes, per call, the part of its own
 * clock reads that falls between them, and per call of each timed node
 * beneath it everything that node's timing costs (a read pair and the
 * wrapper's bookkeeping).  Both per-call costs are measured once per
 * process and variant, the first time an estimate is needed, by running
 * the very wrapper a node runs around an empty node function (see
 * docs/internals.md for why not per query and not in the postmaster);
 * the calls come from the node's own counts.  That calibration is a model
 * of a node; where the cost is to be subtracted, each exactly timed node
 * also measures it among its own calls (insitu.h, ts_probe_apply), and a
 * node with enough probes uses its own figure.
 */
typedef struct TsCallCost
{
	bool		measured;
	double		inside_ns;		/* per call, inside the node's own interval */
	double		outside_ns;		/* per call, seen only by what encloses it */
} TsCallCost;

#define TS_CAL_CALLS	1000
#define TS_CAL_BATCHES	15

/* [wrapper set][usage variant]; core's start/stop pair [with usage] */
static TsCallCost ts_wrapper_cost[lengthof(ts_wrapper_sets)][TS_USAGE_WIDE + 1];
static TsCallCost ts_core_cost[2];

static TupleTableSlot ts_cal_slot;	/* zeroed: not empty, a "tuple" */

/*
 * The calibration node does per call what the cheapest real nodes do per
 * tuple: a few loads and stores that depend on each other, with branches.
 * Around an empty function the wrapper's two reads would run back to back
 * and cost what their throughput allows; around work, the CPU overlaps
 * part of them with it, as it does in a real plan.
 */
#define TS_CAL_WORK		32
static uint64 ts_cal_buf[4096];
static int	ts_cal_pos = 0;
static uint64 ts_cal_state = 1;

static pg_noinline TupleTableSlot *
ts_cal_node(PlanState *node)
{
	uint64		x = ts_cal_state;
	int			p = ts_cal_pos;

	for (int i = 0; i < TS_CAL_WORK; i++)
	{
		uint64		v = ts_cal_buf[p];

		if (v & 1)
			x += v;
		else
			x ^= v >> 3;
		ts_cal_buf[p] = v + x;
		p = (p + 7) & (lengthof(ts_cal_buf) - 1);
	}
	ts_cal_pos = p;
	ts_cal_state = x;
	return &ts_cal_slot;
}

/*
 * A plan state for the calibration node, timed as a node with (or
 * without) buffer usage is; *ti is its instrumentation.  Both are the
 * caller's to free.
 */
static PlanState *
ts_cal_plan_state(bool usage, TsInstrumentation **ti)
{
	PlanState  *ps = palloc0(sizeof(PlanState));

	*ti = palloc0(sizeof(TsInstrumentation));
	TS_INSTR_FLAGS(&(*ti)->instr)->need_timer = true;
	TS_INSTR_FLAGS(&(*ti)->instr)->need_bufusage = usage;
	(*ti)->weight = 1;
	ps->instrument = &(*ti)->instr;
	ps->ExecProcNodeReal = ts_cal_node;
	return ps;
}

static double
ts_median(double *v, int n)
{
	/* insertion sort: a handful of values */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--)
		{
			double		t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[n / 2];
}

/*
 * Time TS_CAL_CALLS calls of the calibration node, called directly,
 * through "rows" (the same wrapper without a clock: what TIMING OFF runs)
 * and through "wrapper" (NULL: core's InstrStartNode/InstrStopNode around
 * it), in several batches, and keep the medians of each batch's
 * differences: a batch that was preempted does not move them.  The cost
 * is timing's: what the timed wrapper costs beyond the clock-less one.
 * Between two calls the calibration node's work runs once more, as a
 * parent's would: one call's last read does not meet the next call's
 * first.
 */
static void
ts_cal_measure(ExecProcNodeMtd wrapper, ExecProcNodeMtd rows, bool usage,
			   TsCallCost *cost)
{
	TsInstrumentation *ti;
	PlanState  *ps = ts_cal_plan_state(usage, &ti);
	double		direct[TS_CAL_BATCHES];
	double		wrapped[TS_CAL_BATCHES];
	double		inside[TS_CAL_BATCHES];
	double		base[TS_CAL_BATCHES];
	uint64		saved_calls = ts_pending_calls;
	double		d;

	ps->ExecProcNode = wrapper;

	for (int b = 0; b < TS_CAL_BATCHES; b++)
	{
		uint64		t0,
					t1;

		t0 = tsclock_system_ns();
		for (int i = 0; i < TS_CAL_CALLS; i++)
			(void) ps->ExecProcNodeReal(ps);
		t1 = tsclock_system_ns();
		direct[b] = (double) (t1 - t0) / TS_CAL_CALLS;

		/* the reference: each call followed by its parent's work */
		t0 = tsclock_system_ns();
		for (int i = 0; i < TS_CAL_CALLS; i++)
		{
			(void) (rows != NULL ? rows(ps) : ps->ExecProcNodeReal(ps));
			(void) ts_cal_node(NULL);
		}
		t1 = tsclock_system_ns();
		base[b] = (double) (t1 - t0) / TS_CAL_CALLS;

		INSTR_TIME_SET_ZERO(ti->instr.counter);
		ti->instr.running = false;
		t0 = tsclock_system_ns();
		if (wrapper != NULL)
		{
			for (int i = 0; i < TS_CAL_CALLS; i++)
			{
				(void) ps->ExecProcNode(ps);
				(void) ts_cal_node(NULL);
			}
		}
		else
		{
			for (int i = 0; i < TS_CAL_CALLS; i++)
			{
				InstrStartNode(&ti->instr);
				(void) ps->ExecProcNodeReal(ps);
				InstrStopNode(&ti->instr, 1.0);
				(void) ts_cal_node(NULL);
			}
		}
		t1 = tsclock_system_ns();
		wrapped[b] = (double) (t1 - t0) / TS_CAL_CALLS - base[b];
		inside[b] = TS_NODE_COUNTER_NS(&ti->instr) / TS_CAL_CALLS - direct[b];
	}
	/* the calibration's calls are not the workload's */
	ts_pending_calls = saved_calls;

	/*
	 * Each batch's differences, from loops run back to back, then their
	 * medians: a slow stretch of the machine moves a batch's loops alike.
	 */
	d = ts_median(direct, TS_CAL_BATCHES);
	cost->inside_ns = Max(ts_median(inside, TS_CAL_BATCHES), 0.0);
	cost->outside_ns = Max(ts_median(wrapped, TS_CAL_BATCHES) -
						   cost->inside_ns, 0.0);
	cost->measured = true;
	pfree(ps);
	pfree(ti);
	ereport(DEBUG3,
			(errmsg_internal("timing_source: %s per call: %.2f ns inside the node's interval, %.2f ns outside (%.2f direct)",
							 wrapper == NULL ? "core's node timing" : "the node wrappers' timing",
							 cost->inside_ns, cost->outside_ns, d)));
}

/*
 * What probing itself costs (timing_source.subtract_overhead), beyond the
 * timed calls the estimate counts: every call of a probed node passes a
 * countdown, and every probe runs its calls through an out-of-line
 * function that reads the clock twice more, draws a random number and
 * keeps its statistics.  That work falls between the node's calls, so
 * only what encloses the node sees it; counted nowhere, it stayed in the
 * parents' subtracted totals, most in plans of many short loops, whose
 * nodes probe most often (docs/internals.md).
 */
typedef struct TsProbeCost
{
	bool		measured;
	double		call_ns;		/* per call: the countdown */
	double		probe_ns;		/* per probe, beyond its calls' own cost */
} TsProbeCost;

static TsProbeCost ts_probe_cost[lengthof(ts_wrapper_sets)][TS_USAGE_WIDE + 1];

/* calls of each loop of a batch */
#define TS_CAL_PROBE_CALLS	(2 * TS_CAL_CALLS)

/* the loops of ts_cal_measure_probe */
typedef enum TsCalProbeLoop
{
	TS_CAL_EXACT,				/* the exact wrapper */
	TS_CAL_IDLE,				/* the probed one, its countdown never ending */
	TS_CAL_BUSY,				/* the probed one, probing */
	TS_CAL_LOOPS
} TsCalProbeLoop;

/*
 * Time, in several batches, TS_CAL_PROBE_CALLS calls of the calibration
 * node (each followed by its parent's work, as in ts_cal_measure) through
 * each of the loops above, in a rotating order so that none always runs
 * first; the busy loop probes as a young node does.  Idle less exact is
 * the countdown.  Busy less idle is the probes' work less what their bare
 * calls saved; so each probe's cost is that difference, plus the savings,
 * over the probes.  A bare call saves what a timed one costs beyond it
 * where probes run it, from a call of ts_probe_call: the calibration
 * node's own spans measure that, as a plan node's do (insitu.h), and the
 * calibrated cost of a timed call ("timed_ns", ts_cal_measure's, from a
 * plain loop) stands in only if they did not measure it precisely.
 * Medians of the batches' figures, as there.
 */
static void
ts_cal_measure_probe(ExecProcNodeMtd timer, ExecProcNodeMtd probed,
					 bool usage, double timed_ns, TsProbeCost *pc)
{
	TsInstrumentation *ti;
	PlanState  *ps = ts_cal_plan_state(usage, &ti);
	double		per_call[TS_CAL_BATCHES];
	double		per_probe[TS_CAL_BATCHES];
	double		busy_less_idle[TS_CAL_BATCHES];
	double		bare[TS_CAL_BATCHES];
	double		probes[TS_CAL_BATCHES];
	double		probes_seen = 0;
	double		saving = timed_ns;
	double		span_cost;
	double		span_se;
	bool		in_context = false;
	uint64		saved_calls = ts_pending_calls;

	ti->probed = true;

	for (int b = 0; b < TS_CAL_BATCHES; b++)
	{
		double		loop_ns[TS_CAL_LOOPS];

		for (int k = 0; k < TS_CAL_LOOPS; k++)
		{
			TsCalProbeLoop which = (TsCalProbeLoop) ((b + k) % TS_CAL_LOOPS);
			uint64		t0,
						t1;

			INSTR_TIME_SET_ZERO(ti->instr.counter);
			ti->instr.running = false;
			ti->instr.tuplecount = 0;
			ti->instr.ntuples = 0;
			ti->probe_stage = TS_PROBE_FIRST;
			ti->probe_pending = 0;
			ti->bare_calls = 0;
			ti->probes = 0;
			ti->countdown = which == TS_CAL_IDLE ? PG_INT64_MAX :
				ts_probe_gap(TS_PROBE_GAP_MIN, ts_rng_uniform());
			ps->ExecProcNode = which == TS_CAL_EXACT ? timer : probed;

			t0 = tsclock_system_ns();
			for (int i = 0; i < TS_CAL_PROBE_CALLS; i++)
			{
				(void) ps->ExecProcNode(ps);
				(void) ts_cal_node(NULL);
			}
			t1 = tsclock_system_ns();
			loop_ns[which] = (double) (t1 - t0);
			if (which == TS_CAL_BUSY)
			{
				probes[b] = ti->probes;
				bare[b] = ti->bare_calls + ti->probe_pending;
			}
		}
		per_call[b] = (loop_ns[TS_CAL_IDLE] - loop_ns[TS_CAL_EXACT]) /
			TS_CAL_PROBE_CALLS;
		busy_less_idle[b] = loop_ns[TS_CAL_BUSY] - loop_ns[TS_CAL_IDLE];
		probes_seen += probes[b];
	}
	ts_pending_calls = saved_calls;

	if (ts_span_cost(&ti->spans, &span_cost, &span_se) &&
		ts_span_cost_precise(span_se, timed_ns))
	{
		saving = Max(span_cost, 0.0);
		in_context = true;
	}
	for (int b = 0; b < TS_CAL_BATCHES; b++)
		per_probe[b] = probes[b] > 0 ?
			(busy_less_idle[b] + bare[b] * saving) / probes[b] : 0;

	pc->call_ns = Max(ts_median(per_call, TS_CAL_BATCHES), 0.0);
	pc->probe_ns = Max(ts_median(per_probe, TS_CAL_BATCHES), 0.0);
	pc->measured = true;
	pfree(ps);
	pfree(ti);
	ereport(DEBUG3,
			(errmsg_internal("timing_source: probing: %.2f ns a probe beyond its calls, %.2f ns a call for the countdown (%.0f probes in %d batches; a bare call saved %.2f ns, %s)",
							 pc->probe_ns, pc->call_ns, probes_seen,
							 TS_CAL_BATCHES, saving,
							 in_context ? "measured by the probes" :
							 "calibrated")));
}

/* A bound query's settings, for its overhead estimate and EXPLAIN */
typedef struct TsPlanEntry
{
	TsQueryEntry entry;			/* must be first */
	const TsWrapperSet *set;
	int			sample_every;
	bool		subtract;
	bool		estimated;		/* the estimate has been made */
	double		call_ns;		/* the plan's measured cost of a timed call
								 * (its nodes' own, weighted by their
								 * precision); < 0: none measured */
	double		call_se;		/* its standard error */
	List	   *moved;			/* TsMovedCost: initPlans' costs on their way
								 * to the node that runs them */
	struct TsPlanLinks *links;	/* where its initPlans run */
} TsPlanEntry;

/*
 * An initPlan's timing cost, to be counted by the node that runs it (its
 * first call that needs the value) rather than the one it hangs from
 */
typedef struct TsMovedCost
{
	PlanState  *runner;
	PlanState  *owner;			/* the node it hangs from */
	double		ns;
} TsMovedCost;

static TsQueryList ts_plans;

/* the entry of the query a plan state belongs to, or NULL */
static TsPlanEntry *
ts_plan_of(PlanState *node)
{
	for (TsQueryEntry *e = ts_plans.head; e != NULL; e = e->next)
	{
		if (e->queryDesc->estate == node->state)
			return (TsPlanEntry *) e;
	}
	return NULL;
}

/* whether the node runs one of the set's exactly timing wrappers */
static bool
ts_is_exact(PlanState *node, const TsWrapperSet *set)
{
	return node->ExecProcNode == set->first ||
		node->ExecProcNode == set->timer ||
		node->ExecProcNode == set->full ||
		(set->wide != NULL && node->ExecProcNode == set->wide) ||
		node->ExecProcNode == set->first_probed ||
		node->ExecProcNode == set->probed ||
		node->ExecProcNode == set->probed_full ||
		(set->probed_wide != NULL && node->ExecProcNode == set->probed_wide);
}

typedef struct TsOverheadWalk
{
	TsPlanEntry *plan;
	bool		subtract;		/* adjust the times (else only estimate) */
	double		below_ns;		/* what the children's timing added */
	PlanState  *parent;			/* whose children these are */
} TsOverheadWalk;

static double ts_overhead_node(PlanState *node, TsPlanEntry *plan,
							   bool subtract);

/* the initPlan of node whose plan child is, or NULL */
static SubPlanState *
ts_init_plan_of(PlanState *node, PlanState *child)
{
	ListCell   *lc;

	foreach(lc, node->initPlan)
	{
		if (((SubPlanState *) lfirst(lc))->planstate == child)
			return (SubPlanState *) lfirst(lc);
	}
	return NULL;
}

/* the parent's initPlans are counted before the walk, where they run */
static bool
ts_overhead_child(PlanState *child, void *arg)
{
	TsOverheadWalk *w = (TsOverheadWalk *) arg;

	if (child != NULL && ts_init_plan_of(w->parent, child) == NULL)
		w->below_ns += ts_overhead_node(child, w->plan, w->subtract);
	return false;
}

/*
 * Where initPlans run.  An initPlan runs when its value is first needed,
 * inside the call of the node whose expressions read it, which may lie
 * deep below the node it hangs from: a HAVING's subquery hangs from the
 * plan's top, above the Sort, and runs inside the Aggregate's call; a
 * CTE hangs from the top and runs inside the first CTE Scan that reads
 * it, which may itself be inside another initPlan's run.  That node's
 * calls, and those of every node above it, then hold the initPlan's run
 * and its timing.
 *
 * The readers of a value are the CTE Scans of a CTE, and the nodes whose
 * subtree reads a value (the planner's extParam) while not exactly one of
 * their children's does:
 * none, so the node reads it itself, or several, so it contains whichever
 * reads first (with exactly one, the reading is looked for below, though
 * the node may read it too).  The runner is the lowest node that contains
 * every reader, where an initPlan's plan is contained by its own runner
 * rather than by the node it hangs from; so the runners are found over a
 * few passes, each seeing the last's.  A runner not below the node the
 * initPlan hangs from is not believed: that node is used.
 */
typedef struct TsPlanLink
{
	PlanState  *node;
	int			parent;			/* its index, -1 at a root */
	SubPlanState *init;			/* the initPlan whose plan it is, or NULL */
	int			runner;			/* that initPlan's runner, -1 before found */
} TsPlanLink;

typedef struct TsPlanLinks
{
	TsPlanLink *links;
	int			n;
	int			size;
	int			parent;			/* while walking */
} TsPlanLinks;

#define TS_INIT_PLAN_PASSES 3

static bool
ts_link_node(PlanState *node, void *arg)
{
	TsPlanLinks *l = (TsPlanLinks *) arg;
	int			save = l->parent;
	int			me;

	if (node == NULL)
		return false;
	if (l->n == l->size)
	{
		l->size *= 2;
		l->links = repalloc(l->links, l->size * sizeof(TsPlanLink));
	}
	me = l->n++;
	l->links[me].node = node;
	l->links[me].parent = save;
	l->links[me].init = save >= 0 ? ts_init_plan_of(l->links[save].node, node) : NULL;
	l->links[me].runner = -1;
	l->parent = me;
	(void) planstate_tree_walker(node, ts_link_node, l);
	l->parent = save;
	return false;
}

/* what contains a node's calls: its parent, or the runner of its initPlan */
static int
ts_link_up(TsPlanLinks *l, int i)
{
	if (l->links[i].init != NULL && l->links[i].runner >= 0)
		return l->links[i].runner;
	return l->links[i].parent;
}

/*
 * Whether node i reads one of params itself, or contains several readers.
 * A CTE Scan reads its CTE through cteParam, which no extParam holds (a
 * CTE is set at the level that reads it).
 */
static bool
ts_link_reads(TsPlanLinks *l, int i, Bitmapset *params)
{
	Plan	   *p = l->links[i].node->plan;
	int			children = 0;

	if (IsA(p, CteScan) && bms_is_member(((CteScan *) p)->cteParam, params))
		return true;
	if (!bms_overlap(p->extParam, params))
		return false;
	for (int j = i + 1; j < l->n; j++)
	{
		if (l->links[j].parent == i &&
			bms_overlap(l->links[j].node->plan->extParam, params))
			children++;
	}
	return children != 1;
}

/* the runner of the initPlan whose plan is node i (see above) */
static int
ts_link_runner(TsPlanLinks *l, int i)
{
	int			owner = l->links[i].parent;
	Bitmapset  *params = NULL;
	int		   *chain = palloc((l->n + 1) * sizeof(int));
	int			len = 0;
	int			lo = 0;
	int			x;
	ListCell   *lc;

	foreach(lc, l->links[i].init->subplan->setParam)
		params = bms_add_member(params, lfirst_int(lc));

	for (int r = 0; r < l->n; r++)
	{
		int			steps = 0;
		int			k = -1;

		if (!ts_link_reads(l, r, params))
			continue;
		if (len == 0)
		{
			/* the first reader's chain up to a root */
			for (x = r; x >= 0 && len <= l->n; x = ts_link_up(l, x))
				chain[len++] = x;
			continue;
		}
		/* the lowest node of the chain (from lo up) above this reader */
		for (x = r; x >= 0 && k < 0 && steps <= l->n; x = ts_link_up(l, x), steps++)
		{
			for (int c = lo; c < len; c++)
			{
				if (chain[c] == x)
				{
					k = c;
					break;
				}
			}
		}
		if (k < 0)
		{
			lo = len;
			break;
		}
		lo = k;
	}

	/* believed only below (or at) the node it hangs from */
	x = owner;
	for (int c = lo; c < len; c++)
	{
		if (chain[c] == owner)
		{
			x = chain[lo];
			break;
		}
	}
	pfree(chain);
	bms_free(params);
	return x;
}

/* every initPlan's runner in the plan under top, for ts_overhead_node */
static void
ts_link_plan(TsPlanEntry *plan, PlanState *top)
{
	TsPlanLinks *l = palloc(sizeof(TsPlanLinks));

	l->size = 64;
	l->n = 0;
	l->links = palloc(l->size * sizeof(TsPlanLink));
	l->parent = -1;
	(void) ts_link_node(top, l);
	for (int pass = 0; pass < TS_INIT_PLAN_PASSES; pass++)
	{
		for (int i = 0; i < l->n; i++)
		{
			if (l->links[i].init != NULL)
				l->links[i].runner = ts_link_runner(l, i);
		}
	}
	plan->links = l;
}

/* the node that runs initPlan sps of node; node itself if not known */
static PlanState *
ts_init_plan_runner(TsPlanEntry *plan, PlanState *node, SubPlanState *sps)
{
	TsPlanLinks *l = plan->links;

	if (l == NULL)
		return node;
	for (int i = 0; i < l->n; i++)
	{
		if (l->links[i].init == sps && l->links[i].runner >= 0)
			return l->links[l->links[i].runner].node;
	}
	return node;
}

/*
 * The CPUs this process may run on (its affinity mask, which taskset and
 * cpusets narrow; else the online CPUs), or fewer where its cgroup's CPU
 * quota allows less time than that, once a process
 */
static int
ts_cpus(void)
{
	static int	ncpus = 0;

	if (ncpus == 0)
	{
		int			quota = tsclock_cpu_quota();

#ifdef __linux__
		cpu_set_t	set;

		if (sched_getaffinity(0, sizeof(set), &set) == 0)
			ncpus = CPU_COUNT(&set);
#endif
		if (ncpus <= 0)
			ncpus = (int) sysconf(_SC_NPROCESSORS_ONLN);
		if (quota > 0 && (ncpus <= 0 || quota < ncpus))
			ncpus = quota;
		if (ncpus <= 0)
			ncpus = 1;
	}
	return ncpus;
}

/*
 * Processes a node ran in: the leader if it ran there, and each worker
 * that ran it.  A Gather waits for them side by side, so what their
 * timing cost reaches it divided among them, or among the CPUs they share
 * where there are fewer: processes that take turns on a CPU stretch each
 * other's wall time by what each of them spends, timing included.
 */
static int
ts_participants(PlanState *node)
{
	TsWorkerInstr *w;
	double		wloops = 0;
	int			n = 0;

	if (node == NULL || node->instrument == NULL)
		return 1;
	w = node->worker_instrument;
	if (w != NULL)
		for (int i = 0; i < w->num_workers; i++)
		{
			wloops += w->instrument[i].nloops;
			if (w->instrument[i].nloops > 0)
				n++;
		}
	if (node->instrument->nloops - wloops > 0)
		n++;
	return Max(n, 1);
}

/*
 * A probed node (insitu.h): its bare calls go into its total, once, each
 * as long as its probe's timed neighbours (ts_bare_imputed); those of a
 * probe without a usable neighbour (cut short by the end of its loop, or
 * the node's end) as long as the node's timed calls after the first of
 * their loops were on average (a loop's first call, a sort's or a hash's
 * whole input, is startup).  And where its probes measured what a timed
 * call cost in this plan, that figure replaces the calibration's, split
 * into the parts inside and outside the node's own interval as the
 * calibration splits its own.  Returns the calls that were timed.
 */
static double
ts_probe_apply(PlanState *node, TsInstrumentation *ti, const TsCallCost *cost,
			   double calls, double plan_call_ns, double plan_call_se,
			   double *inside_ns, double *outside_ns)
{
	double		timed;
	double		cal = cost->inside_ns + cost->outside_ns;
	double		measured = 0;
	double		se = 0;
	bool		own;

	ts_probe_settle(ti, -1.0);
	timed = Max(calls - ti->bare_calls, 0.0);
	if (ti->bare_calls > 0 && !ti->imputed)
	{
		double		total_s = ts_node_total_s(&ti->instr);
		double		startup_s = ts_node_startup_s(&ti->instr);
		double		later_s = Max(total_s - startup_s, 0.0);
		double		bare_s = ti->bare_ns / 1e9;

		if (ti->bare_orphans > 0 && timed > ti->instr.nloops)
			bare_s += ti->bare_orphans * later_s / (timed - ti->instr.nloops);
		ts_node_set_times(&ti->instr, total_s + bare_s, startup_s);
		ti->imputed = true;
	}

	own = ts_span_cost(&ti->spans, &measured, &se);
	if (own)
		ereport(DEBUG2,
				(errmsg_internal("timing_source: plan node %d: a timed call costs %.2f ns (+/- %.2f) measured in the plan, %.2f ns calibrated; %.0f timed and %.0f bare spans, %.0f left out%s",
								 node->plan->plan_node_id, Max(measured, 0.0),
								 1.96 * se, cal,
								 (double) ti->spans.n[0], (double) ti->spans.n[1],
								 (double) ti->spans.dropped,
								 ts_span_cost_precise(se, cal) ? "" :
								 "; too imprecise to stand for the node")));
	if (own && ts_span_cost_precise(se, cal))
		measured = Max(measured, 0.0);
	else if (plan_call_ns >= 0 && ts_span_cost_precise(plan_call_se, cal))
	{
		/*
		 * Too few spans of its own, or too uneven ones: the plan's other
		 * nodes measured what the calibration only models, on this
		 * machine in this run
		 */
		measured = plan_call_ns;
		ti->call_pooled = true;
		ereport(DEBUG2,
				(errmsg_internal("timing_source: plan node %d: %.0f and %.0f spans, %s; the plan's %.2f ns (+/- %.2f) a timed call, %.2f ns calibrated",
								 node->plan->plan_node_id,
								 (double) ti->spans.n[0], (double) ti->spans.n[1],
								 own ? "too imprecise" : "too few of its own",
								 measured, 1.96 * plan_call_se, cal)));
	}
	else
	{
		ereport(DEBUG2,
				(errmsg_internal("timing_source: plan node %d: %.0f and %.0f spans, and no figure of the plan precise enough to stand for the calibrated %.2f ns",
								 node->plan->plan_node_id,
								 (double) ti->spans.n[0], (double) ti->spans.n[1],
								 cal)));
		return timed;
	}
	ti->call_ns = measured;
	*inside_ns = cal > 0 ? measured * (cost->inside_ns / cal) : measured / 2;
	*outside_ns = measured - *inside_ns;
	return timed;
}

typedef struct TsPoolWalk
{
	const TsWrapperSet *set;
	TsCostPool	pool;
} TsPoolWalk;

/* add a probed node's measured cost, weighted by its precision; recurse */
static bool
ts_pool_node(PlanState *node, void *arg)
{
	TsPoolWalk *w = (TsPoolWalk *) arg;

	if (node == NULL)
		return false;
	if (node->instrument != NULL && ts_is_exact(node, w->set))
	{
		TsInstrumentation *ti = (TsInstrumentation *) node->instrument;
		double		cost;
		double		se;

		if (ti->probed && ts_span_cost(&ti->spans, &cost, &se))
			ts_cost_pool_add(&w->pool, cost, se);
	}
	return planstate_tree_walker(node, ts_pool_node, arg);
}

/*
 * Estimate (and with "subtract" remove) the node's instrumentation cost,
 * its subtree's first; returns what the node's timing adds to whatever
 * encloses its calls.
 */
static double
ts_overhead_node(PlanState *node, TsPlanEntry *plan, bool subtract)
{
	TsOverheadWalk below;
	ListCell   *lc;
	TsNodeInstr *instr = node->instrument;
	TsInstrumentation *ti = NULL;
	const TsCallCost *cost;
	double		calls;
	double		timed_calls;
	double		inside_ns;
	double		outside_ns;
	double		own;
	double		total_ns;
	double		probing_ns = 0;
	const TsProbeCost *pcost = NULL;
	double		own_calls = 0;
	double		passed_ns;

	check_stack_depth();

	below.plan = plan;
	below.subtract = subtract;
	below.below_ns = 0;
	below.parent = node;

	/*
	 * The initPlans first, each cost left for the node that runs it, then
	 * the other children, among whom that node is; then what was left here
	 */
	foreach(lc, node->initPlan)
	{
		SubPlanState *sps = (SubPlanState *) lfirst(lc);
		TsMovedCost *m = palloc(sizeof(TsMovedCost));

		m->ns = ts_overhead_node(sps->planstate, plan, subtract);
		m->runner = ts_init_plan_runner(plan, node, sps);
		m->owner = node;
		plan->moved = lappend(plan->moved, m);
	}
	(void) planstate_tree_walker(node, ts_overhead_child, &below);
	/* an initPlan whose runner the walk did not reach stays here */
	foreach(lc, plan->moved)
	{
		TsMovedCost *m = (TsMovedCost *) lfirst(lc);

		if (m->runner == node || m->owner == node)
		{
			below.below_ns += m->ns;
			plan->moved = foreach_delete_current(plan->moved, lc);
		}
	}

	if (instr == NULL || !TS_INSTR_FLAGS(instr)->need_timer)
		return below.below_ns;

	if (IsA(node, GatherState) || IsA(node, GatherMergeState))
	{
		int			procs = ts_participants(outerPlanState(node));
		int			cpus = ts_cpus();

		below.below_ns /= Min(procs, cpus);
		ereport(DEBUG2,
				(errmsg_internal("timing_source: plan node %d: its processes' timing divided among %d (%d processes, %d CPUs)",
								 node->plan->plan_node_id, Min(procs, cpus),
								 procs, cpus)));
	}

	/* as EXPLAIN would: the last loop's figures into the totals */
	InstrEndLoop(instr);

	if (ts_is_exact(node, plan->set))
	{
		TsUsage usage = ts_node_usage(instr);
		int			set_index = 0;
		TsWorkerInstr *w = node->worker_instrument;
		double		wtuples = 0;
		double		wcalls = 0;
		ExecProcNodeMtd wrappers[] = {plan->set->timer, plan->set->full,
		plan->set->wide};

		ti = (TsInstrumentation *) instr;
		while (ts_wrapper_sets[set_index] != plan->set)
			set_index++;
		if (!ts_wrapper_cost[set_index][usage].measured)
		{
			ExecProcNodeMtd rows[] = {ts_exec_proc_node_rows,
				ts_exec_proc_node_rows_full,
			TS_WIDE(ts_exec_proc_node_rows_wide)};

			ts_cal_measure(wrappers[usage], rows[usage], usage != TS_USAGE_NONE,
						   &ts_wrapper_cost[set_index][usage]);
		}
		cost = &ts_wrapper_cost[set_index][usage];

		/*
		 * This process counted its calls; a worker's, copied back without
		 * the count of empty returns, are at most one more per loop than
		 * its tuples.
		 */
		if (w != NULL)
			for (int i = 0; i < w->num_workers; i++)
			{
				wtuples += w->instrument[i].ntuples;
				wcalls += w->instrument[i].ntuples + w->instrument[i].nloops;
			}
		calls = Max(instr->ntuples - wtuples, 0.0) + ti->nulls + wcalls;

		/*
		 * A probed node's probes, and its countdown on every call this
		 * process made: parallel workers run no probes
		 */
		if (ti->probed)
		{
			TsProbeCost *pc = &ts_probe_cost[set_index][usage];

			if (!pc->measured)
			{
				ExecProcNodeMtd probed[] = {plan->set->probed,
					plan->set->probed_full,
				plan->set->probed_wide};

				ts_cal_measure_probe(wrappers[usage], probed[usage],
									 usage != TS_USAGE_NONE,
									 cost->inside_ns + cost->outside_ns, pc);
			}
			own_calls = calls - wcalls;
			probing_ns = ti->probes * pc->probe_ns + own_calls * pc->call_ns;
			pcost = pc;
		}
	}
	else
	{
		int			usage = (TS_INSTR_FLAGS(instr)->need_bufusage ||
							 TS_INSTR_FLAGS(instr)->need_walusage) ? 1 : 0;

		if (!ts_core_cost[usage].measured)
			ts_cal_measure(NULL, NULL, usage, &ts_core_cost[usage]);
		cost = &ts_core_cost[usage];

		/*
		 * Core times it: once per loop for a node it runs through
		 * MultiExecProcNode (and then the struct is ours), else per call,
		 * at most one more than its tuples per loop.
		 */
		if (ts_multi_exec_node(node))
		{
			calls = instr->nloops;
			if (plan->sample_every <= 1)
				ti = (TsInstrumentation *) instr;
		}
		else
			calls = instr->ntuples + instr->nloops;
	}

	inside_ns = cost->inside_ns;
	outside_ns = cost->outside_ns;
	timed_calls = calls;
	if (ti != NULL && ti->probed)
		timed_calls = ts_probe_apply(node, ti, cost, calls, plan->call_ns,
									 plan->call_se, &inside_ns, &outside_ns);

	/*
	 * Never more than the node's own total.  The bare calls' lengths were
	 * taken from timed calls, reads included, so the total holds the
	 * inside part for them as well; they added nothing to the enclosing
	 * calls' time.
	 */
	total_ns = ts_node_total_s(instr) * 1e9;
	own = calls * inside_ns + below.below_ns;
	if (own > total_ns)
		own = total_ns;
	if (own < 0)
		own = 0;

	if (ti != NULL)
	{
		if (subtract && !ti->subtracted)
		{
			double		total_s = ts_node_total_s(instr);
			double		left_s = Max(total_s - own / 1e9, 0.0);
			double		startup_s = ts_node_startup_s(instr);

			/*
			 * Startup is what the first calls of each loop took, overhead
			 * included: scaled as the total is, it stays within it.
			 */
			if (total_s > 0)
				startup_s = Min(startup_s * (left_s / total_s), left_s);
			else
				startup_s = 0;
			ts_node_set_times(instr, left_s, startup_s);
			ti->subtracted = true;
		}
		ti->overhead_ns = own;
	}

	passed_ns = Max(own - (calls - timed_calls) * inside_ns, 0.0) +
		timed_calls * outside_ns + probing_ns;
	if (pcost != NULL)
		ereport(DEBUG2,
				(errmsg_internal("timing_source: plan node %d: %.0f ns of timing seen by what encloses it: %.0f timed calls at %.2f ns, %.0f probes at %.2f ns, %.0f calls at %.2f ns for the countdown, %.0f ns from below",
								 node->plan->plan_node_id, passed_ns,
								 timed_calls, inside_ns + outside_ns,
								 ti->probes, pcost->probe_ns,
								 own_calls, pcost->call_ns, below.below_ns)));
	return passed_ns;
}

/* the top node's estimate of the query that ended last, for compare() */
static double ts_last_top_ns = -1.0;

double
ts_last_top_overhead_ns(void)
{
	return ts_last_top_ns;
}

void
ts_reset_last_top_overhead(void)
{
	ts_last_top_ns = -1.0;
}

/* estimate the overhead of every node of a bound query, once */
static void
ts_plan_estimate(TsPlanEntry *plan, bool subtract)
{
	QueryDesc  *queryDesc = plan->entry.queryDesc;
	ListCell   *lc;
	TsPoolWalk	pool;

	if (plan->estimated || plan->sample_every > 1)
		return;
	plan->estimated = true;

	/*
	 * What the plan's probed nodes measured, for those too small to.  The
	 * walker reaches every subplan the plan ran through the nodes that ran
	 * it; es_subplanstates would count those a second time.
	 */
	pool.set = plan->set;
	pool.pool.sum = pool.pool.weight = 0;
	(void) ts_pool_node(queryDesc->planstate, &pool);
	if (ts_cost_pool_get(&pool.pool, &plan->call_ns, &plan->call_se))
		plan->call_ns = Max(plan->call_ns, 0.0);
	else
		plan->call_ns = plan->call_se = -1.0;
	plan->moved = NIL;
	ts_link_plan(plan, queryDesc->planstate);
	(void) ts_overhead_node(queryDesc->planstate, plan, subtract);
	foreach(lc, queryDesc->estate->es_subplanstates)
		(void) ts_overhead_node((PlanState *) lfirst(lc), plan, subtract);
}

double
ts_node_overhead_ns(PlanState *node)
{
	TsPlanEntry *plan;

	if (node == NULL || node->instrument == NULL ||
		(plan = ts_plan_of(node)) == NULL || plan->sample_every > 1)
		return -1.0;
	if (!ts_is_exact(node, plan->set) &&
		!(ts_multi_exec_node(node) && TS_INSTR_FLAGS(node->instrument)->need_timer))
		return -1.0;
	ts_plan_estimate(plan, false);
	return ((TsInstrumentation *) node->instrument)->overhead_ns;
}

bool
ts_node_overhead_subtracted(PlanState *node)
{
	if (ts_node_overhead_ns(node) < 0)
		return false;
	return ((TsInstrumentation *) node->instrument)->subtracted;
}

double
ts_node_overhead_call_ns(PlanState *node, bool *pooled)
{
	TsInstrumentation *ti;

	*pooled = false;
	if (ts_node_overhead_ns(node) < 0)
		return -1.0;
	ti = (TsInstrumentation *) node->instrument;
	*pooled = ti->call_pooled;
	return ti->probed ? ti->call_ns : -1.0;
}

bool
ts_plan_timing(PlanState *node, TsPlanTiming *timing)
{
	TsPlanEntry *plan = ts_plan_of(node);

	if (plan == NULL)
		return false;
	timing->clock = plan->set->clock;
	timing->sample_every = plan->sample_every;
	timing->subtracted = plan->subtract && plan->sample_every <= 1;
	return true;
}

static void
ts_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	TimingClockSource clock;
	EState	   *estate;
	TsBindContext bc;
	ListCell   *lc;
	MemoryContext oldcxt;

	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);

	/* Cheap checks first: most queries are not instrumented at all */
	if (queryDesc->instrument_options == 0 ||
		queryDesc->planstate == NULL ||
		(eflags & EXEC_FLAG_EXPLAIN_ONLY) != 0)
		return;

	/*
	 * A statement instrumented for tracking, in its leader and workers,
	 * is sampled at the tracking's rate; its buffer counts stay exact.
	 */
	bc.sample_every = ts_tracked_statement(queryDesc) ?
		ts_track_sample_every : ts_sample_every;
	if (!ts_node_clock_choose(&clock,
							  (queryDesc->instrument_options & INSTRUMENT_TIMER) != 0))
		return;

	/* the next query profiles, no other: not those it runs itself */
	bc.profile = ts_profile_next;
	ts_profile_next = false;
	if (bc.profile)
	{
		bc.sample_every = 1;
		ts_profiled_list = NIL;
	}

	estate = queryDesc->estate;
	bc.ntimed = bc.nrows = 0;
	memset(bc.nusage, 0, sizeof(bc.nusage));
	bc.sample_usage = ts_sample_buffers && bc.sample_every > 1 &&
		!ts_tracked_statement(queryDesc);
	bc.nsampled_usage = 0;

	/*
	 * Probes only where the cost is subtracted, so that plain exact timing
	 * stays exact to the call, and not in parallel workers, whose leader
	 * estimates their calls (see below) and never sees their probes.
	 */
	bc.probe = ts_subtract_overhead && !bc.profile && bc.sample_every <= 1 &&
		(queryDesc->instrument_options & INSTRUMENT_TIMER) != 0 &&
		!IsParallelWorker();
	bc.set = ts_wrappers_for(clock);
	bc.cxt = estate->es_query_cxt;
	bc.timed = NIL;
	if (bc.sample_every > 1 || bc.probe)
		ts_rng_seed();

	/* the list of bound nodes lives as long as the query */
	oldcxt = MemoryContextSwitchTo(estate->es_query_cxt);

	ts_bind_node(queryDesc->planstate, &bc);

	/* subplans not reachable from the main tree (normally none) */
	foreach(lc, estate->es_subplanstates)
		ts_bind_node((PlanState *) lfirst(lc), &bc);

	MemoryContextSwitchTo(oldcxt);

	if (queryDesc->instrument_options & INSTRUMENT_TIMER)
		ereport(DEBUG1,
				(errmsg_internal("timing_source: %d plan nodes timed with the %s%s",
								 bc.ntimed,
								 clock == TS_CLOCK_SYSTEM ? "system clock" : "TSC",
								 bc.sample_every > 1 ? psprintf(", sampled 1 in %d calls", bc.sample_every) : "")));
	else
		ereport(DEBUG1,
				(errmsg_internal("timing_source: %d plan nodes counted without a clock",
								 bc.nrows)));
	if (bc.nusage[TS_USAGE_FULL] + bc.nusage[TS_USAGE_WIDE] > 0)
		ereport(DEBUG2,
				(errmsg_internal("timing_source: buffer/WAL usage kept with AVX2 for %d plan nodes, with plain copies for %d",
								 bc.nusage[TS_USAGE_WIDE], bc.nusage[TS_USAGE_FULL])));
	if (bc.nsampled_usage > 0)
		ereport(DEBUG2,
				(errmsg_internal("timing_source: buffer/WAL usage estimated from the timed calls of %d plan nodes",
								 bc.nsampled_usage)));

	if (bc.profile)
		ereport(DEBUG1,
				(errmsg_internal("timing_source: %d plan nodes profiled",
								 list_length(ts_profiled_list))));

	if (bc.ntimed == 0)
		return;
	/*
	 * A parallel worker's calls are counted and estimated by its leader,
	 * from the figures core copies back: a worker estimating (and
	 * subtracting) its own would have its share taken off twice, and pay
	 * for measuring the per-call cost in every new worker process.
	 */
	if ((queryDesc->instrument_options & INSTRUMENT_TIMER) &&
		!IsParallelWorker())
	{
		TsPlanEntry *plan = ts_query_add(&ts_plans, queryDesc,
										 sizeof(TsPlanEntry));

		plan->set = bc.set;
		plan->sample_every = bc.sample_every;
		plan->subtract = ts_subtract_overhead;
	}
#ifdef TS_HAVE_WATCHDOG
	/* the watchdog judges the TSC; nodes on the system clock, its probation */
	if (clock != TS_CLOCK_TSC)
	{
		if (queryDesc->instrument_options & INSTRUMENT_TIMER)
			ts_clock_probation_start(queryDesc);
		return;
	}
#endif
	ts_clock_query_start(queryDesc, bc.timed);
}

/*
 * The estimate of the top node of the last query that ended with its
 * top node sampled and its loop ended (as EXPLAIN ends it), for
 * timing_source_compare(), which runs EXPLAIN through SPI and has no
 * other way to the plan state tree.  Nested queries end before the query
 * that runs them, so the outermost one is what stays.
 */
static TsSampleEstimate ts_top_estimate;
static bool ts_top_estimate_valid = false;

void
ts_instrument_set_sample_check(bool on)
{
	ts_sample_check = on;
}

void
ts_instrument_set_profile(bool on)
{
	ts_profile_next = on;
	ts_profiled_list = NIL;
}

int64
ts_node_profile_hits(PlanState *node)
{
	if (!list_member_ptr(ts_profiled_list, node))
		return -1;
	return (int64) ((TsInstrumentation *) node->instrument)->profile_hits;
}

void
ts_forget_top_estimate(void)
{
	ts_top_estimate_valid = false;
}

bool
ts_last_top_estimate(TsSampleEstimate *est)
{
	if (!ts_top_estimate_valid)
		return false;
	*est = ts_top_estimate;
	return true;
}

/*
 * EXPLAIN and auto_explain print after ExecutorFinish and before
 * ExecutorEnd: the last point where the printed times can still be
 * adjusted.
 */
static void
ts_ExecutorFinish(QueryDesc *queryDesc)
{
	TsPlanEntry *plan;

	if (prev_ExecutorFinish)
		prev_ExecutorFinish(queryDesc);
	else
		standard_ExecutorFinish(queryDesc);

	plan = ts_query_find(&ts_plans, queryDesc);
	if (plan != NULL && plan->sample_every <= 1)
	{
		ts_plan_estimate(plan, plan->subtract);
		/* what timing_source_compare() reads is an explained query's */
		if (queryDesc->planstate->instrument != NULL &&
			!ts_tracked_statement(queryDesc))
			ts_last_top_ns = ts_node_overhead_ns(queryDesc->planstate);
	}
}

static void
ts_ExecutorEnd(QueryDesc *queryDesc)
{
	PlanState  *top = queryDesc->planstate;

	ts_clock_query_end(queryDesc);

	if (top != NULL && top->instrument != NULL && !top->instrument->running &&
		!ts_tracked_statement(queryDesc) &&
		ts_node_sample_estimate(top, &ts_top_estimate))
		ts_top_estimate_valid = true;

	if (ts_pending_calls > 0)
	{
		ts_stats_add_calls(ts_pending_calls);
		ts_pending_calls = 0;
	}

	if (prev_ExecutorEnd)
		prev_ExecutorEnd(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
}

static TupleTableSlot *
ts_exec_proc_node_unused(PlanState *node)
{
	elog(ERROR, "timing_source: placeholder executor function called");
	return NULL;
}

bool
ts_instrument_samples(bool tsc)
{
	if (ts_sample_every <= 1)
		return false;
	return ts_node_clock_samples(tsc);
}

bool
ts_instrument_can_sample(void)
{
	return ts_node_clock_samples(ts_session_uses_tsc());
}

void
ts_instrument_init(void)
{
	PlanState	probe;

	/*
	 * ExecProcNodeFirst is static in core; ExecSetExecProcNode stores its
	 * address in the node it is given, so learn it from a probe node.
	 */
	MemSet(&probe, 0, sizeof(probe));
	ExecSetExecProcNode(&probe, ts_exec_proc_node_unused);
	ts_core_first = probe.ExecProcNode;

#ifdef TS_HAVE_WIDE_USAGE

	/*
	 * The wide wrappers where the CPU allows.  TIMING_SOURCE_DISABLE_AVX2
	 * set to a non-empty value in the server's environment keeps the plain
	 * ones, so that tests can run both.
	 */
	{
		const char *off = getenv("TIMING_SOURCE_DISABLE_AVX2");

		ts_usage_wide = ts_snap_cpu_ok() && (off == NULL || off[0] == '\0');
		ereport(DEBUG1,
				(errmsg_internal("timing_source: buffer and WAL usage kept with %s",
								 ts_usage_wide ? "AVX2" : "plain copies")));
	}
#endif

	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = ts_ExecutorStart;
	prev_ExecutorEnd = ExecutorEnd_hook;
	ExecutorEnd_hook = ts_ExecutorEnd;
	/*
	 * The product's own hooks first, so that ours run around them: on 19,
	 * rebase.c's ExecutorFinish must have brought every node to one unit
	 * before the overhead estimate reads and adjusts the times.
	 */
	ts_clock_init();
	prev_ExecutorFinish = ExecutorFinish_hook;
	ExecutorFinish_hook = ts_ExecutorFinish;
	ts_explain_init();
}

#else							/* !TS_HAVE_NODE_WRAPPERS */

/*
 * No TSC in this build of an extension for 15-18, or instr_time is not in
 * nanoseconds, or a major the wrappers do not know (20devel): only core's
 * own path is offered.  Nothing to install but EXPLAIN's note naming
 * core's clock, where core has the hook.
 */
bool
ts_instrument_samples(bool tsc)
{
	return false;
}

bool
ts_instrument_can_sample(void)
{
	return false;
}

bool
ts_node_sample_estimate(PlanState *node, TsSampleEstimate *est)
{
	return false;
}

void
ts_instrument_set_sample_check(bool on)
{
}

void
ts_instrument_set_profile(bool on)
{
}

int64
ts_node_profile_hits(PlanState *node)
{
	return -1;
}

void
ts_forget_top_estimate(void)
{
}

bool
ts_last_top_estimate(TsSampleEstimate *est)
{
	return false;
}

const char *
ts_estimate_why_text(TsEstimateWhy why)
{
	return NULL;
}

double
ts_last_top_overhead_ns(void)
{
	return -1.0;
}

void
ts_reset_last_top_overhead(void)
{
}

#ifdef TS_HAVE_EXECUTOR_HOOK
double
ts_node_overhead_ns(PlanState *node)
{
	return -1.0;
}

uint64
ts_node_usage_sampled(PlanState *node)
{
	return 0;
}

bool
ts_node_overhead_subtracted(PlanState *node)
{
	return false;
}

double
ts_node_overhead_call_ns(PlanState *node, bool *pooled)
{
	*pooled = false;
	return -1.0;
}

bool
ts_plan_timing(PlanState *node, TsPlanTiming *timing)
{
	return false;
}
#endif

void
ts_instrument_init(void)
{
#ifdef TS_HAVE_EXECUTOR_HOOK
	ts_explain_init();
#endif
}

#endif
