/*-------------------------------------------------------------------------
 *
 * explain.c
 *	  EXPLAIN's notes on how a plan was timed (18 and later, where core
 *	  lets extensions add to each plan node's output): which clock timed
 *	  it and how its frequency was found, whether sampled or with the
 *	  instrumentation's estimated cost subtracted, and per exactly timed
 *	  node that estimate.
 *
 * The plan-level note goes under the top plan node, through the per-node
 * hook: core's per-plan hook runs only for EXPLAIN itself, not for
 * auto_explain, which prints the plan through ExplainPrintPlan; the
 * per-node hook runs for both.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "instrument.h"

#ifdef TS_HAVE_EXPLAIN_NODE_HOOK

#include "lib/stringinfo.h"

static explain_per_node_hook_type prev_explain_per_node = NULL;

/*
 * Under each sampled node that ran: N, the calls timed at a weight above
 * 1, and the 95% margin of its total over all loops, or why there is
 * none.  In text one line, as a percentage of the total; in the structured
 * formats fields, the margin in ms.  Core has already ended the node's loop.
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
		appendStringInfo(&buf, "1 in " UINT64_FORMAT, est.sample_every);
		/* past sample_budget's share of calls: the rate it ended at */
		if (est.thinned_to > 0)
			appendStringInfo(&buf, " thinned to 1 in " UINT64_FORMAT,
							 est.thinned_to);
		if (est.exact && est.reliable)
		{
			/*
			 * None of its calls stood for others (a top node's one call, an
			 * inner side's first calls): a measurement, not an estimate
			 * whose margin happens to be zero
			 */
			appendStringInfoString(&buf, ", every call timed");
		}
		else
		{
			/* the workers' sampled calls do not reach the leader */
			appendStringInfo(&buf, ", " UINT64_FORMAT " sampled calls%s, ",
							 est.sampled_calls,
							 est.why == TS_ESTIMATE_WORKERS ? " in the leader" : "");
			if (!est.reliable)
				appendStringInfoString(&buf, ts_estimate_why_text(est.why));
			else if (est.total_ns > 0)
				appendStringInfo(&buf, "total +/- %.1f%%",
								 100.0 * est.margin_ns / est.total_ns);
			else
				appendStringInfo(&buf, "total +/- %.3f ms", est.margin_ns / 1e6);
		}
		ExplainPropertyText("Sampled", buf.data, es);
		pfree(buf.data);
	}
	else
	{
		ExplainPropertyUInteger("Sampled Every", NULL, est.sample_every, es);
		if (est.thinned_to > 0)
			ExplainPropertyUInteger("Sampled Thinned To", NULL,
									est.thinned_to, es);
		ExplainPropertyUInteger("Sampled Calls", NULL, est.sampled_calls, es);
		if (est.reliable)
			ExplainPropertyFloat("Total Time Margin", "ms",
								 est.margin_ns / 1e6, 3, es);
		ExplainPropertyBool("Estimate Reliable", est.reliable, es);
	}
}

/*
 * The clock that timed a plan: name, frequency (kHz, 0 if not a counter)
 * and how the frequency was found.
 */
static void
ts_explain_clock(PlanState *top, const char **name, int64 *khz,
				 const char **source, TsPlanTiming *timing)
{
	TimingClockSource clock;

	if (ts_plan_timing(top, timing))
		clock = timing->clock;
	else
	{
		/* core timed it: its clock_gettime through 18, its choice on 19 */
		memset(timing, 0, sizeof(*timing));
		clock = ts_core_uses_tsc() ? TS_CLOCK_TSC : TS_CLOCK_SYSTEM;
	}

	*name = "system clock";
	*khz = 0;
	*source = NULL;
	if (clock != TS_CLOCK_TSC)
		return;
	*name = "TSC";
#ifdef TS_CORE_CLOCK
	*khz = Max(ts_core_tsc_khz(), 0);
	*source = ts_core_tsc_source();
#else
	*khz = (int64) tsclock_info.khz;
	*source = tsclock_info.cpuid_used ? tsclock_info.cpuid_what : "calibrated";
#endif
	if (*source != NULL && (*source)[0] == '\0')
		*source = NULL;
}

