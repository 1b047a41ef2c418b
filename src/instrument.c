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
 * PostgreSQL 19 (TS_CORE_CLOCK) times nodes with its own clock, the TSC
 * where its timing_clock_source resolves to it, storing ticks that it
 * converts to nanoseconds only when EXPLAIN prints.  There the wrappers
 * (timing_source.node_wrappers, on by default) are the same, but read the
 * clock core had chosen when the query started, as core reads it, and add
 * core's ticks unconverted; ExecutorFinish converts their nodes' times
 * should core's unit have changed during the query (see TsBoundQuery).
 * The watchdog is the extension's own clock's and does not exist there.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "timing_source.h"
#include "usage_snap.h"

#ifdef TS_HAVE_EXECUTOR_HOOK
#include <math.h>

#include "access/parallel.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "nodes/nodeFuncs.h"
#endif

#if defined(TS_HAVE_EXECUTOR_HOOK) && \
	(defined(TSCLOCK_HAVE_TSC) || defined(TS_CORE_CLOCK))

static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static ExecutorEnd_hook_type prev_ExecutorEnd = NULL;

/*
 * Plan node calls timed with the TSC by this process since it last added
 * them to the shared count (at ExecutorEnd): one increment per call here,
 * one atomic add per query there.
 */
static uint64 ts_pending_calls = 0;

/*
 * The clock a wrapper reads, fixed when the query's nodes are bound:
 * through 18 the extension's own TSC (tsclock), converted to nanoseconds
 * with its own calibration; on 19 core's clock as core had chosen it when
 * the query started, its ticks accumulated unconverted, as core does.
 */
typedef enum TsClock
{
	TS_CLK_OWN_TSC,
	TS_CLK_CORE_TSC,
	TS_CLK_CORE_SYSTEM
} TsClock;

static pg_attribute_always_inline int64
ts_clock_read(TsClock clock)
{
#ifdef TS_CORE_CLOCK
	if (clock == TS_CLK_CORE_TSC)
		return ts_core_read_tsc();
	return ts_core_read_system();
#else
	return (int64) tsclock_read_fast();
#endif
}

/* add a positive interval of "ticks" of "clock", times weight */
static pg_attribute_always_inline void
ts_clock_accum(TsClock clock, instr_time *counter, int64 ticks, uint64 weight)
{
#ifdef TS_CORE_CLOCK
	counter->ticks += ticks * (int64) weight;
#else
	ts_instr_time_add_ns(counter, tsclock_ticks_to_ns((uint64) ticks) * weight);
#endif
}

/*
 * Keep a counter at most "ticks" of "clock" (a positive interval): a
 * sampled node's estimate for its current loop may not exceed the wall time
 * since the loop started.  Called on sampled calls only.
 */
static void
ts_clock_clamp(TsClock clock, instr_time *counter, int64 ticks)
{
#ifdef TS_CORE_CLOCK
	if (counter->ticks > ticks)
		counter->ticks = ticks;
#else
	uint64		ns = tsclock_ticks_to_ns((uint64) ticks);

	if (INSTR_TIME_GET_DOUBLE(*counter) * 1e9 > (double) ns)
	{
		INSTR_TIME_SET_ZERO(*counter);
		ts_instr_time_add_ns(counter, ns);
	}
#endif
}

#ifndef TS_CORE_CLOCK
/*
 * Per-query watchdog (15-18 only: on 19 the clock is core's, and so is
 * the decision to trust it).  A query timed with the TSC also measures its
 * whole execution, ExecutorStart to ExecutorEnd, on both clocks.  Each end
 * reads the system clock between two RDTSCP reads, several times, and keeps
 * the tightest bracket: a preemption between the reads only widens a
 * bracket, and the widths enter the comparison as its uncertainty, so it
 * cannot fake a mismatch.  Intervals of at least TS_WATCHDOG_MIN_NS whose
 * clocks disagree by more than TS_WATCHDOG_MAX_PCT beyond that uncertainty
 * stop the TSC.
 */
