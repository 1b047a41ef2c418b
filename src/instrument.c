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
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "timing_source.h"

#ifdef TS_HAVE_EXECUTOR_HOOK
#include <math.h>

#include "access/parallel.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "nodes/nodeFuncs.h"
#endif

#if defined(TS_HAVE_EXECUTOR_HOOK) && defined(TSCLOCK_HAVE_TSC)

static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static ExecutorEnd_hook_type prev_ExecutorEnd = NULL;

/*
 * Plan node calls timed with the TSC by this process since it last added
 * them to the shared count (at ExecutorEnd): one increment per call here,
 * one atomic add per query there.
 */
static uint64 ts_pending_calls = 0;

/*
 * Per-query watchdog.  A query timed with the TSC also measures its whole
 * execution, ExecutorStart to ExecutorEnd, on both clocks.  Each end reads
 * the system clock between two RDTSCP reads, several times, and keeps the
 * tightest bracket: a preemption between the reads only widens a bracket,
 * and the widths enter the comparison as its uncertainty, so it cannot
 * fake a mismatch.  Intervals of at least TS_WATCHDOG_MIN_NS whose clocks
 * disagree by more than TS_WATCHDOG_MAX_PCT beyond that uncertainty stop
 * the TSC.
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
 */
typedef struct TsInstrumentation
{
	Instrumentation instr;		/* core's, must be first */
	uint64		weight;			/* N */
	int64		countdown;		/* calls until the next sampled one */
	double		inv_log_q;		/* 1 / ln(1 - 1/N), for the gap */
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
	ts_rng_state = tsclock_read_fast() ^ ((uint64) MyProcPid << 32) ^
		UINT64CONST(0x9E3779B97F4A7C15);
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
 * The body of every wrapper.  "timing" and "full" are compile-time
 * constants in each caller, so each variant contains only its own tests:
 * "full" adds buffer/WAL usage and async mode.
 */
static pg_attribute_always_inline TupleTableSlot *
ts_exec_proc_node_body(PlanState *node, TsTiming timing, bool full)
{
	Instrumentation *instr = node->instrument;
	TupleTableSlot *result;
	BufferUsage bufusage_start;
	WalUsage	walusage_start;
	uint64		start = 0;
	bool		timed;
	uint64		weight = 1;

	if (full)
	{
		if (instr->need_bufusage)
			bufusage_start = pgBufferUsage;
		if (instr->need_walusage)
			walusage_start = pgWalUsage;
	}

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
			(full && instr->async_mode && instr->tuplecount < 1.0))
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
		start = tsclock_read_fast();
	result = node->ExecProcNodeReal(node);
	if (timed)
	{
		int64		ticks = (int64) (tsclock_read_fast() - start);

		/*
		 * The TSC is invariant and synchronized across CPUs whenever the
		 * session may use it, so a negative difference cannot really
		 * happen; should it, count nothing rather than an absurd interval.
		 */
		if (likely(ticks > 0))
			ts_instr_time_add_ns(&instr->counter,
								 tsclock_ticks_to_ns((uint64) ticks) * weight);
		ts_pending_calls++;
	}

	if (full)
	{
		if (instr->need_bufusage &&
			ts_usage_changed(&pgBufferUsage, &bufusage_start, sizeof(BufferUsage)))
			BufferUsageAccumDiff(&instr->bufusage, &pgBufferUsage,
								 &bufusage_start);
		if (instr->need_walusage &&
			ts_usage_changed(&pgWalUsage, &walusage_start, sizeof(WalUsage)))
			WalUsageAccumDiff(&instr->walusage, &pgWalUsage,
							  &walusage_start);
	}

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
	else if (full && instr->async_mode && instr->tuplecount < 1.0)
		TS_INSTR_SET_FIRSTTUPLE(instr);

	if (!TupIsNull(result))
		instr->tuplecount += 1.0;

	return result;
}

#define TS_WRAPPER(name, timing, full) \
static TupleTableSlot * \
name(PlanState *node) \
{ \
	return ts_exec_proc_node_body(node, timing, full); \
}

/* every call timed: the common EXPLAIN ANALYZE case, and with usage */
TS_WRAPPER(ts_exec_proc_node_timer, TS_TIME_EXACT, false)
TS_WRAPPER(ts_exec_proc_node_full, TS_TIME_EXACT, true)
/* timing_source.sample_every > 1 */
TS_WRAPPER(ts_exec_proc_node_sampled, TS_TIME_SAMPLED, false)
TS_WRAPPER(ts_exec_proc_node_sampled_full, TS_TIME_SAMPLED, true)
/* no timer (TIMING OFF): rows, loops and usage only, no clock */
TS_WRAPPER(ts_exec_proc_node_rows, TS_TIME_NONE, false)
TS_WRAPPER(ts_exec_proc_node_rows_full, TS_TIME_NONE, true)

/*
 * First call of a bound node: core's ExecProcNodeFirst checks the stack
 * depth once per node (ExecProcNode calls for a node are made at roughly
 * the same depth each time), then removes itself.  So do these, choosing
 * the variant with usage/async handling only where the node needs it.
 */
