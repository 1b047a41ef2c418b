/*-------------------------------------------------------------------------
 *
 * explain.c
 *	  EXPLAIN's note on a query timed with sampling (18 and later, where
 *	  core lets extensions add to each plan node's output).
 *
 * auto_explain prints through the same code, so its plans say so too.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "instrument.h"

#if defined(TS_HAVE_NODE_WRAPPERS) && defined(TS_HAVE_EXPLAIN_NODE_HOOK)

static explain_per_node_hook_type prev_explain_per_node = NULL;

/* Say it once, on the top plan node: its times are estimates */
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

void
ts_explain_init(void)
{
	prev_explain_per_node = explain_per_node_hook;
	explain_per_node_hook = ts_explain_per_node;
}

#endif