#define TS_WATCHDOG_MIN_NS		(10 * 1000 * 1000)	/* 10 ms */
#define TS_WATCHDOG_MAX_PCT		1.0
#define TS_WATCHDOG_BRACKETS	4

typedef struct TsWatch
{
	QueryDesc  *queryDesc;
	uint64		tsc;			/* bracket midpoint */
	uint64		width;			/* bracket width, ticks */
	uint64		ns;				/* system clock inside the bracket */
	struct TsWatch *next;
	MemoryContextCallback cb;
} TsWatch;

/* queries being watched, innermost first (nesting makes several) */
static TsWatch *ts_watches = NULL;
#endif

/* Core's static ExecProcNodeFirst, learned in ts_instrument_init() */
static ExecProcNodeMtd ts_core_first = NULL;

/*
 * Sampled timing (timing_source.sample_every = N > 1).  A sampled node's
 * Instrumentation is replaced at bind time by this larger struct, core's
 * part first, so that core keeps using it as before.  Each node times the
 * first call of every loop (so startup times stay exact) and, in addition,
 * each other call independently with probability 1/N: the gap to the next
 * sampled call is drawn from the geometric distribution, so no periodic
 * workload can alias with the choice.  A sampled call adds N times its
 * duration (the Horvitz-Thompson estimator: unbiased for the node's total
 * whatever the distribution of call durations); unsampled calls read no
 * clock.
 *
 * The estimator's variance is that of its rare slow calls times N: a
 * sampled call that was preempted for a few milliseconds (common with more
 * busy processes than CPUs, parallel workers included) counts N times.  So
 * after each sampled call the loop's estimate is capped at the wall time
 * since the loop's first call began, which no node can exceed: an estimate
 * may still be high, but never longer than the node has been running.
 */
typedef struct TsInstrumentation
{
	TsNodeInstr instr;			/* core's, must be first */
	uint64		weight;			/* N */
	int64		countdown;		/* calls until the next sampled one */
	double		inv_log_q;		/* 1 / ln(1 - 1/N), for the gap */
	int64		loop_start;		/* clock reading at the loop's first call */
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
	/* any clock will do for a seed: the TSC through 18, core's on 19 */
	ts_rng_state = (uint64) ts_clock_read(TS_CLK_OWN_TSC) ^
		((uint64) MyProcPid << 32) ^ UINT64CONST(0x9E3779B97F4A7C15);
	if (ts_rng_state == 0)
		ts_rng_state = 1;
	ts_rng_pid = MyProcPid;
}

/* Calls until the next sampled one: geometric with p = 1/N, at least 1 */
static pg_noinline int64
ts_sample_gap(TsInstrumentation *ti)
{
	/* u uniform in (0, 1] */
	double		u = ((double) (ts_rng_next() >> 11) + 1.0) *
		(1.0 / 9007199254740992.0);

	return 1 + (int64) floor(log(u) * ti->inv_log_q);
}

/* How a wrapper times: not at all (rows only), every call, or sampled */
typedef enum TsTiming
{
	TS_TIME_NONE,
	TS_TIME_EXACT,
	TS_TIME_SAMPLED
} TsTiming;

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
 * The copy and comparison above are what this costs; compiled for the
 * x86-64 baseline they are 16-byte moves, about 3 ns a call for a 128-byte
 * BufferUsage on an AMD EPYC (test/bench/usage_snapshot.c).  The wide
 * wrappers are the same code compiled for AVX2, with the 32-byte snapshots
 * of usage_snap.h, chosen per node (ts_node_usage) where the CPU and the
 * kernel support it (ts_instrument_init).
 */
