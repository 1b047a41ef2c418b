/*-------------------------------------------------------------------------
 *
 * rebase.c
 *	  PostgreSQL 19: keep the times of nodes bound to core's clock in the
 *	  unit core prints them with.
 *
 * Core converts every instr_time to nanoseconds when EXPLAIN prints, with
 * the ticks-to-ns factor current then; a superuser's SET
 * timing_clock_source inside the query (in a function it calls, say)
 * changes that factor, and core's own wrappers then mix ticks of two
 * clocks in one counter.  The extension's wrappers keep reading the clock
 * the query started with, in its unit, and ExecutorFinish, after the last
 * node has run and before EXPLAIN or auto_explain print, converts their
 * nodes' times into the unit core will print them with.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "instrument.h"

#ifdef TS_CORE_CLOCK

#include "executor/executor.h"
#include "nodes/execnodes.h"

/* a query whose nodes are bound to core's clock, and their unit */
typedef struct TsBoundQuery
{
	TsQueryEntry entry;			/* must be first */
	uint64		unit;			/* ts_core_ticks_unit() when bound */
	List	   *nodes;			/* PlanStates bound to a timed wrapper */
} TsBoundQuery;

static TsQueryList ts_bound_queries;

static ExecutorFinish_hook_type prev_ExecutorFinish = NULL;

void
ts_clock_query_start(QueryDesc *queryDesc, List *timed)
{
	TsBoundQuery *bq = ts_query_add(&ts_bound_queries, queryDesc,
									sizeof(TsBoundQuery));

	bq->unit = ts_core_ticks_unit();
	bq->nodes = timed;
}

/* the entry goes with the query's memory */
void
ts_clock_query_end(QueryDesc *queryDesc)
{
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

	bq = ts_query_find(&ts_bound_queries, queryDesc);
	if (bq != NULL)
		ts_bound_rebase(bq);
}

void
ts_clock_init(void)
{
	prev_ExecutorFinish = ExecutorFinish_hook;
	ExecutorFinish_hook = ts_ExecutorFinish;
}

#endif							/* TS_CORE_CLOCK */
