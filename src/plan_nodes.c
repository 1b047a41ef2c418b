/*-------------------------------------------------------------------------
 *
 * plan_nodes.c
 *	  timing_source_explain_nodes(query, sample_every): runs a query once
 *	  as EXPLAIN ANALYZE would, in a subtransaction that is always rolled
 *	  back, and returns one row per plan node: what EXPLAIN prints for it,
 *	  as numbers, and for a node timed with sampling the estimate's 95%
 *	  interval (instrument.c).
 *
 * The query runs through the executor directly rather than through SPI,
 * since the rows come from the plan state tree itself, read after the
 * run and before ExecutorEnd frees it.  The walker that numbers the nodes
 * is separate from what is read from each (plan_nodes.h), so that other
 * per-node reports number nodes the same way.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
#include "parser/parsetree.h"
#include "tcop/dest.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "instrument.h"
#include "plan_nodes.h"
#include "profile.h"

PG_FUNCTION_INFO_V1(timing_source_explain_nodes);
PG_FUNCTION_INFO_V1(timing_source_explain_nodes_check);
PG_FUNCTION_INFO_V1(timing_source_explain_nodes_profile);

/* ----------------------------------------------------------------
 * The walker
 * ----------------------------------------------------------------
 */

typedef struct TsWalkState
{
	TsPlanNodeVisit visit;
	void	   *arg;
	int			last_id;
	int			parent_id;
	int			depth;
} TsWalkState;

static bool
ts_walk_node(PlanState *planstate, void *context)
{
	TsWalkState *ws = (TsWalkState *) context;
	TsPlanNodeRef ref;
	int			save_parent = ws->parent_id;

	if (planstate == NULL)
		return false;

	check_stack_depth();
	CHECK_FOR_INTERRUPTS();

	ref.planstate = planstate;
	ref.node_id = ++ws->last_id;
	ref.parent_id = ws->parent_id;
	ref.depth = ws->depth;
	ws->visit(&ref, ws->arg);

	ws->parent_id = ref.node_id;
	ws->depth++;
	(void) planstate_tree_walker(planstate, ts_walk_node, context);
	ws->depth--;
	ws->parent_id = save_parent;
	return false;
}

void
ts_plan_nodes_walk(PlanState *top, TsPlanNodeVisit visit, void *arg)
{
	TsWalkState ws;

	ws.visit = visit;
	ws.arg = arg;
	ws.last_id = 0;
	ws.parent_id = 0;
	ws.depth = 0;
	(void) ts_walk_node(top, &ws);
}

const char *
ts_plan_node_type(Plan *plan)
{
	switch (nodeTag(plan))
	{
		case T_Result:
			return "Result";
		case T_ProjectSet:
			return "ProjectSet";
		case T_ModifyTable:
			return "ModifyTable";
		case T_Append:
			return "Append";
		case T_MergeAppend:
			return "Merge Append";
		case T_RecursiveUnion:
			return "Recursive Union";
		case T_BitmapAnd:
			return "BitmapAnd";
		case T_BitmapOr:
			return "BitmapOr";
		case T_NestLoop:
			return "Nested Loop";
		case T_MergeJoin:
			return "Merge Join";
		case T_HashJoin:
			return "Hash Join";
		case T_SeqScan:
			return "Seq Scan";
		case T_SampleScan:
			return "Sample Scan";
		case T_Gather:
			return "Gather";
		case T_GatherMerge:
			return "Gather Merge";
		case T_IndexScan:
			return "Index Scan";
		case T_IndexOnlyScan:
			return "Index Only Scan";
		case T_BitmapIndexScan:
			return "Bitmap Index Scan";
		case T_BitmapHeapScan:
			return "Bitmap Heap Scan";
		case T_TidScan:
			return "Tid Scan";
		case T_TidRangeScan:
			return "Tid Range Scan";
		case T_SubqueryScan:
			return "Subquery Scan";
		case T_FunctionScan:
			return "Function Scan";
		case T_TableFuncScan:
			return "Table Function Scan";
		case T_ValuesScan:
			return "Values Scan";
		case T_CteScan:
			return "CTE Scan";
		case T_NamedTuplestoreScan:
			return "Named Tuplestore Scan";
		case T_WorkTableScan:
			return "WorkTable Scan";
		case T_ForeignScan:
			return "Foreign Scan";
		case T_CustomScan:
			return "Custom Scan";
		case T_Material:
			return "Materialize";
		case T_Memoize:
			return "Memoize";
		case T_Sort:
			return "Sort";
		case T_IncrementalSort:
			return "Incremental Sort";
		case T_Group:
			return "Group";
		case T_Agg:
			return "Aggregate";
		case T_WindowAgg:
			return "WindowAgg";
		case T_Unique:
			return "Unique";
		case T_SetOp:
			return "SetOp";
		case T_LockRows:
			return "LockRows";
		case T_Limit:
			return "Limit";
		case T_Hash:
			return "Hash";
		default:
			return "???";		/* as EXPLAIN says of a node it does not know */
	}
}