typedef enum TsUsage
{
	TS_USAGE_NONE,
	TS_USAGE_FULL,
	TS_USAGE_WIDE
} TsUsage;

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
#define TS_WIDE(name)			name
#define TS_USE_WIDE				ts_usage_wide
#else
#define TS_WIDE_WRAPPER(name, timing, clock)
#define TS_WIDE(name)			NULL
#define TS_USE_WIDE				false
#endif

/*
 * The body of every wrapper.  "timing", "clock" and "usage" are
 * compile-time constants in each caller, so each variant contains only its
 * own tests: TS_USAGE_FULL adds buffer/WAL usage and async mode,
 * TS_USAGE_WIDE buffer/WAL usage alone, with AVX2.
 */
static pg_attribute_always_inline TupleTableSlot *
ts_exec_proc_node_body(PlanState *node, TsTiming timing, TsClock clock,
					   TsUsage usage)
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
	bool		timed;
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
	else if (timing == TS_TIME_SAMPLED)
	{
		TsInstrumentation *ti = (TsInstrumentation *) instr;

		/*
		 * The first call of a loop is always timed, at weight 1 (and so
		 * are an async node's calls before its first tuple): startup times
		 * stay exact.  Other calls are timed when their countdown ends.
		 */
		if (unlikely(!instr->running) ||
			(async && instr->async_mode && instr->tuplecount < 1.0))
			timed = true;
		else if (likely(--ti->countdown > 0))
			timed = false;
		else
		{
			timed = true;
			weight = ti->weight;
			ti->countdown = ts_sample_gap(ti);
		}
	}
	else
		timed = false;

	if (timed)
		start = ts_clock_read(clock);
	result = node->ExecProcNodeReal(node);
	if (timed)
	{
		int64		end = ts_clock_read(clock);
		int64		ticks = end - start;

		/*
		 * The TSC is invariant and synchronized across CPUs whenever the
		 * session may use it, and the system clock is monotonic, so a
		 * negative difference cannot really happen; should it, count
		 * nothing rather than an absurd interval.
		 */
		if (likely(ticks > 0))
			ts_clock_accum(clock, &instr->counter, ticks, weight);
		if (timing == TS_TIME_SAMPLED)
		{
			TsInstrumentation *ti = (TsInstrumentation *) instr;

			if (unlikely(!instr->running))
				ti->loop_start = start;
			else if (weight > 1 && end > ti->loop_start)
				ts_clock_clamp(clock, &instr->counter, end - ti->loop_start);
		}
		if (clock != TS_CLK_CORE_SYSTEM)
			ts_pending_calls++;
	}

	if (usage == TS_USAGE_FULL)
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
	if (unlikely(!instr->running))
	{
		instr->running = true;
		TS_INSTR_SET_FIRSTTUPLE(instr);
	}
	else if (async && instr->async_mode && instr->tuplecount < 1.0)
		TS_INSTR_SET_FIRSTTUPLE(instr);

	if (!TupIsNull(result))
		instr->tuplecount += 1.0;

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
	}

	return node->ExecProcNode(node);
}

/* The wrappers of one clock, and the first-call functions that pick them */
typedef struct TsWrapperSet
{
	ExecProcNodeMtd first;		/* every call timed */
	ExecProcNodeMtd first_sampled;	/* timing_source.sample_every > 1 */
	ExecProcNodeMtd sampled;
	ExecProcNodeMtd sampled_full;
	ExecProcNodeMtd sampled_wide;
} TsWrapperSet;

#define TS_WRAPPER(name, timing, clock, usage) \
static TS_WRAPPER_TARGET_##usage TupleTableSlot * \
name(PlanState *node) \
{ \
	return ts_exec_proc_node_body(node, timing, clock, usage); \
}
#define TS_WRAPPER_TARGET_TS_USAGE_NONE
#define TS_WRAPPER_TARGET_TS_USAGE_FULL
#define TS_WRAPPER_TARGET_TS_USAGE_WIDE TS_WIDE_TARGET

