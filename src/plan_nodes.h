/*-------------------------------------------------------------------------
 *
 * plan_nodes.h
 *	  Walking an executed plan state tree node by node, with the numbering
 *	  timing_source_explain_nodes() shows (plan_nodes.c), so that anything
 *	  else that reports per node numbers them the same way.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_PLAN_NODES_H
#define TS_PLAN_NODES_H

#include "nodes/execnodes.h"

/*
 * One node as the walker visits it: node_id counts from 1 in pre-order
 * (a node before its children, children in the order EXPLAIN prints them:
 * init plans, outer, inner, a node's own members, subplans); parent_id is
 * 0 at the top; depth is 0 at the top.
 */
typedef struct TsPlanNodeRef
{
	PlanState  *planstate;
	int			node_id;
	int			parent_id;
	int			depth;
} TsPlanNodeRef;

typedef void (*TsPlanNodeVisit) (const TsPlanNodeRef *ref, void *arg);

/* visit every node of the tree under top, numbering from 1 */
extern void ts_plan_nodes_walk(PlanState *top, TsPlanNodeVisit visit,
							   void *arg);

/* the plan node's type as EXPLAIN's structured formats name it */
extern const char *ts_plan_node_type(Plan *plan);

/* the relation a node scans or modifies, schema-qualified, or NULL */
extern char *ts_plan_node_relation(PlanState *planstate);

#endif							/* TS_PLAN_NODES_H */