char *
ts_plan_node_relation(PlanState *planstate)
{
	Plan	   *plan = planstate->plan;
	Index		rti = 0;
	RangeTblEntry *rte;

	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_SampleScan:
		case T_IndexScan:
		case T_IndexOnlyScan:
		case T_BitmapHeapScan:
		case T_TidScan:
		case T_TidRangeScan:
		case T_ForeignScan:
		case T_CustomScan:
			rti = ((Scan *) plan)->scanrelid;
			break;
		case T_ModifyTable:
			rti = ((ModifyTable *) plan)->nominalRelation;
			break;
		default:
			break;
	}
	if (rti == 0)
		return NULL;
	rte = exec_rt_fetch(rti, planstate->state);
	if (rte->rtekind != RTE_RELATION)
		return NULL;
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(rte->relid)),
									  get_rel_name(rte->relid));
}

/* ----------------------------------------------------------------
 * timing_source_explain_nodes()
 * ----------------------------------------------------------------
 */

#define TS_EXPLAIN_NODES_COLS 15
/* the check's extra column: exact_ms */
#define TS_EXPLAIN_CHECK_COLS (TS_EXPLAIN_NODES_COLS + 1)
/* the profile's: profile_ticks, profile_ms */
#define TS_EXPLAIN_PROFILE_COLS (TS_EXPLAIN_NODES_COLS + 2)

/* which of the three functions runs */
typedef enum TsNodesRun
{
	TS_NODES_RUN,				/* timing_source_explain_nodes */
	TS_NODES_CHECK,				/* ..._check */
	TS_NODES_PROFILE			/* ..._profile */
} TsNodesRun;

/* one result row, kept outside the subtransaction until it ends */
typedef struct TsNodeRow
{
	Datum		values[TS_EXPLAIN_PROFILE_COLS];
	bool		nulls[TS_EXPLAIN_PROFILE_COLS];
	int64		ticks;			/* a profiled node's, else -1 */
} TsNodeRow;

typedef struct TsNodeRows
{
	MemoryContext cxt;			/* the caller's memory */
	TupleDesc	desc;
	List	   *rows;
	int			profile_hz;		/* > 0: a profiled run, ticking this often */
	uint64		profile_ticks;	/* the run's ticks, ExecutorStart to
								 * ExecutorFinish */
} TsNodeRows;

