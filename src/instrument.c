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
 * (core's clock).  What the timing itself costs each node, and its
 * subtraction (timing_source.subtract_overhead), is in overhead.c, which
 * shares the node's state with this file through instrument_private.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "instrument_private.h"
#include "profile.h"
#include "track.h"
#include "usage_snap.h"

#ifdef TS_HAVE_NODE_WRAPPERS

#include <math.h>

#include "access/parallel.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "nodes/nodeFuncs.h"
#include "storage/dsm.h"

static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static ExecutorEnd_hook_type prev_ExecutorEnd = NULL;
static ExecutorFinish_hook_type prev_ExecutorFinish = NULL;

/*
 * Plan node calls timed with the TSC by this process since it last added
 * them to the shared count (at ExecutorEnd): one increment per call here,
 * one atomic add per query there.
 */
uint64		ts_pending_calls = 0;

/* Core's static ExecProcNodeFirst, learned in ts_instrument_init() */
static ExecProcNodeMtd ts_core_first = NULL;

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
double
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

	w = Min(Max(w, 1), ti->weight);

	/*
	 * timing_source.sample_budget B: past N B calls the weight grows on as
	 * ceil(k / B), which is N + 1 just past it, so the k-th call is timed
	 * with probability about B / k and a node of K calls times some
	 * B (1 + ln(K / (N B))) of them.  The weight only grows, as the
	 * thinning below needs.
	 */
	if (unlikely(k > ti->thin_after))
		w = Max(w, (uint64) ((k + ti->budget - 1) / ti->budget));
	return w;
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
	 * Past sample_budget's N B calls the weight grows again, and the
	 * candidates drawn at N or more are thinned as in the warm-up.
	 */
	if (likely(ti->gap_weight == ti->weight && k <= ti->thin_after))
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
TsUsage
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
void
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

				slot = ts_probe_timed(node, timer, &ns);
				if (unlikely(!ts_probe_call_short(ns)) && !TupIsNull(slot))
				{
					/* too long a call to probe among (insitu.h): no probe */
					ts_probe_end(ti);
					return slot;
				}
				ti->probes += 1.0;
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

StaticAssertDecl(lengthof(ts_wrapper_sets) == TS_WRAPPER_SETS,
				 "TS_WRAPPER_SETS counts the wrapper sets built");

/* a set's place in ts_wrapper_sets, for what is kept per set */
int
ts_wrapper_set_index(const TsWrapperSet *set)
{
	for (int i = 0; i < lengthof(ts_wrapper_sets); i++)
	{
		if (ts_wrapper_sets[i] == set)
			return i;
	}
	elog(ERROR, "timing_source: unknown set of node wrappers");
	return -1;
}

/*
 * The set's exact and probed wrappers of one usage variant, and the
 * clock-less one of the same variant
 */
void
ts_variant_wrappers(const TsWrapperSet *set, TsUsage usage,
					TsVariantWrappers *w)
{
	switch (usage)
	{
		case TS_USAGE_NONE:
			w->timer = set->timer;
			w->probed = set->probed;
			w->rows = ts_exec_proc_node_rows;
			return;
		case TS_USAGE_FULL:
			w->timer = set->full;
			w->probed = set->probed_full;
			w->rows = ts_exec_proc_node_rows_full;
			return;
		case TS_USAGE_WIDE:
			w->timer = set->wide;
			w->probed = set->probed_wide;
			w->rows = TS_WIDE(ts_exec_proc_node_rows_wide);
			return;
		case TS_USAGE_SAMPLED:
			break;
	}
	elog(ERROR, "timing_source: no exact wrappers of usage variant %d",
		 (int) usage);
}

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
 * Calls of different processes are independent as well: a node that
 * parallel workers ran adds their figures, which they leave for the
 * leader (worker_sampling.c), to its own.  Where a worker's did not
 * arrive, the node has no interval: its total has the worker's sampled
 * calls, but their spread is not known here.
 */
bool
ts_node_sample_estimate(PlanState *node, TsSampleEstimate *est)
{
	TsInstrumentation *ti;
	TsSampling all;
	bool		exact;
	bool		workers_missing = false;

	if (node->instrument == NULL || ts_node_sample_every(node) <= 1)
		return false;
	ti = (TsInstrumentation *) node->instrument;

	ts_node_sampling(ti, &all);
	est->sample_every = ti->weight;
	/* the rate the leader's calls ended at: workers' are not kept */
	est->thinned_to = (int64) all.other_calls > ti->thin_after ?
		ts_warm_weight(ti, (int64) all.other_calls) : 0;
	if (ts_instr_workers_ran(node))
		workers_missing = !ts_worker_sampling_collect(node, &all);
	/* a check of the leader's calls alone is no check of the whole */
	est->check_ns = workers_missing ? -1.0 : all.check_ns;

	est->sampled_calls = all.sampled;
	est->other_calls = all.other_calls;
	est->total_ns = ts_instr_total_ns(node->instrument);
	est->capped_ns = all.capped_ns;
	est->margin_ns = 1.96 * sqrt(all.var_ns2) + all.capped_ns;
	/* every call timed at weight 1: the first of each loop or the warm-up */
	exact = (all.other_calls <= all.warm) && !workers_missing;
	est->exact = exact;

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

	if (workers_missing)
		est->why = TS_ESTIMATE_WORKERS;
	else if (!exact && all.sampled < TS_MIN_SAMPLED_CALLS)
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
bool
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
	int			sample_budget;	/* timing_source.sample_budget, 0: none */
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
	ti->run_calls = -1.0;
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
				ti->budget = (uint64) bc->sample_budget;
				ti->thin_after = bc->sample_budget > 0 ?
					(int64) bc->sample_every * bc->sample_budget : PG_INT64_MAX;
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

static TsQueryList ts_plans;

/* the entry of the query a plan state belongs to, or NULL */
TsPlanEntry *
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
bool
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

/* whether the node is timed exactly with probes (insitu.h), by any clock */
bool
ts_node_probed(PlanState *node)
{
	for (int i = 0; i < lengthof(ts_wrapper_sets); i++)
	{
		if (ts_is_exact(node, ts_wrapper_sets[i]))
			return ((TsInstrumentation *) node->instrument)->probed;
	}
	return false;
}

bool
ts_plan_timing(PlanState *node, TsPlanTiming *timing)
{
	TsPlanEntry *plan = ts_plan_of(node);

	if (plan == NULL)
		return false;
	timing->clock = plan->set->clock;
	timing->sample_every = plan->sample_every;
	timing->sample_budget = plan->sample_budget;
	timing->subtracted = plan->subtract && plan->sample_every <= 1;
	return true;
}

static void ts_executor_start_bind(QueryDesc *queryDesc, int eflags);

/*
 * Whether exactly timed nodes run probes (insitu.h): only where the cost
 * is subtracted, so that plain exact timing stays exact to the call, and
 * neither in a sampled nor in a profiled run
 */
static inline bool
ts_probing(bool profile, int sample_every)
{
	return ts_subtract_overhead && !profile && sample_every <= 1;
}

/*
 * A sampled or probed parallel plan's segment for its workers' figures is
 * made before ExecutorStart enters parallel mode (worker_sampling.c), and
 * kept by the plan's entry if the plan is sampled or probed after all.
 */
static void
ts_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	dsm_segment *workers;
	TsPlanEntry *plan;
	bool		tracked = ts_tracked_statement(queryDesc);

	/* a worker of a checked query checks as its leader does */
	if (IsParallelWorker())
		ts_sample_check = ts_worker_sampling_checked();
	workers = ts_worker_sampling_prepare(queryDesc, eflags,
										 tracked ? 1 : ts_sample_every,
										 ts_sample_check,
										 !tracked &&
										 ts_probing(ts_profile_next, ts_sample_every));
	ts_executor_start_bind(queryDesc, eflags);
	if (workers == NULL)
		return;
	plan = ts_query_find(&ts_plans, queryDesc);
	if (plan != NULL && (plan->sample_every > 1 || plan->subtract))
		plan->workers = workers;
	else
		dsm_detach(workers);
}

static void
ts_executor_start_bind(QueryDesc *queryDesc, int eflags)
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
	/* like sample_buffers, the session's own sampling only */
	bc.sample_budget = bc.sample_every > 1 && !ts_tracked_statement(queryDesc) ?
		ts_sample_budget : 0;
	bc.nsampled_usage = 0;

	/*
	 * Probes (see ts_probing), and in a parallel worker only where its
	 * leader, which estimates the worker's calls (see below), will see
	 * them (worker_sampling.c)
	 */
	bc.probe = ts_probing(bc.profile, bc.sample_every) &&
		(queryDesc->instrument_options & INSTRUMENT_TIMER) != 0 &&
		(!IsParallelWorker() || ts_worker_probes_wanted(queryDesc));
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
								 bc.sample_every > 1 ? psprintf(", sampled 1 in %d calls%s", bc.sample_every,
																bc.sample_budget > 0 ? psprintf(", budget %d", bc.sample_budget) : "") : "")));
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
		plan->sample_budget = bc.sample_budget;
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
 * adjusted.  What the plan's data-modifying CTEs have run so far is noted
 * first: ExecutorFinish runs the rest of them outside every node.
 */
static void
ts_ExecutorFinish(QueryDesc *queryDesc)
{
	TsPlanEntry *plan = ts_query_find(&ts_plans, queryDesc);

	if (plan != NULL)
		ts_overhead_mark_run(queryDesc, plan);

	if (prev_ExecutorFinish)
		prev_ExecutorFinish(queryDesc);
	else
		standard_ExecutorFinish(queryDesc);

	if (plan != NULL)
		ts_overhead_finish(queryDesc, plan);
	/* a worker's part of the plan has run: its sampling figures */
	if (IsParallelWorker())
		ts_worker_sampling_report(queryDesc);
}

static void
ts_ExecutorEnd(QueryDesc *queryDesc)
{
	PlanState  *top = queryDesc->planstate;
	TsPlanEntry *plan = ts_query_find(&ts_plans, queryDesc);

	/* read until the plans are printed (auto_explain, in ExecutorEnd) */
	dsm_segment *workers = plan != NULL ? plan->workers : NULL;

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
	if (workers != NULL)
		dsm_detach(workers);
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

#ifdef TS_HAVE_EXECUTOR_HOOK
uint64
ts_node_usage_sampled(PlanState *node)
{
	return 0;
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
