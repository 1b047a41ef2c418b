/*-------------------------------------------------------------------------
 *
 * planid.c
 *	  The plan id timing_source keys its per-node statistics on: a hash of
 *	  the plan's shape.
 *
 * What goes in is what makes two plans different ways of running a query:
 * the node types and their order in the tree (with the tree's structure,
 * so that a join of a scan over another differs from the reverse), the
 * relations and indexes scanned or modified, join types, index scan
 * directions, aggregation strategies, whether a node is parallel aware,
 * the command type, and the subplans.  What stays out is what changes
 * from one planning of the same plan to the next without changing the
 * plan: costs, row estimates, constants, parameter values, expressions.
 * Relations enter by OID, which a restart keeps; a plan over a table that
 * was dropped and created again is a new plan.
 *
 * The hash is built from fixed-width values only (no pointers, no
 * padding), so it is the same in every backend and after a restart of the
 * same server.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "nodes/nodes.h"
#include "nodes/parsenodes.h"
#include "nodes/extensible.h"
#include "nodes/pg_list.h"
#include "nodes/plannodes.h"
#include "nodes/primnodes.h"
#include "parser/parsetree.h"

#include "timing_source.h"
#include "planid.h"

/* markers that give the hash the tree's structure */
#define PLANID_DOWN		0x44u	/* a list of children starts */
#define PLANID_UP		0x55u	/* it ends */
#define PLANID_NONE		0x66u	/* an absent child or subplan */
#define PLANID_INIT		0x77u	/* an init plan, by its subplan number */

static inline void
planid_add(uint64 *h, uint32 v)
{
	*h = hash_combine64(*h, hash_bytes_uint32_extended(v, 0));
}

static void planid_node(uint64 *h, const PlannedStmt *pstmt, const Plan *plan);

/* a relation by OID, or, for another kind of range table entry, its kind */
static void
planid_rel(uint64 *h, const PlannedStmt *pstmt, Index rti)
{
	RangeTblEntry *rte;

	if (rti == 0 || rti > (Index) list_length(pstmt->rtable))
	{
		planid_add(h, PLANID_NONE);
		return;
	}
	rte = rt_fetch(rti, pstmt->rtable);
	planid_add(h, (uint32) rte->rtekind);
	if (rte->rtekind == RTE_RELATION)
		planid_add(h, (uint32) rte->relid);
}

static void
planid_list(uint64 *h, const PlannedStmt *pstmt, const List *plans)
{
	const ListCell *lc;

	planid_add(h, PLANID_DOWN);
	foreach(lc, plans)
		planid_node(h, pstmt, (const Plan *) lfirst(lc));
	planid_add(h, PLANID_UP);
}