static void
ts_node_row(const TsPlanNodeRef *ref, void *arg)
{
	TsNodeRows *nr = (TsNodeRows *) arg;
	PlanState  *ps = ref->planstate;
	TupleDesc	desc = nr->desc;
	const char *relation = ts_plan_node_relation(ps);
	TsSampleEstimate est;
	bool		sampled;
	MemoryContext oldcxt;
	TsNodeRow  *row;

	if (ps->instrument != NULL)
		InstrEndLoop(ps->instrument);
	sampled = ps->instrument != NULL && ts_node_sample_estimate(ps, &est);

	oldcxt = MemoryContextSwitchTo(nr->cxt);
	row = palloc0(sizeof(TsNodeRow));
	for (int i = 0; i < TS_EXPLAIN_PROFILE_COLS; i++)
		row->nulls[i] = true;
	row->ticks = -1;

	row->values[0] = Int32GetDatum(ref->node_id);
	row->nulls[0] = false;
	row->values[1] = Int32GetDatum(ref->parent_id);
	row->nulls[1] = (ref->parent_id == 0);
	row->values[2] = Int32GetDatum(ref->depth);
	row->nulls[2] = false;
	row->values[3] = CStringGetTextDatum(ts_plan_node_type(ps->plan));
	row->nulls[3] = false;
	if (relation != NULL)
	{
		row->values[4] = CStringGetTextDatum(relation);
		row->nulls[4] = false;
	}
	if (ps->instrument != NULL)
	{
		double		nloops = ps->instrument->nloops;

		row->values[5] = ts_fixed_datum(desc, 5, nloops, 0);
		row->values[6] = ts_fixed_datum(desc, 6, ps->instrument->ntuples, 0);
		row->nulls[5] = row->nulls[6] = false;
		/* a node that never ran has no times, as EXPLAIN says */
		if (nloops > 0)
		{
			row->values[7] = ts_fixed_datum(desc, 7,
											ts_instr_startup_ns(ps->instrument) / 1e6,
											TS_MS_SCALE);
			row->values[8] = ts_fixed_datum(desc, 8,
											ts_instr_total_ns(ps->instrument) / 1e6,
											TS_MS_SCALE);
			row->nulls[7] = row->nulls[8] = false;
		}
		if (sampled)
		{
			row->values[9] = Int32GetDatum((int32) est.sample_every);
			row->values[10] = Int64GetDatum((int64) est.sampled_calls);
			row->nulls[9] = row->nulls[10] = false;
			if (nloops > 0)
			{
				row->values[12] = BoolGetDatum(est.reliable);
				row->nulls[12] = false;
				if (est.reliable)
				{
					row->values[11] = ts_fixed_datum(desc, 11, est.margin_ns / 1e6,
													 TS_MS_SCALE);
					row->nulls[11] = false;
				}
			}
			/* a checked run: the same calls' exact total, the leader's */
			if (nloops > 0 && est.check_ns >= 0 && est.why != TS_ESTIMATE_WORKERS &&
				desc->natts == TS_EXPLAIN_CHECK_COLS)
			{
				row->values[15] = ts_fixed_datum(desc, 15, est.check_ns / 1e6,
												 TS_MS_SCALE);
				row->nulls[15] = false;
			}
		}
	}
	/* exactly timed nodes: the instrumentation's estimated cost */
#ifdef TS_HAVE_EXECUTOR_HOOK
	if (ps->instrument != NULL)
	{
		double		overhead_ns = ts_node_overhead_ns(ps);

		if (overhead_ns >= 0)
		{
			row->values[13] = ts_fixed_datum(desc, 13, overhead_ns / 1e6,
											 TS_MS_SCALE);
			row->nulls[13] = false;
		}
	}
#endif
	/* a profiled run: the node's ticks; its ms come with the run's */
	if (desc->natts == TS_EXPLAIN_PROFILE_COLS)
	{
		row->ticks = ts_node_profile_hits(ps);
		if (row->ticks >= 0)
		{
			row->values[15] = Int64GetDatum(row->ticks);
			row->nulls[15] = false;
		}
	}
	/* execution_ms (14), and a profile's ms (16), are filled in by the caller */
	nr->rows = lappend(nr->rows, row);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Plan and run stmt once, with per-node timing and row counts, the result
 * rows discarded; then collect the nodes' rows into nr.  Returns the
 * execution time in ms, from ExecutorStart to ExecutorFinish.  The caller
 * runs this in a subtransaction it rolls back.
 */
static double
ts_run_and_walk(RawStmt *stmt, const char *query, TsNodeRows *nr)
{
	List	   *querytrees;
	Query	   *qtree;
	PlannedStmt *plan;
	QueryDesc  *qd;
	uint64		t0,
				t1;

	querytrees = pg_analyze_and_rewrite_fixedparams(stmt, query, NULL, 0, NULL);
	if (list_length(querytrees) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot time the plan nodes of a statement that rules rewrite into %d statements",
						list_length(querytrees))));
	qtree = linitial_node(Query, querytrees);
	if (qtree->commandType == CMD_UTILITY)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot time the plan nodes of a statement that rules rewrite into a utility statement")));

	plan = ts_plan_query(qtree, query, CURSOR_OPT_PARALLEL_OK, NULL);

	/* as EXPLAIN ANALYZE: a snapshot of its own that sees earlier work */
	PushCopiedSnapshot(GetActiveSnapshot());
	UpdateActiveSnapshotCommandId();
	qd = CreateQueryDesc(plan, query, GetActiveSnapshot(), InvalidSnapshot,
						 None_Receiver, NULL, NULL,
						 INSTRUMENT_TIMER | INSTRUMENT_ROWS);

	t0 = tsclock_system_ns();
	if (nr->profile_hz > 0)
		ts_profile_start(nr->profile_hz);
	ExecutorStart(qd, 0);
	ts_executor_run_all(qd);
	ExecutorFinish(qd);
	if (nr->profile_hz > 0)
		nr->profile_ticks = ts_profile_stop();
	t1 = tsclock_system_ns();

	ts_plan_nodes_walk(qd->planstate, ts_node_row, nr);

	ExecutorEnd(qd);
	FreeQueryDesc(qd);
	PopActiveSnapshot();

	return (double) (t1 - t0) / 1e6;
}