/* The plan-level note, under the top node */
static void
ts_explain_plan_timing(PlanState *top, ExplainState *es)
{
	const char *name;
	int64		khz;
	const char *source;
	TsPlanTiming timing;

	ts_explain_clock(top, &name, &khz, &source, &timing);

	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		StringInfoData buf;

		initStringInfo(&buf);
		appendStringInfoString(&buf, name);
		if (khz > 0)
			appendStringInfo(&buf, " %.0f MHz", (double) khz / 1000.0);
		if (source != NULL)
			appendStringInfo(&buf, " (%s)", source);
		if (timing.sample_every > 1)
			appendStringInfo(&buf, ", sampled 1 in %d calls",
							 timing.sample_every);
		if (timing.sample_every > 1 && timing.sample_budget > 0)
			appendStringInfo(&buf, ", thinned past " INT64_FORMAT " calls a node",
							 (int64) timing.sample_every * timing.sample_budget);
		if (timing.subtracted)
			appendStringInfoString(&buf, ", overhead subtracted");
		ExplainPropertyText("Timing", buf.data, es);
		pfree(buf.data);
	}
	else
	{
		ExplainPropertyText("Timing Clock", name, es);
		if (khz > 0)
			ExplainPropertyInteger("Timing Clock Frequency", "kHz", khz, es);
		if (source != NULL)
			ExplainPropertyText("Timing Frequency Source", source, es);
		if (timing.sample_every > 1)
			ExplainPropertyInteger("Timing Sampled Every", NULL,
								   timing.sample_every, es);
		if (timing.sample_every > 1 && timing.sample_budget > 0)
			ExplainPropertyInteger("Timing Sample Budget", NULL,
								   timing.sample_budget, es);
		ExplainPropertyBool("Timing Overhead Subtracted", timing.subtracted, es);
	}
}

/*
 * A node whose buffer/WAL usage is an estimate from its sampled calls
 * (timing_source.sample_buffers) says so under core's own lines, which
 * print the estimate as they would exact figures
 */
static void
ts_explain_usage_sampled(PlanState *planstate, ExplainState *es)
{
	uint64		every;

	if (!(es->buffers || es->wal) ||
		planstate->instrument == NULL ||
		planstate->instrument->nloops <= 0 ||
		(every = ts_node_usage_sampled(planstate)) == 0)
		return;

	if (es->format == EXPLAIN_FORMAT_TEXT)
		ExplainPropertyText("Usage Estimated",
							psprintf("%s from 1 in " UINT64_FORMAT " calls",
									 es->buffers && es->wal ? "buffers and WAL" :
									 es->buffers ? "buffers" : "WAL",
									 every),
							es);
	else
		ExplainPropertyBool("Usage Estimated", true, es);
}

static void
ts_explain_per_node(PlanState *planstate, List *ancestors,
					const char *relationship, const char *plan_name,
					struct ExplainState *es)
{
	double		overhead_ns;

	if (prev_explain_per_node)
		prev_explain_per_node(planstate, ancestors, relationship, plan_name, es);

	if (!es->analyze || !es->timing)
		return;

	/* a node that never ran has no times, and no timing cost to show */
	overhead_ns = ts_node_overhead_ns(planstate);
	if (overhead_ns >= 0 && planstate->instrument->nloops > 0)
	{
		double		ms = overhead_ns / 1e6;
		bool		pooled;
		double		call_ns = ts_node_overhead_call_ns(planstate, &pooled);

		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			StringInfoData buf;

			initStringInfo(&buf);
			appendStringInfo(&buf, "~%.*f ms", ms < 0.1 ? 3 : 1, ms);
			if (ts_node_overhead_subtracted(planstate))
				appendStringInfoString(&buf, " (subtracted");
			if (call_ns >= 0)
				appendStringInfo(&buf, "%s%.1f ns a call, measured in the plan%s",
								 ts_node_overhead_subtracted(planstate) ? "; " : " (",
								 call_ns, pooled ? "'s other nodes" : "");
			if (ts_node_overhead_subtracted(planstate) || call_ns >= 0)
				appendStringInfoChar(&buf, ')');
			ExplainPropertyText("Timing Overhead", buf.data, es);
			pfree(buf.data);
		}
		else
		{
			ExplainPropertyFloat("Timing Overhead", "ms", ms, 3, es);
			if (call_ns >= 0)
			{
				ExplainPropertyFloat("Timing Overhead Measured Per Call", "ns",
									 call_ns, 1, es);
				ExplainPropertyText("Timing Overhead Measured At",
									pooled ? "other nodes" : "this node", es);
			}
		}
	}

	ts_explain_estimate(planstate, es);
	ts_explain_usage_sampled(planstate, es);

	if (ancestors == NIL)
		ts_explain_plan_timing(planstate, es);
}

void
ts_explain_init(void)
{
	prev_explain_per_node = explain_per_node_hook;
	explain_per_node_hook = ts_explain_per_node;
}

#endif