#define TS_WRAPPER_SET(set, clock) \
TS_WRAPPER(set##_timer, TS_TIME_EXACT, clock, TS_USAGE_NONE) \
TS_WRAPPER(set##_full, TS_TIME_EXACT, clock, TS_USAGE_FULL) \
TS_WIDE_WRAPPER(set##_wide, TS_TIME_EXACT, clock) \
TS_WRAPPER(set##_sampled, TS_TIME_SAMPLED, clock, TS_USAGE_NONE) \
TS_WRAPPER(set##_sampled_full, TS_TIME_SAMPLED, clock, TS_USAGE_FULL) \
TS_WIDE_WRAPPER(set##_sampled_wide, TS_TIME_SAMPLED, clock) \
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
static const TsWrapperSet set = { \
	set##_first, set##_first_sampled, set##_sampled, set##_sampled_full, \
	TS_WIDE(set##_sampled_wide) \
};

#ifdef TS_CORE_CLOCK
/* 19: core's clock, as core had chosen it when the query started */
#if TS_CORE_HAVE_TSC
TS_WRAPPER_SET(ts_wrappers_core_tsc, TS_CLK_CORE_TSC)
#endif
TS_WRAPPER_SET(ts_wrappers_core_system, TS_CLK_CORE_SYSTEM)
#else
/* 15-18: the extension's TSC */
TS_WRAPPER_SET(ts_wrappers_tsc, TS_CLK_OWN_TSC)
#endif

/* no timer (TIMING OFF): rows, loops and usage only, no clock */
TS_WRAPPER(ts_exec_proc_node_rows, TS_TIME_NONE, TS_CLK_CORE_SYSTEM, TS_USAGE_NONE)
TS_WRAPPER(ts_exec_proc_node_rows_full, TS_TIME_NONE, TS_CLK_CORE_SYSTEM, TS_USAGE_FULL)
TS_WIDE_WRAPPER(ts_exec_proc_node_rows_wide, TS_TIME_NONE, TS_CLK_CORE_SYSTEM)

static TupleTableSlot *
ts_exec_proc_node_first_rows(PlanState *node)
{
	return ts_first_call(node, ts_exec_proc_node_rows, ts_exec_proc_node_rows_full,
						 TS_WIDE(ts_exec_proc_node_rows_wide));
}

#ifdef TS_HAVE_EXPLAIN_NODE_HOOK
/* Whether a node was bound with sampled timing, and its N (0 if not) */
static bool
ts_is_sampled(PlanState *node, const TsWrapperSet *set)
{
	return node->ExecProcNode == set->first_sampled ||
		node->ExecProcNode == set->sampled ||
		node->ExecProcNode == set->sampled_full ||
		node->ExecProcNode == set->sampled_wide;
}

static uint64
ts_node_sample_every(PlanState *node)
{
#ifdef TS_CORE_CLOCK
	if (
#if TS_CORE_HAVE_TSC
		ts_is_sampled(node, &ts_wrappers_core_tsc) ||
#endif
		ts_is_sampled(node, &ts_wrappers_core_system))
#else
	if (ts_is_sampled(node, &ts_wrappers_tsc))
#endif
		return ((TsInstrumentation *) node->instrument)->weight;
	return 0;
}
#endif

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

typedef struct TsBindContext
{
	int			ntimed;			/* nodes bound to a timed wrapper */
	int			nrows;			/* nodes bound to a clock-less wrapper */
	int			nusage[TS_USAGE_WIDE + 1];	/* bound nodes by variant */
	int			sample_every;	/* > 1: sampled timing */
	const TsWrapperSet *set;	/* the clock's wrappers */
	MemoryContext cxt;			/* the query's memory */
	List	   *timed;			/* 19: PlanStates bound to a timed wrapper */
} TsBindContext;

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

	if (node->instrument != NULL &&
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
			if (bc->sample_every > 1)
			{
				TsInstrumentation *ti = MemoryContextAlloc(bc->cxt, sizeof(TsInstrumentation));

				memcpy(&ti->instr, node->instrument, sizeof(TsNodeInstr));
				ti->weight = (uint64) bc->sample_every;
				ti->inv_log_q = 1.0 / log1p(-1.0 / (double) bc->sample_every);
				ti->countdown = ts_sample_gap(ti);
				ti->loop_start = 0;
				node->instrument = &ti->instr;
				node->ExecProcNode = bc->set->first_sampled;
			}
			else
				node->ExecProcNode = bc->set->first;
			bc->ntimed++;
#ifdef TS_CORE_CLOCK
			bc->timed = lappend(bc->timed, node);
#endif
		}
		bc->nusage[ts_node_usage(node->instrument)]++;
	}

	return planstate_tree_walker(node, ts_bind_node, context);
}

#ifndef TS_CORE_CLOCK
/*
 * Both clocks at one instant: RDTSCP brackets around a system clock read,
 * the tightest kept.  A bracket of 1 us or less (about 60 ns unpreempted)
 * is as good as it gets, so normally one is enough; up to
 * TS_WATCHDOG_BRACKETS are tried when a preemption widened the first.
 */
static void
ts_watch_read(TsWatch *w)
{
	int			i;
	uint64		good = Max(tsclock_info.khz / 1000, 1);	/* 1 us of ticks */

	w->width = PG_UINT64_MAX;
	for (i = 0; i < TS_WATCHDOG_BRACKETS && w->width > good; i++)
	{
		uint64		t0,
					t1,
					ns;

		t0 = tsclock_read_ordered();
		ns = tsclock_system_ns();
		t1 = tsclock_read_ordered();
		if (t1 >= t0 && t1 - t0 < w->width)
		{
			w->width = t1 - t0;
			w->tsc = t0 + (t1 - t0) / 2;
			w->ns = ns;
		}
	}
}

static void
ts_watch_unlink(TsWatch *w)
{
	TsWatch   **p;

	for (p = &ts_watches; *p != NULL; p = &(*p)->next)
	{
		if (*p == w)
		{
			*p = w->next;
			return;
		}
	}
}

/* the query's memory goes away (normally after ExecutorEnd, or on error) */
static void
ts_watch_forget(void *arg)
{
	ts_watch_unlink((TsWatch *) arg);
}

static void
ts_watch_start(QueryDesc *queryDesc)
{
	MemoryContext cxt = queryDesc->estate->es_query_cxt;
	TsWatch    *w = MemoryContextAllocZero(cxt, sizeof(TsWatch));

	w->queryDesc = queryDesc;
	w->cb.func = ts_watch_forget;
	w->cb.arg = w;
	MemoryContextRegisterResetCallback(cxt, &w->cb);
	w->next = ts_watches;
	ts_watches = w;
	ts_watch_read(w);
}

/* Compare the clocks over the query; stop the TSC if they disagree */
static void
ts_watch_end(TsWatch *start)
{
	TsWatch		end;
	int64		sys_ns;
	double		tsc_ns,
				slack_ns,
				diff_pct;
	bool		failed;
	char		reason[256];

	/*
	 * A query much shorter than TS_WATCHDOG_MIN_NS is not judged: skip the
	 * end brackets then, which most of a short query's watchdog cost is.
	 * Measured on the TSC, so "much shorter" is half: a TSC running at half
	 * its assumed rate still gets every query of 20 ms or more checked.
	 */
	if (tsclock_read_fast() - start->tsc <
		(uint64) tsclock_info.khz * (TS_WATCHDOG_MIN_NS / 2) / 1000000)
	{
		ts_watch_unlink(start);
		return;
	}

	ts_watch_read(&end);
	ts_watch_unlink(start);

	sys_ns = (int64) (end.ns - start->ns);
	if (end.ns < start->ns || sys_ns < TS_WATCHDOG_MIN_NS)
		return;

	/*
	 * Each midpoint is within half its bracket of the counter at its clock
	 * read, and each clock read is good to 1 ns.  An interval whose
	 * brackets are too wide to judge 1% is not a check at all.
	 */
	slack_ns = (double) tsclock_ticks_to_ns((start->width + end.width) / 2) + 2.0;
	if (slack_ns > sys_ns * (TS_WATCHDOG_MAX_PCT / 100.0) / 2)
		return;

	tsc_ns = end.tsc >= start->tsc ?
		(double) tsclock_ticks_to_ns(end.tsc - start->tsc) : -1.0;
	diff_pct = (tsc_ns - (double) sys_ns) / (double) sys_ns * 100.0;
	failed = tsc_ns < 0 ||
		fabs(tsc_ns - (double) sys_ns) - slack_ns >
		(double) sys_ns * (TS_WATCHDOG_MAX_PCT / 100.0);

	ts_stats_watchdog(failed);
	if (!failed)
		return;

	snprintf(reason, sizeof(reason),
			 "The per-query watchdog found the TSC, at %llu kHz, %+.1f%% off the system clock over a query of %.1f ms.",
			 (unsigned long long) tsclock_info.khz, diff_pct, sys_ns / 1e6);
	ts_distrust_tsc(reason);

	ereport(WARNING,
			(errcode(ERRCODE_WARNING),
			 errmsg("timing_source: the TSC and the system clock disagree by %.1f%% over this query",
					fabs(diff_pct)),
			 errdetail("The system clock measured %.3f ms and the TSC, at %llu kHz, %.3f ms. "
					   "This query's per-node times are suspect. timing_source has stopped using the TSC %s.",
					   sys_ns / 1e6, (unsigned long long) tsclock_info.khz,
					   tsc_ns / 1e6,
					   ts_shared_is_shared() ? "in every session until the server restarts" :
					   "in this session"),
			 errhint("The TSC frequency in use is wrong, or the TSC's rate changed (for example after a virtual machine moved to another host). "
					 "timing_source_tsc() shows the watchdog's counts; restart the server to detect the TSC again.")));
}
#endif							/* !TS_CORE_CLOCK */

#ifdef TS_CORE_CLOCK
/*
 * 19: a query whose nodes are bound to core's clock, the unit its
 * wrappers' ticks are in (core's ticks-to-ns factor when it started) and
 * the nodes they time.
 *
 * Core converts every instr_time to nanoseconds when EXPLAIN prints, with
 * the factor current then; a superuser's SET timing_clock_source inside
 * the query (in a function it calls, say) changes that factor, and
 * core's own wrappers then mix ticks of two clocks in one counter.  The
 * extension's wrappers keep reading the clock the query started with, in
 * its unit, and ExecutorFinish, after the last node has run and before
 * EXPLAIN or auto_explain print, converts their nodes' times into the
 * unit core will print them with.
 */
typedef struct TsBoundQuery
{
	QueryDesc  *queryDesc;
	uint64		unit;			/* ts_core_ticks_unit() when bound */
	List	   *nodes;			/* PlanStates bound to a timed wrapper */
	struct TsBoundQuery *next;
	MemoryContextCallback cb;
} TsBoundQuery;

/* queries bound, innermost first (nesting makes several) */
static TsBoundQuery *ts_bound_queries = NULL;

static ExecutorFinish_hook_type prev_ExecutorFinish = NULL;

static void
ts_bound_forget(void *arg)
{
	TsBoundQuery **p;

	for (p = &ts_bound_queries; *p != NULL; p = &(*p)->next)
	{
		if (*p == (TsBoundQuery *) arg)
		{
			*p = (*p)->next;
			return;
		}
	}
}

static void
ts_bound_remember(QueryDesc *queryDesc, List *nodes)
{
	MemoryContext cxt = queryDesc->estate->es_query_cxt;
	TsBoundQuery *bq = MemoryContextAllocZero(cxt, sizeof(TsBoundQuery));

	bq->queryDesc = queryDesc;
	bq->unit = ts_core_ticks_unit();
	bq->nodes = nodes;
	bq->cb.func = ts_bound_forget;
	bq->cb.arg = bq;
	MemoryContextRegisterResetCallback(cxt, &bq->cb);
	bq->next = ts_bound_queries;
	ts_bound_queries = bq;
}

static inline void
ts_rebase_time(instr_time *t, uint64 from_unit)
{
	t->ticks = ts_core_ns_to_ticks(ts_core_ticks_to_ns(t->ticks, from_unit));
}

static void
ts_rebase_node(NodeInstrumentation *ni, uint64 from_unit)
{
	ts_rebase_time(&ni->counter, from_unit);
	ts_rebase_time(&ni->firsttuple, from_unit);
	ts_rebase_time(&ni->startup, from_unit);
	ts_rebase_time(&ni->instr.total, from_unit);
}

/*
 * Times of a bound query's nodes, so far in the unit of the clock it
 * started with, into the unit core converts with now.  Parallel workers'
 * figures, which the leader has added to its nodes and keeps per worker,
 * are taken to be in the same unit as the leader's (the workers bound
 * their nodes when the leader launched them, with the leader's settings).
 */
static void
ts_bound_rebase(TsBoundQuery *bq)
{
	uint64		now = ts_core_ticks_unit();
	ListCell   *lc;

	if (now == bq->unit)
		return;

	foreach(lc, bq->nodes)
	{
		PlanState  *node = (PlanState *) lfirst(lc);

		ts_rebase_node(node->instrument, bq->unit);
		if (node->worker_instrument != NULL)
		{
			for (int i = 0; i < node->worker_instrument->num_workers; i++)
				ts_rebase_node(&node->worker_instrument->instrument[i], bq->unit);
		}
	}

	ereport(DEBUG1,
			(errmsg_internal("timing_source: timing_clock_source changed during the query; times of %d plan nodes converted to the new clock's unit",
							 list_length(bq->nodes))));
	bq->unit = now;
}

static void
ts_ExecutorFinish(QueryDesc *queryDesc)
{
	TsBoundQuery *bq;

	if (prev_ExecutorFinish)
		prev_ExecutorFinish(queryDesc);
	else
		standard_ExecutorFinish(queryDesc);

	for (bq = ts_bound_queries; bq != NULL; bq = bq->next)
	{
		if (bq->queryDesc == queryDesc)
		{
			ts_bound_rebase(bq);
			break;
		}
	}
}
#endif							/* TS_CORE_CLOCK */

static void
ts_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	TsClock		clock;
	const TsWrapperSet *set;
	EState	   *estate;
	TsBindContext bc;
	ListCell   *lc;
	MemoryContext oldcxt;
#ifndef TS_CORE_CLOCK
	bool		use_tsc;
#endif

	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);

	/* Cheap checks first: most queries are not instrumented at all */
	if (queryDesc->instrument_options == 0 ||
		queryDesc->planstate == NULL ||
		(eflags & EXEC_FLAG_EXPLAIN_ONLY) != 0)
		return;

#ifdef TS_CORE_CLOCK

	/*
	 * 19: core's clock as core uses it now, for the whole query; a worker
	 * has its leader's settings, timing_source.node_wrappers included.
	 */
	if (!ts_node_wrappers)
		return;
#if TS_CORE_HAVE_TSC
	if (ts_core_uses_tsc())
	{
		clock = TS_CLK_CORE_TSC;
		set = &ts_wrappers_core_tsc;
	}
	else
#endif
	{
		clock = TS_CLK_CORE_SYSTEM;
		set = &ts_wrappers_core_system;
	}
#else

	/*
	 * Decide (this brings the process's view up to date), then pass the
	 * decision on: workers this query starts must decide as this process
	 * does now, also when that is the system clock.
	 */
	use_tsc = ts_session_uses_tsc();
	ts_export_decision();
	if (!use_tsc)
		return;
	clock = TS_CLK_OWN_TSC;
	set = &ts_wrappers_tsc;
#endif

	estate = queryDesc->estate;
	bc.ntimed = bc.nrows = 0;
	memset(bc.nusage, 0, sizeof(bc.nusage));
	bc.sample_every = ts_sample_every;
	bc.set = set;
	bc.cxt = estate->es_query_cxt;
	bc.timed = NIL;
	if (bc.sample_every > 1)
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
								 clock == TS_CLK_CORE_SYSTEM ? "system clock" : "TSC",
								 bc.sample_every > 1 ? psprintf(", sampled 1 in %d calls", bc.sample_every) : "")));
	else
		ereport(DEBUG1,
				(errmsg_internal("timing_source: %d plan nodes counted without a clock",
								 bc.nrows)));
	if (bc.nusage[TS_USAGE_FULL] + bc.nusage[TS_USAGE_WIDE] > 0)
		ereport(DEBUG2,
				(errmsg_internal("timing_source: buffer/WAL usage kept with AVX2 for %d plan nodes, with plain copies for %d",
								 bc.nusage[TS_USAGE_WIDE], bc.nusage[TS_USAGE_FULL])));

	if (bc.ntimed == 0)
		return;
#ifdef TS_CORE_CLOCK
	ts_bound_remember(queryDesc, bc.timed);
#else
	if (!IsParallelWorker())
		ts_watch_start(queryDesc);
#endif
}