/* what ts_run_in_subxact() hands over to ts_run_and_walk() */
typedef struct TsNodeRun
{
	RawStmt    *stmt;
	const char *query;
	TsNodeRows *nr;
} TsNodeRun;

static double
ts_node_run(void *arg)
{
	TsNodeRun  *run = (TsNodeRun *) arg;

	return ts_run_and_walk(run->stmt, run->query, run->nr);
}

/*
 * ts_run_and_walk() in a subtransaction that is always rolled back.  The
 * executor's memory is the subtransaction's, gone with it however it
 * ends; the rows it keeps are made in the caller's (nr->cxt).
 */
static double
ts_run_in_subxact(RawStmt *stmt, const char *query, TsNodeRows *nr)
{
	TsNodeRun	run;

	run.stmt = stmt;
	run.query = query;
	run.nr = nr;
	return ts_in_rolled_back_subxact(ts_node_run, &run, false);
}

/*
 * ts_run_in_subxact() with every sampled call checked (TS_NODES_CHECK), or
 * profiled (TS_NODES_PROFILE, profile.h: the plan's nodes bound for a
 * profile, the timer ticking from ExecutorStart to ExecutorFinish), all
 * of it undone however the run ends
 */
static double
ts_run_marked(RawStmt *stmt, const char *query, TsNodeRows *nr, TsNodesRun kind)
{
	volatile double exec_ms = 0;

	if (kind == TS_NODES_CHECK)
		ts_instrument_set_sample_check(true);
	else
		ts_instrument_set_profile(true);
	PG_TRY();
	{
		exec_ms = ts_run_in_subxact(stmt, query, nr);
	}
	PG_FINALLY();
	{
		if (kind == TS_NODES_CHECK)
			ts_instrument_set_sample_check(false);
		else
		{
			(void) ts_profile_stop();
			ts_instrument_set_profile(false);
		}
	}
	PG_END_TRY();
	return exec_ms;
}

/*
 * The three functions: "check" times every call of the sampled nodes as
 * well (ts_instrument_set_sample_check) and returns the exact totals in
 * one more column; "profile" profiles the nodes instead of timing them,
 * its second argument the ticks a second, and returns two more columns.
 */
