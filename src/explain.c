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

/*
 * Under each sampled node that ran: N, the calls timed at weight N, and
 * the 95% margin of its total over all loops, or why there is none.  In
 * text one line, as a percentage of the total; in the structured formats
 * fields, the margin in ms.  Core has already ended the node's loop.
 */
static void
ts_explain_estimate(PlanState *planstate, struct ExplainState *es)
{
	TsSampleEstimate est;

	if (planstate->instrument == NULL ||
		planstate->instrument->nloops <= 0 ||
		!ts_node_sample_estimate(planstate, &est))
		return;

	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		StringInfoData buf;

		initStringInfo(&buf);
		appendStringInfo(&buf, "1 in " UINT64_FORMAT ", " UINT64_FORMAT " sampled calls, ",
						 est.sample_every, est.sampled_calls);
		if (!est.reliable)
			appendStringInfoString(&buf, ts_estimate_why_text(est.why));
		else if (est.total_ns > 0)
			appendStringInfo(&buf, "total +/- %.1f%%",
							 100.0 * est.margin_ns / est.total_ns);
		else
			appendStringInfo(&buf, "total +/- %.3f ms", est.margin_ns / 1e6);
		ExplainPropertyText("Sampled", buf.data, es);
		pfree(buf.data);
	}
	else
	{
		ExplainPropertyUInteger("Sampled Every", NULL, est.sample_every, es);
		ExplainPropertyUInteger("Sampled Calls", NULL, est.sampled_calls, es);
		if (est.reliable)
			ExplainPropertyFloat("Total Time Margin", "ms",
								 est.margin_ns / 1e6, 3, es);
		ExplainPropertyBool("Estimate Reliable", est.reliable, es);
	}
}

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

	if (es->analyze && es->timing)
		ts_explain_estimate(planstate, es);
}

void
ts_explain_init(void)
{
	prev_explain_per_node = explain_per_node_hook;
	explain_per_node_hook = ts_explain_per_node;
}

#endif
