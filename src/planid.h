/*-------------------------------------------------------------------------
 *
 * planid.h
 *	  A plan's identity: a 64-bit id computed from the plan's shape, the
 *	  same for the same plan in every execution, backend and restart
 *	  (planid.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_PLANID_H
#define TS_PLANID_H

#include "executor/execdesc.h"
#include "nodes/plannodes.h"

/* the id of pstmt's plan, computed from its shape; never 0 */
extern uint64 ts_plan_id(const PlannedStmt *pstmt);

/*
 * The id of the plan queryDesc runs: where the major has
 * PlannedStmt.planId (18+), the one another module set there, else ours,
 * stored there for the modules that read it; earlier, ours.
 */
extern uint64 ts_plan_id_of(QueryDesc *queryDesc);

/* at load: ask core for query ids, as pg_stat_statements does */
extern void ts_planid_init(void);

#endif							/* TS_PLANID_H */
