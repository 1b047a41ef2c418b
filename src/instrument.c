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
#include "executor/executor.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "nodes/nodeFuncs.h"
#endif

#if defined(TS_HAVE_EXECUTOR_HOOK) && defined(TSCLOCK_HAVE_TSC)

static ExecutorStart_hook_type prev_ExecutorStart = NULL;

/* Core's static ExecProcNodeFirst, learned in ts_instrument_init() */
static ExecProcNodeMtd ts_core_first = NULL;

/*
 * The body of both instrumented wrappers.  "full" selects the variant that
 * also handles buffer/WAL usage and async mode; it is a compile-time
 * constant in each caller, so the timer-only variant contains none of
 * those tests.
 */
static pg_attribute_always_inline TupleTableSlot *
ts_exec_proc_node_body(PlanState *node, bool full)
{
	Instrumentation *instr = node->instrument;
	TupleTableSlot *result;
	BufferUsage bufusage_start;
	WalUsage	walusage_start;
	uint64		start;
	int64		ticks;

	if (full)
	{
		if (instr->need_bufusage)
			bufusage_start = pgBufferUsage;
		if (instr->need_walusage)
			walusage_start = pgWalUsage;
	}

	start = tsclock_rdtsc();
	result = node->ExecProcNodeReal(node);
	ticks = (int64) (tsclock_rdtsc() - start);

	/*
	 * The TSC is invariant and synchronized across CPUs whenever the
	 * session may use it, so a negative difference cannot really happen;
	 * should it, count nothing rather than an absurd interval.
	 */
	if (likely(ticks > 0))
		ts_instr_time_add_ns(&instr->counter,
							 tsclock_ticks_to_ns((uint64) ticks));

	if (full)
	{
		if (instr->need_bufusage)
			BufferUsageAccumDiff(&instr->bufusage, &pgBufferUsage,
								 &bufusage_start);
		if (instr->need_walusage)
			WalUsageAccumDiff(&instr->walusage, &pgWalUsage,
							  &walusage_start);
	}

	/*
	 * First call of this cycle: remember the startup time.  An async node
	 * may run several times before its first tuple; core then moves
	 * firsttuple forward until a tuple has been counted.
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

/* Timer only: the common EXPLAIN ANALYZE case */
static TupleTableSlot *
ts_exec_proc_node_timer(PlanState *node)
{
	return ts_exec_proc_node_body(node, false);
}

/* Timer plus buffer/WAL usage and/or async mode */
static TupleTableSlot *
ts_exec_proc_node_full(PlanState *node)
{
	return ts_exec_proc_node_body(node, true);
}

/*
 * First call of a node bound to the TSC: core's ExecProcNodeFirst checks
 * the stack depth once per node (ExecProcNode calls for a node are made at
 * roughly the same depth each time), then removes itself.
 */
static TupleTableSlot *
ts_exec_proc_node_first(PlanState *node)
{
	Instrumentation *instr = node->instrument;

	check_stack_depth();

	if (instr->need_bufusage || instr->need_walusage || instr->async_mode)
		node->ExecProcNode = ts_exec_proc_node_full;
	else
		node->ExecProcNode = ts_exec_proc_node_timer;

	return node->ExecProcNode(node);
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
 * planstate_tree_walker callback: bind one node and recurse.
 *
 * Only nodes still on core's first-call wrapper are touched: that skips
 * nodes already bound (a subplan reachable twice) and leaves alone any
 * node whose entry point another extension has replaced.
 */
static bool
ts_bind_node(PlanState *node, void *context)
{
	int		   *nbound = (int *) context;

	if (node == NULL)
		return false;

	check_stack_depth();

	if (node->instrument != NULL &&
		node->instrument->need_timer &&
		node->ExecProcNode == ts_core_first &&
		!ts_multi_exec_node(node))
	{
		node->ExecProcNode = ts_exec_proc_node_first;
		(*nbound)++;
	}

	return planstate_tree_walker(node, ts_bind_node, context);
}

static void
ts_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);

	/* Cheap checks first: most queries are not timed at all */
	if ((queryDesc->instrument_options & INSTRUMENT_TIMER) != 0 &&
		queryDesc->planstate != NULL &&
		(eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0 &&
		ts_session_uses_tsc())
	{
		EState	   *estate = queryDesc->estate;
		int			nbound = 0;
		ListCell   *lc;

		ts_bind_node(queryDesc->planstate, &nbound);

		/* subplans not reachable from the main tree (normally none) */
		foreach(lc, estate->es_subplanstates)
			ts_bind_node((PlanState *) lfirst(lc), &nbound);

		ereport(DEBUG1,
				(errmsg_internal("timing_source: %d plan nodes timed with the TSC",
								 nbound)));
	}
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