static void
planid_node(uint64 *h, const PlannedStmt *pstmt, const Plan *plan)
{
	const ListCell *lc;

	/* plans can nest deeply (a long chain of joins or appends) */
	check_stack_depth();

	if (plan == NULL)
	{
		planid_add(h, PLANID_NONE);
		return;
	}

	planid_add(h, (uint32) nodeTag(plan));
	planid_add(h, plan->parallel_aware ? 1 : 0);

	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_SampleScan:
		case T_BitmapHeapScan:
		case T_TidScan:
		case T_TidRangeScan:
		case T_SubqueryScan:
		case T_FunctionScan:
		case T_ValuesScan:
		case T_TableFuncScan:
		case T_CteScan:
		case T_NamedTuplestoreScan:
		case T_WorkTableScan:
		case T_ForeignScan:
			planid_rel(h, pstmt, ((const Scan *) plan)->scanrelid);
			break;
		case T_CustomScan:
			{
				const CustomScan *cs = (const CustomScan *) plan;

				planid_rel(h, pstmt, cs->scan.scanrelid);
				if (cs->methods != NULL && cs->methods->CustomName != NULL)
					planid_add(h, hash_bytes((const unsigned char *) cs->methods->CustomName,
											 strlen(cs->methods->CustomName)));
			}
			break;
		case T_IndexScan:
			{
				const IndexScan *is = (const IndexScan *) plan;

				planid_rel(h, pstmt, is->scan.scanrelid);
				planid_add(h, (uint32) is->indexid);
				planid_add(h, (uint32) is->indexorderdir);
			}
			break;
		case T_IndexOnlyScan:
			{
				const IndexOnlyScan *is = (const IndexOnlyScan *) plan;

				planid_rel(h, pstmt, is->scan.scanrelid);
				planid_add(h, (uint32) is->indexid);
				planid_add(h, (uint32) is->indexorderdir);
			}
			break;
		case T_BitmapIndexScan:
			planid_rel(h, pstmt, ((const BitmapIndexScan *) plan)->scan.scanrelid);
			planid_add(h, (uint32) ((const BitmapIndexScan *) plan)->indexid);
			break;
		case T_NestLoop:
		case T_MergeJoin:
		case T_HashJoin:
			planid_add(h, (uint32) ((const Join *) plan)->jointype);
			break;
		case T_Agg:
			planid_add(h, (uint32) ((const Agg *) plan)->aggstrategy);
			planid_add(h, (uint32) ((const Agg *) plan)->aggsplit);
			break;
		case T_ModifyTable:
			{
				const ModifyTable *mt = (const ModifyTable *) plan;

				planid_add(h, (uint32) mt->operation);
				planid_add(h, PLANID_DOWN);
				foreach(lc, mt->resultRelations)
					planid_rel(h, pstmt, (Index) lfirst_int(lc));
				planid_add(h, PLANID_UP);
			}
			break;
		default:
			break;
	}

	/* init plans by number: their trees are hashed once, below */
	planid_add(h, PLANID_DOWN);
	foreach(lc, plan->initPlan)
	{
		const SubPlan *sp = (const SubPlan *) lfirst(lc);

		planid_add(h, PLANID_INIT);
		if (IsA(sp, SubPlan))
			planid_add(h, (uint32) sp->plan_id);
	}
	planid_add(h, PLANID_UP);

	/* the children, in the order EXPLAIN prints them */
	planid_node(h, pstmt, plan->lefttree);
	planid_node(h, pstmt, plan->righttree);
	switch (nodeTag(plan))
	{
		case T_Append:
			planid_list(h, pstmt, ((const Append *) plan)->appendplans);
			break;
		case T_MergeAppend:
			planid_list(h, pstmt, ((const MergeAppend *) plan)->mergeplans);
			break;
		case T_BitmapAnd:
			planid_list(h, pstmt, ((const BitmapAnd *) plan)->bitmapplans);
			break;
		case T_BitmapOr:
			planid_list(h, pstmt, ((const BitmapOr *) plan)->bitmapplans);
			break;
		case T_SubqueryScan:
			planid_node(h, pstmt, ((const SubqueryScan *) plan)->subplan);
			break;
		case T_CustomScan:
			planid_list(h, pstmt, ((const CustomScan *) plan)->custom_plans);
			break;
		default:
			break;
	}
}

uint64
ts_plan_id(const PlannedStmt *pstmt)
{
	uint64		h = 0;

	planid_add(&h, (uint32) pstmt->commandType);
	planid_node(&h, pstmt, pstmt->planTree);
	/* every subplan, wherever its SubPlan sits (init plan or expression) */
	planid_list(&h, pstmt, pstmt->subplans);

	/* 0 means "not set" to the modules that share PlannedStmt.planId */
	return h != 0 ? h : 1;
}

uint64
ts_plan_id_of(QueryDesc *queryDesc)
{
	PlannedStmt *pstmt = queryDesc->plannedstmt;
	uint64		id = ts_pstmt_plan_id(pstmt);

	if (id != 0)
		return id;
	id = ts_plan_id(pstmt);
	ts_pstmt_set_plan_id(pstmt, id);
	return id;
}

void
ts_planid_init(void)
{
	if (process_shared_preload_libraries_in_progress)
		EnableQueryId();
}