#ifdef TS_HAVE_EXPLAIN_NODE_HOOK
static explain_per_node_hook_type prev_explain_per_node = NULL;

/*
 * EXPLAIN (and auto_explain) of a query timed with sampling: say so once,
 * on the top plan node, since its times are estimates.
 */
static void
ts_explain_per_node(PlanState *planstate, List *ancestors,
					const char *relationship, const char *plan_name,
					struct ExplainState *es)
{
	uint64		n;

	if (prev_explain_per_node)
		prev_explain_per_node(planstate, ancestors, relationship, plan_name, es);

	if (ancestors == NIL && es->analyze && es->timing &&
		(n = ts_node_sample_every(planstate)) > 1)
		ExplainPropertyText("Timing",
							psprintf("sampled, 1 in " UINT64_FORMAT " calls", n),
							es);
}
#endif

static void
ts_ExecutorEnd(QueryDesc *queryDesc)
{
#ifndef TS_CORE_CLOCK
	TsWatch    *w;

	for (w = ts_watches; w != NULL; w = w->next)
	{
		if (w->queryDesc == queryDesc)
		{
			ts_watch_end(w);
			break;
		}
	}
#endif

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
#ifdef TS_CORE_CLOCK
	/* 19: the wrappers read whichever clock core uses */
	return ts_node_wrappers;
#else
	/* 15-18: only the TSC's wrappers sample; core times the system clock */
	return tsc;
#endif
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
#ifdef TS_CORE_CLOCK
	prev_ExecutorFinish = ExecutorFinish_hook;
	ExecutorFinish_hook = ts_ExecutorFinish;
#endif
#ifdef TS_HAVE_EXPLAIN_NODE_HOOK
	prev_explain_per_node = explain_per_node_hook;
	explain_per_node_hook = ts_explain_per_node;
#endif
}

#else							/* !(TS_HAVE_EXECUTOR_HOOK && (TSCLOCK_HAVE_TSC
								 * || TS_CORE_CLOCK)) */

/*
 * No TSC in this build of an extension for 15-18, or instr_time is not in
 * nanoseconds, or a major the wrappers do not know (20devel): only core's
 * own path is offered.  Nothing to install.
 */
bool
ts_instrument_samples(bool tsc)
{
	return false;
}

void
ts_instrument_init(void)
{
}

#endif