static Datum
ts_explain_nodes(FunctionCallInfo fcinfo, TsNodesRun kind)
{
	bool		check = (kind == TS_NODES_CHECK);
	bool		profile = (kind == TS_NODES_PROFILE);
	int			ncols = profile ? TS_EXPLAIN_PROFILE_COLS :
		check ? TS_EXPLAIN_CHECK_COLS : TS_EXPLAIN_NODES_COLS;
	char	   *query;
	RawStmt    *stmt;
	ReturnSetInfo *rsinfo;
	TsNodeRows	nr;
	double		exec_ms;
	int			nestlevel = -1;
	ListCell   *lc;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("query must not be null")));
	query = text_to_cstring(PG_GETARG_TEXT_PP(0));

	nr.profile_hz = 0;
	nr.profile_ticks = 0;
	if (profile)
	{
		int32		hz;

		if (PG_ARGISNULL(1))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("hz must not be null")));
		hz = PG_GETARG_INT32(1);
		/* below, too few ticks for a share; above, the ticks are the run */
		if (hz < 100 || hz > 50000)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("hz must be between 100 and 50000, not %d", hz)));
		if (!ts_profile_supported())
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("plan node profiles are not supported on this platform")));

		/*
		 * Refused here, before anything is set: the run's cleanup would
		 * stop the profile this call is made from
		 */
		if (ts_profile_running())
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("a plan node profile is already running in this session")));
		nr.profile_hz = hz;
	}
	/* the same bounds as timing_source.sample_every */
	else if (!PG_ARGISNULL(1))
	{
		int32		n = PG_GETARG_INT32(1);

		if (check && n < 2)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("sample_every must be between 2 and 1000000, not %d", n),
					 errdetail("Only sampled estimates can be checked.")));
		if (n < 1 || n > 1000000)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("sample_every must be between 1 and 1000000, not %d", n),
					 errhint("1 times every call; NULL uses the session's timing_source.sample_every.")));

		/*
		 * Saved at our own nest level, restored below; on error, the abort
		 * of the enclosing (sub)transaction restores it.
		 */
		nestlevel = NewGUCNestLevel();
		(void) set_config_option("timing_source.sample_every", psprintf("%d", n),
								 PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
	else if (check)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("sample_every must not be null")));

	stmt = ts_check_query(query, TS_CHECK_PLAN_NODES);

	InitMaterializedSRF(fcinfo, 0);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	if (rsinfo->setDesc->natts != ncols)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("function returning plan nodes is declared with %d columns, not %d",
						rsinfo->setDesc->natts, ncols)));

	nr.cxt = CurrentMemoryContext;
	nr.desc = rsinfo->setDesc;
	nr.rows = NIL;

	if (check || profile)
		exec_ms = ts_run_marked(stmt, query, &nr, kind);
	else
		exec_ms = ts_run_in_subxact(stmt, query, &nr);

	if (nestlevel >= 0)
		AtEOXact_GUC(true, nestlevel);

	if (profile)
	{
		bool		any = false;

		foreach(lc, nr.rows)
			any |= (((TsNodeRow *) lfirst(lc))->ticks >= 0);
		if (!any)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("no plan node of the query could be profiled"),
					 errdetail("Profiles need timing_source's node wrappers, which time this server's plan nodes only where the library is loaded and, on PostgreSQL 19, timing_source.node_wrappers is on.")));
	}

	foreach(lc, nr.rows)
	{
		TsNodeRow  *row = (TsNodeRow *) lfirst(lc);

		row->values[14] = ts_fixed_datum(rsinfo->setDesc, 14, exec_ms, TS_MS_SCALE);
		row->nulls[14] = false;
		/* a node's ticks over the run's: its share of the execution time */
		if (row->ticks >= 0 && nr.profile_ticks > 0)
		{
			row->values[16] = ts_fixed_datum(rsinfo->setDesc, 16,
											 exec_ms * (double) row->ticks / (double) nr.profile_ticks,
											 TS_MS_SCALE);
			row->nulls[16] = false;
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
							 row->values, row->nulls);
	}

	return (Datum) 0;
}

Datum
timing_source_explain_nodes(PG_FUNCTION_ARGS)
{
	return ts_explain_nodes(fcinfo, TS_NODES_RUN);
}

/*
 * timing_source_explain_nodes_check(query, sample_every): for benchmarks
 * and tests, not part of the extension's SQL (whoever uses it declares it,
 * with exact_ms numeric after the fifteen columns above): the sampled
 * estimates of one run with that run's exact totals.
 */
Datum
timing_source_explain_nodes_check(PG_FUNCTION_ARGS)
{
	return ts_explain_nodes(fcinfo, TS_NODES_CHECK);
}

/*
 * timing_source_explain_nodes_profile(query, hz): for benchmarks and
 * tests, not part of the extension's SQL (whoever uses it declares it,
 * with profile_ticks bigint and profile_ms numeric after the fifteen
 * columns above): one run profiled at hz ticks a second (profile.h), its
 * nodes untimed; a node's ms are its ticks' share of the execution time.
 * A node core runs itself without a timer, or past the profile's list of
 * them, has neither column.
 */
Datum
timing_source_explain_nodes_profile(PG_FUNCTION_ARGS)
{
	return ts_explain_nodes(fcinfo, TS_NODES_PROFILE);
}