static pg_attribute_always_inline TupleTableSlot *
ts_first_call(PlanState *node, ExecProcNodeMtd lean, ExecProcNodeMtd full)
{
	Instrumentation *instr = node->instrument;

	check_stack_depth();

	if (instr->need_bufusage || instr->need_walusage || instr->async_mode)
		node->ExecProcNode = full;
	else
		node->ExecProcNode = lean;

	return node->ExecProcNode(node);
}

static TupleTableSlot *
ts_exec_proc_node_first(PlanState *node)
{
	return ts_first_call(node, ts_exec_proc_node_timer, ts_exec_proc_node_full);
}

static TupleTableSlot *
ts_exec_proc_node_first_sampled(PlanState *node)
{
	return ts_first_call(node, ts_exec_proc_node_sampled,
						 ts_exec_proc_node_sampled_full);
}

static TupleTableSlot *
ts_exec_proc_node_first_rows(PlanState *node)
{
	return ts_first_call(node, ts_exec_proc_node_rows, ts_exec_proc_node_rows_full);
}

#ifdef TS_HAVE_EXPLAIN_NODE_HOOK
/* Whether a node was bound with sampled timing, and its N (0 if not) */
static uint64
ts_node_sample_every(PlanState *node)
{
	if (node->ExecProcNode == ts_exec_proc_node_first_sampled ||
		node->ExecProcNode == ts_exec_proc_node_sampled ||
		node->ExecProcNode == ts_exec_proc_node_sampled_full)
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
	int			ntimed;			/* nodes bound to a TSC-timed wrapper */
	int			nrows;			/* nodes bound to a clock-less wrapper */
	int			sample_every;	/* > 1: sampled timing */
	MemoryContext cxt;			/* the query's memory */
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
		if (!node->instrument->need_timer)
		{
			node->ExecProcNode = ts_exec_proc_node_first_rows;
			bc->nrows++;
		}
		else if (bc->sample_every > 1)
		{
			TsInstrumentation *ti = MemoryContextAlloc(bc->cxt, sizeof(TsInstrumentation));

			memcpy(&ti->instr, node->instrument, sizeof(Instrumentation));
			ti->weight = (uint64) bc->sample_every;
			ti->inv_log_q = 1.0 / log1p(-1.0 / (double) bc->sample_every);
			ti->countdown = ts_sample_gap(ti);
			node->instrument = &ti->instr;
			node->ExecProcNode = ts_exec_proc_node_first_sampled;
			bc->ntimed++;
		}
		else
		{
			node->ExecProcNode = ts_exec_proc_node_first;
			bc->ntimed++;
		}
	}

	return planstate_tree_walker(node, ts_bind_node, context);
}

/* Both clocks at one instant: the tightest of a few RDTSCP brackets */
static void
ts_watch_read(TsWatch *w)
{
	int			i;

	w->width = PG_UINT64_MAX;
	for (i = 0; i < TS_WATCHDOG_BRACKETS; i++)
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

static void
ts_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	bool		use_tsc;

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
	 * Decide (this brings the process's view up to date), then pass the
	 * decision on: workers this query starts must decide as this process
	 * does now, also when that is the system clock.
	 */
	use_tsc = ts_session_uses_tsc();
	ts_export_decision();

	if (use_tsc)
	{
		EState	   *estate = queryDesc->estate;
		TsBindContext bc;
		ListCell   *lc;

		bc.ntimed = bc.nrows = 0;
		bc.sample_every = ts_sample_every;
		bc.cxt = estate->es_query_cxt;
		if (bc.sample_every > 1)
			ts_rng_seed();

		ts_bind_node(queryDesc->planstate, &bc);

		/* subplans not reachable from the main tree (normally none) */
		foreach(lc, estate->es_subplanstates)
			ts_bind_node((PlanState *) lfirst(lc), &bc);

		if (queryDesc->instrument_options & INSTRUMENT_TIMER)
			ereport(DEBUG1,
					(errmsg_internal("timing_source: %d plan nodes timed with the TSC%s",
									 bc.ntimed,
									 bc.sample_every > 1 ? psprintf(", sampled 1 in %d calls", bc.sample_every) : "")));
		else
			ereport(DEBUG1,
					(errmsg_internal("timing_source: %d plan nodes counted without a clock",
									 bc.nrows)));

		if (bc.ntimed > 0 && !IsParallelWorker())
			ts_watch_start(queryDesc);
	}
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
	TsWatch    *w;

	for (w = ts_watches; w != NULL; w = w->next)
	{
		if (w->queryDesc == queryDesc)
		{
			ts_watch_end(w);
			break;
		}
	}

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

	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = ts_ExecutorStart;
	prev_ExecutorEnd = ExecutorEnd_hook;
	ExecutorEnd_hook = ts_ExecutorEnd;
#ifdef TS_HAVE_EXPLAIN_NODE_HOOK
	prev_explain_per_node = explain_per_node_hook;
	explain_per_node_hook = ts_explain_per_node;
#endif
}

#else							/* !(TS_HAVE_EXECUTOR_HOOK &&
								 * TSCLOCK_HAVE_TSC) */

/*
 * No TSC in this build, or core times nodes itself (PostgreSQL 19+), or
 * instr_time is not in nanoseconds: only the system clock is offered,
 * which is what core already uses.  Nothing to install.
 */
void
ts_instrument_init(void)
{
}

#endif
