/*-------------------------------------------------------------------------
 *
 * overhead.c
 *	  The instrumentation's own cost: for every exactly timed plan node,
 *	  how much of its total is its timing's and its children's, from a
 *	  per-call cost calibrated once per process and, with
 *	  timing_source.subtract_overhead, measured in the plan by the probes
 *	  the node wrappers run (insitu.h); removed from the printed times
 *	  where that setting asks.  EXPLAIN (explain.c) and
 *	  timing_source_compare() (compare.c) show the estimate.
 *
 * The wrappers themselves, and the hooks that bind them and call
 * ts_overhead_finish(), are in instrument.c; docs/internals.md describes
 * the model, the calibrations and the probes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "instrument_private.h"
#include "track.h"

#ifdef TS_HAVE_NODE_WRAPPERS

#ifdef __linux__
#include <sched.h>
#endif
#include <unistd.h>

#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"

/*
 * The instrumentation's own cost (timing_source.subtract_overhead).
 *
 * An exactly timed node's total includes, per call, the part of its own
 * clock reads that falls between them, and per call of each timed node
 * beneath it everything that node's timing costs (a read pair and the
 * wrapper's bookkeeping).  Both per-call costs are measured once per
 * process and variant, the first time an estimate is needed, by running
 * the very wrapper a node runs around an empty node function (see
 * docs/internals.md for why not per query and not in the postmaster);
 * the calls come from the node's own counts.  That calibration is a model
 * of a node; where the cost is to be subtracted, each exactly timed node
 * also measures it among its own calls (insitu.h, ts_probe_apply), and a
 * node with enough probes uses its own figure.
 */
typedef struct TsCallCost
{
	bool		measured;
	double		inside_ns;		/* per call, inside the node's own interval */
	double		outside_ns;		/* per call, seen only by what encloses it */
} TsCallCost;

#define TS_CAL_CALLS	1000
#define TS_CAL_BATCHES	15

/* [wrapper set][usage variant]; core's start/stop pair [with usage] */
static TsCallCost ts_wrapper_cost[TS_WRAPPER_SETS][TS_USAGE_WIDE + 1];
static TsCallCost ts_core_cost[2];

static TupleTableSlot ts_cal_slot;	/* zeroed: not empty, a "tuple" */

/*
 * The calibration node does per call what the cheapest real nodes do per
 * tuple: a few loads and stores that depend on each other, with branches.
 * Around an empty function the wrapper's two reads would run back to back
 * and cost what their throughput allows; around work, the CPU overlaps
 * part of them with it, as it does in a real plan.
 */
#define TS_CAL_WORK		32
static uint64 ts_cal_buf[4096];
static int	ts_cal_pos = 0;
static uint64 ts_cal_state = 1;

static pg_noinline TupleTableSlot *
ts_cal_node(PlanState *node)
{
	uint64		x = ts_cal_state;
	int			p = ts_cal_pos;

	for (int i = 0; i < TS_CAL_WORK; i++)
	{
		uint64		v = ts_cal_buf[p];

		if (v & 1)
			x += v;
		else
			x ^= v >> 3;
		ts_cal_buf[p] = v + x;
		p = (p + 7) & (lengthof(ts_cal_buf) - 1);
	}
	ts_cal_pos = p;
	ts_cal_state = x;
	return &ts_cal_slot;
}

/*
 * A plan state for the calibration node, timed as a node with (or
 * without) buffer usage is; *ti is its instrumentation.  Both are the
 * caller's to free.
 */
static PlanState *
ts_cal_plan_state(bool usage, TsInstrumentation **ti)
{
	PlanState  *ps = palloc0(sizeof(PlanState));

	*ti = palloc0(sizeof(TsInstrumentation));
	TS_INSTR_FLAGS(&(*ti)->instr)->need_timer = true;
	TS_INSTR_FLAGS(&(*ti)->instr)->need_bufusage = usage;
	(*ti)->weight = 1;
	ps->instrument = &(*ti)->instr;
	ps->ExecProcNodeReal = ts_cal_node;
	return ps;
}

static double
ts_median(double *v, int n)
{
	/* insertion sort: a handful of values */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--)
		{
			double		t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[n / 2];
}

/*
 * Time TS_CAL_CALLS calls of the calibration node, called directly,
 * through "rows" (the same wrapper without a clock: what TIMING OFF runs)
 * and through "wrapper" (NULL: core's InstrStartNode/InstrStopNode around
 * it), in several batches, and keep the medians of each batch's
 * differences: a batch that was preempted does not move them.  The cost
 * is timing's: what the timed wrapper costs beyond the clock-less one.
 * Between two calls the calibration node's work runs once more, as a
 * parent's would: one call's last read does not meet the next call's
 * first.
 */
static void
ts_cal_measure(ExecProcNodeMtd wrapper, ExecProcNodeMtd rows, bool usage,
			   TsCallCost *cost)
{
	TsInstrumentation *ti;
	PlanState  *ps = ts_cal_plan_state(usage, &ti);
	double		direct[TS_CAL_BATCHES];
	double		wrapped[TS_CAL_BATCHES];
	double		inside[TS_CAL_BATCHES];
	double		base[TS_CAL_BATCHES];
	uint64		saved_calls = ts_pending_calls;
	double		d;

	ps->ExecProcNode = wrapper;

	for (int b = 0; b < TS_CAL_BATCHES; b++)
	{
		uint64		t0,
					t1;

		t0 = tsclock_system_ns();
		for (int i = 0; i < TS_CAL_CALLS; i++)
			(void) ps->ExecProcNodeReal(ps);
		t1 = tsclock_system_ns();
		direct[b] = (double) (t1 - t0) / TS_CAL_CALLS;

		/* the reference: each call followed by its parent's work */
		t0 = tsclock_system_ns();
		for (int i = 0; i < TS_CAL_CALLS; i++)
		{
			(void) (rows != NULL ? rows(ps) : ps->ExecProcNodeReal(ps));
			(void) ts_cal_node(NULL);
		}
		t1 = tsclock_system_ns();
		base[b] = (double) (t1 - t0) / TS_CAL_CALLS;

		INSTR_TIME_SET_ZERO(ti->instr.counter);
		ti->instr.running = false;
		t0 = tsclock_system_ns();
		if (wrapper != NULL)
		{
			for (int i = 0; i < TS_CAL_CALLS; i++)
			{
				(void) ps->ExecProcNode(ps);
				(void) ts_cal_node(NULL);
			}
		}
		else
		{
			for (int i = 0; i < TS_CAL_CALLS; i++)
			{
				InstrStartNode(&ti->instr);
				(void) ps->ExecProcNodeReal(ps);
				InstrStopNode(&ti->instr, 1.0);
				(void) ts_cal_node(NULL);
			}
		}
		t1 = tsclock_system_ns();
		wrapped[b] = (double) (t1 - t0) / TS_CAL_CALLS - base[b];
		inside[b] = TS_NODE_COUNTER_NS(&ti->instr) / TS_CAL_CALLS - direct[b];
	}
	/* the calibration's calls are not the workload's */
	ts_pending_calls = saved_calls;

	/*
	 * Each batch's differences, from loops run back to back, then their
	 * medians: a slow stretch of the machine moves a batch's loops alike.
	 */
	d = ts_median(direct, TS_CAL_BATCHES);
	cost->inside_ns = Max(ts_median(inside, TS_CAL_BATCHES), 0.0);
	cost->outside_ns = Max(ts_median(wrapped, TS_CAL_BATCHES) -
						   cost->inside_ns, 0.0);
	cost->measured = true;
	pfree(ps);
	pfree(ti);
	ereport(DEBUG3,
			(errmsg_internal("timing_source: %s per call: %.2f ns inside the node's interval, %.2f ns outside (%.2f direct)",
							 wrapper == NULL ? "core's node timing" : "the node wrappers' timing",
							 cost->inside_ns, cost->outside_ns, d)));
}

/*
 * What probing itself costs (timing_source.subtract_overhead), beyond the
 * timed calls the estimate counts: every call of a probed node passes a
 * countdown, and every probe runs its calls through an out-of-line
 * function that reads the clock twice more, draws a random number and
 * keeps its statistics.  That work falls between the node's calls, so
 * only what encloses the node sees it; counted nowhere, it stayed in the
 * parents' subtracted totals, most in plans of many short loops, whose
 * nodes probe most often (docs/internals.md).
 */
typedef struct TsProbeCost
{
	bool		measured;
	double		call_ns;		/* per call: the countdown */
	double		probe_ns;		/* per probe, beyond its calls' own cost */
} TsProbeCost;

static TsProbeCost ts_probe_cost[TS_WRAPPER_SETS][TS_USAGE_WIDE + 1];

/* calls of each loop of a batch */
#define TS_CAL_PROBE_CALLS	(2 * TS_CAL_CALLS)

/* the loops of ts_cal_measure_probe */
typedef enum TsCalProbeLoop
{
	TS_CAL_EXACT,				/* the exact wrapper */
	TS_CAL_IDLE,				/* the probed one, its countdown never ending */
	TS_CAL_BUSY,				/* the probed one, probing */
	TS_CAL_LOOPS
} TsCalProbeLoop;

/*
 * Time, in several batches, TS_CAL_PROBE_CALLS calls of the calibration
 * node (each followed by its parent's work, as in ts_cal_measure) through
 * each of the loops above, in a rotating order so that none always runs
 * first; the busy loop probes as a young node does.  Idle less exact is
 * the countdown.  Busy less idle is the probes' work less what their bare
 * calls saved; so each probe's cost is that difference, plus the savings,
 * over the probes.  A bare call saves what a timed one costs beyond it
 * where probes run it, from a call of ts_probe_call: the calibration
 * node's own spans measure that, as a plan node's do (insitu.h), and the
 * calibrated cost of a timed call ("timed_ns", ts_cal_measure's, from a
 * plain loop) stands in only if they did not measure it precisely.
 * Medians of the batches' figures, as there.
 */
static void
ts_cal_measure_probe(ExecProcNodeMtd timer, ExecProcNodeMtd probed,
					 bool usage, double timed_ns, TsProbeCost *pc)
{
	TsInstrumentation *ti;
	PlanState  *ps = ts_cal_plan_state(usage, &ti);
	double		per_call[TS_CAL_BATCHES];
	double		per_probe[TS_CAL_BATCHES];
	double		busy_less_idle[TS_CAL_BATCHES];
	double		bare[TS_CAL_BATCHES];
	double		probes[TS_CAL_BATCHES];
	double		probes_seen = 0;
	double		saving = timed_ns;
	double		span_cost;
	double		span_se;
	bool		in_context = false;
	uint64		saved_calls = ts_pending_calls;

	ti->probed = true;

	for (int b = 0; b < TS_CAL_BATCHES; b++)
	{
		double		loop_ns[TS_CAL_LOOPS];

		for (int k = 0; k < TS_CAL_LOOPS; k++)
		{
			TsCalProbeLoop which = (TsCalProbeLoop) ((b + k) % TS_CAL_LOOPS);
			uint64		t0,
						t1;

			INSTR_TIME_SET_ZERO(ti->instr.counter);
			ti->instr.running = false;
			ti->instr.tuplecount = 0;
			ti->instr.ntuples = 0;
			ti->probe_stage = TS_PROBE_FIRST;
			ti->probe_pending = 0;
			ti->bare_calls = 0;
			ti->probes = 0;
			ti->countdown = which == TS_CAL_IDLE ? PG_INT64_MAX :
				ts_probe_gap(TS_PROBE_GAP_MIN, ts_rng_uniform());
			ps->ExecProcNode = which == TS_CAL_EXACT ? timer : probed;

			t0 = tsclock_system_ns();
			for (int i = 0; i < TS_CAL_PROBE_CALLS; i++)
			{
				(void) ps->ExecProcNode(ps);
				(void) ts_cal_node(NULL);
			}
			t1 = tsclock_system_ns();
			loop_ns[which] = (double) (t1 - t0);
			if (which == TS_CAL_BUSY)
			{
				probes[b] = ti->probes;
				bare[b] = ti->bare_calls + ti->probe_pending;
			}
		}
		per_call[b] = (loop_ns[TS_CAL_IDLE] - loop_ns[TS_CAL_EXACT]) /
			TS_CAL_PROBE_CALLS;
		busy_less_idle[b] = loop_ns[TS_CAL_BUSY] - loop_ns[TS_CAL_IDLE];
		probes_seen += probes[b];
	}
	ts_pending_calls = saved_calls;

	if (ts_span_cost(&ti->spans, &span_cost, &span_se) &&
		ts_span_cost_precise(span_se, timed_ns))
	{
		saving = Max(span_cost, 0.0);
		in_context = true;
	}
	for (int b = 0; b < TS_CAL_BATCHES; b++)
		per_probe[b] = probes[b] > 0 ?
			(busy_less_idle[b] + bare[b] * saving) / probes[b] : 0;

	pc->call_ns = Max(ts_median(per_call, TS_CAL_BATCHES), 0.0);
	pc->probe_ns = Max(ts_median(per_probe, TS_CAL_BATCHES), 0.0);
	pc->measured = true;
	pfree(ps);
	pfree(ti);
	ereport(DEBUG3,
			(errmsg_internal("timing_source: probing: %.2f ns a probe beyond its calls, %.2f ns a call for the countdown (%.0f probes in %d batches; a bare call saved %.2f ns, %s)",
							 pc->probe_ns, pc->call_ns, probes_seen,
							 TS_CAL_BATCHES, saving,
							 in_context ? "measured by the probes" :
							 "calibrated")));
}

/*
 * An initPlan's timing cost, to be counted by the node that runs it (its
 * first call that needs the value) rather than the one it hangs from
 */
typedef struct TsMovedCost
{
	PlanState  *runner;
	PlanState  *owner;			/* the node it hangs from */
	double		ns;
	int			init_id;		/* the initPlan's plan node, -1 if none */
	double		share;			/* of the initPlan's cost, where split */
} TsMovedCost;

typedef struct TsOverheadWalk
{
	TsPlanEntry *plan;
	bool		subtract;		/* adjust the times (else only estimate) */
	double		below_ns;		/* what the children's timing added */
	PlanState  *parent;			/* whose children these are */
} TsOverheadWalk;

static double ts_overhead_node(PlanState *node, TsPlanEntry *plan,
							   bool subtract);
static double ts_overhead_subtree(PlanState *node, TsPlanEntry *plan,
								  bool subtract);

/*
 * Whether node is a subplan's top that this walk has met already (adding
 * it to *seen if not).  Several SubPlan expressions can share one
 * subplan, each partition's scan the one of a correlated subquery, say:
 * the tree walk reaches it once from each, and the executor lists it
 * again in es_subplanstates.  Its figures are counted once.
 */
static bool
ts_subplan_seen(List *subplans, List **seen, PlanState *node)
{
	if (!list_member_ptr(subplans, node))
		return false;
	if (list_member_ptr(*seen, node))
		return true;
	*seen = lappend(*seen, node);
	return false;
}

/* the initPlan of node whose plan child is, or NULL */
static SubPlanState *
ts_init_plan_of(PlanState *node, PlanState *child)
{
	ListCell   *lc;

	foreach(lc, node->initPlan)
	{
		if (((SubPlanState *) lfirst(lc))->planstate == child)
			return (SubPlanState *) lfirst(lc);
	}
	return NULL;
}

/* the parent's initPlans are counted before the walk, where they run */
static bool
ts_overhead_child(PlanState *child, void *arg)
{
	TsOverheadWalk *w = (TsOverheadWalk *) arg;

	if (child != NULL && ts_init_plan_of(w->parent, child) == NULL)
		w->below_ns += ts_overhead_node(child, w->plan, w->subtract);
	return false;
}

/*
 * Where initPlans run.  An initPlan runs when its value is first needed,
 * inside the call of the node whose expressions read it, which may lie
 * deep below the node it hangs from: a HAVING's subquery hangs from the
 * plan's top, above the Sort, and runs inside the Aggregate's call; a
 * CTE hangs from the top and runs inside the first CTE Scan that reads
 * it, which may itself be inside another initPlan's run.  That node's
 * calls, and those of every node above it, then hold the initPlan's run
 * and its timing.
 *
 * The readers of a value are the CTE Scans of a CTE, and the nodes whose
 * subtree reads a value (the planner's extParam) while not exactly one of
 * their children's does:
 * none, so the node reads it itself, or several, so it contains whichever
 * reads first (with exactly one, the reading is looked for below, though
 * the node may read it too).  The runner is the lowest node that contains
 * every reader, where an initPlan's plan is contained by its own runner
 * rather than by the node it hangs from; so one runner can depend on
 * another's, whichever comes first in the plan (a CTE read by the CTE
 * after it and by the query waits for that CTE's runner, and so on down a
 * chain of them), and the runners are found over as many passes as it
 * takes for none to change.  A runner not below the node the initPlan
 * hangs from is not believed: that node is used.
 */
typedef struct TsPlanLink
{
	PlanState  *node;
	int			parent;			/* its index, -1 at a root */
	SubPlanState *init;			/* the initPlan whose plan it is, or NULL */
	int			runner;			/* that initPlan's runner, -1 before found */
} TsPlanLink;

typedef struct TsPlanLinks
{
	TsPlanLink *links;
	int			n;
	int			size;
	int			parent;			/* while walking */
	List	   *subplans;		/* the executor's es_subplanstates */
	List	   *seen;			/* those of them linked already */
} TsPlanLinks;

static bool
ts_link_node(PlanState *node, void *arg)
{
	TsPlanLinks *l = (TsPlanLinks *) arg;
	int			save = l->parent;
	int			me;

	if (node == NULL)
		return false;
	if (l->n == l->size)
	{
		l->size *= 2;
		l->links = repalloc(l->links, l->size * sizeof(TsPlanLink));
	}
	me = l->n++;
	l->links[me].node = node;
	l->links[me].parent = save;
	l->links[me].init = save >= 0 ? ts_init_plan_of(l->links[save].node, node) : NULL;
	l->links[me].runner = -1;

	/*
	 * A subplan several nodes run is met from each: every meeting is kept,
	 * as ts_subplan_holder looks for what is above them all, but its nodes
	 * are linked once, so that what they read is read in one place (an
	 * initPlan hung inside it finds its reader there, not a copy of the
	 * reader in each runner's)
	 */
	if (ts_subplan_seen(l->subplans, &l->seen, node))
		return false;
	l->parent = me;
	(void) planstate_tree_walker(node, ts_link_node, l);
	l->parent = save;
	return false;
}

/* what contains a node's calls: its parent, or the runner of its initPlan */
static int
ts_link_up(TsPlanLinks *l, int i)
{
	if (l->links[i].init != NULL && l->links[i].runner >= 0)
		return l->links[i].runner;
	return l->links[i].parent;
}

/* the params an initPlan sets (a CTE's: its cteParam) */
static Bitmapset *
ts_init_plan_params(SubPlanState *sps)
{
	Bitmapset  *params = NULL;
	ListCell   *lc;

	foreach(lc, sps->subplan->setParam)
		params = bms_add_member(params, lfirst_int(lc));
	return params;
}

/* whether plan p is a CTE Scan of the CTE that sets one of params */
static inline bool
ts_reads_cte(Plan *p, Bitmapset *params)
{
	return IsA(p, CteScan) && bms_is_member(((CteScan *) p)->cteParam, params);
}

/*
 * Whether node i reads one of params itself, or contains several readers.
 * A CTE Scan reads its CTE through cteParam, which no extParam holds (a
 * CTE is set at the level that reads it).
 */
static bool
ts_link_reads(TsPlanLinks *l, int i, Bitmapset *params)
{
	Plan	   *p = l->links[i].node->plan;
	int			children = 0;

	if (ts_reads_cte(p, params))
		return true;
	/* a Gather runs the initPlans its workers read in its own first call */
	if ((IsA(p, Gather) && bms_overlap(((Gather *) p)->initParam, params)) ||
		(IsA(p, GatherMerge) &&
		 bms_overlap(((GatherMerge *) p)->initParam, params)))
		return true;
	if (!bms_overlap(p->extParam, params))
		return false;
	for (int j = i + 1; j < l->n; j++)
	{
		if (l->links[j].parent == i &&
			bms_overlap(l->links[j].node->plan->extParam, params))
			children++;
	}
	return children != 1;
}

/*
 * The lowest link at or above both a and b, going up through parents or,
 * with "runners", through initPlans' runners (ts_link_up); -1 if none
 */
static int
ts_link_meet(TsPlanLinks *l, int a, int b, bool runners)
{
	int		   *chain = palloc((l->n + 1) * sizeof(int));
	int			len = 0;
	int			meet = -1;
	int			steps = 0;

	for (int x = a; x >= 0 && len <= l->n;
		 x = runners ? ts_link_up(l, x) : l->links[x].parent)
		chain[len++] = x;
	for (int x = b; x >= 0 && meet < 0 && steps <= l->n;
		 x = runners ? ts_link_up(l, x) : l->links[x].parent, steps++)
	{
		for (int c = 0; c < len; c++)
		{
			if (chain[c] == x)
			{
				meet = x;
				break;
			}
		}
	}
	pfree(chain);
	return meet;
}

/* the runner of the initPlan whose plan is node i (see above) */
static int
ts_link_runner(TsPlanLinks *l, int i)
{
	int			owner = l->links[i].parent;
	Bitmapset  *params = ts_init_plan_params(l->links[i].init);
	int			common = -1;

	/* the lowest node containing every reader */
	for (int r = 0; r < l->n; r++)
	{
		if (!ts_link_reads(l, r, params))
			continue;
		common = common < 0 ? r : ts_link_meet(l, common, r, true);
		if (common < 0)
			break;
	}
	bms_free(params);

	/* believed only below (or at) the node it hangs from */
	if (common >= 0 && ts_link_meet(l, common, owner, true) == owner)
		return common;
	return owner;
}

/* every initPlan's runner in the plan under top, for ts_overhead_node */
static void
ts_link_plan(TsPlanEntry *plan, PlanState *top)
{
	TsPlanLinks *l = palloc(sizeof(TsPlanLinks));

	l->size = 64;
	l->n = 0;
	l->links = palloc(l->size * sizeof(TsPlanLink));
	l->parent = -1;
	l->subplans = plan->entry.queryDesc->estate->es_subplanstates;
	l->seen = NIL;
	(void) ts_link_node(top, l);

	/*
	 * Each pass settles at least one more link of the longest chain of
	 * runners that depend on each other (an initPlan's plan cannot contain
	 * itself, so there is no cycle): one pass per initPlan, and one to see
	 * nothing change, is the most it can take.
	 */
	for (int pass = 0; pass <= l->n; pass++)
	{
		bool		changed = false;

		for (int i = 0; i < l->n; i++)
		{
			int			runner;

			CHECK_FOR_INTERRUPTS();
			if (l->links[i].init == NULL)
				continue;
			runner = ts_link_runner(l, i);
			changed |= (runner != l->links[i].runner);
			l->links[i].runner = runner;
		}
		if (!changed)
			break;
	}
	plan->links = l;
}

/* the node that runs initPlan sps of node; node itself if not known */
static PlanState *
ts_init_plan_runner(TsPlanEntry *plan, PlanState *node, SubPlanState *sps)
{
	TsPlanLinks *l = plan->links;

	if (l == NULL)
		return node;
	for (int i = 0; i < l->n; i++)
	{
		if (l->links[i].init == sps && l->links[i].runner >= 0)
			return l->links[l->links[i].runner].node;
	}
	return node;
}

/* leave "ns" of an initPlan's timing (plan node init_id) for runner */
static void
ts_move_cost(TsPlanEntry *plan, PlanState *owner, PlanState *runner,
			 double ns, int init_id, double share)
{
	TsMovedCost *m = palloc(sizeof(TsMovedCost));

	m->ns = ns;
	m->runner = runner;
	m->owner = owner;
	m->init_id = init_id;
	m->share = share;
	plan->moved = lappend(plan->moved, m);
}

/*
 * The wall time a node's calls have held so far, before the walk reaches
 * it (and subtracts from it): its loops', the last one's included
 */
static double
ts_node_run_ns(TsPlanEntry *plan, PlanState *node)
{
	TsNodeInstr *instr = node->instrument;

	if (instr == NULL || !TS_INSTR_FLAGS(instr)->need_timer)
		return 0;
	if (ts_is_exact(node, plan->set) && ((TsInstrumentation *) instr)->subtracted)
		return 0;
	InstrEndLoop(instr);
	return ts_node_total_s(instr) * 1e9;
}

/*
 * Of the links "links[0..n-1]", the one (its position there) nearest above
 * links[j] through runners, or -1 if none holds it
 */
static int
ts_link_nearest_above(TsPlanLinks *l, const int *links, int n, int j)
{
	int			steps = 0;

	for (int x = ts_link_up(l, links[j]); x >= 0 && steps <= l->n;
		 x = ts_link_up(l, x), steps++)
	{
		for (int k = 0; k < n; k++)
		{
			if (k != j && links[k] == x)
				return k;
		}
	}
	return -1;
}

/* readers' shares of a CTE's run adding up to more: who ran it is unknown */
#define TS_CTE_SHARES_MAX	1.1

/*
 * Leave an initPlan's timing cost "ns" for the node that runs it.  A CTE
 * does not run in one place: ExecCteScan fills the CTE's store as its
 * readers need rows, so whichever CTE Scan reads past the others runs that
 * part of the CTE, inside its own call (a CTE Scan under a Hash all of it;
 * one in an initPlan that another reader's filter runs, all but that
 * reader's first row, where the CTE's plan streams; none of it where the
 * CTE's plan made every row in that reader's first call, as a hash
 * aggregate does).  The runner, the lowest node holding every reader, holds
 * all of it, but the nodes between keep their share.  A reader's calls held
 * at most the CTE's run, and at most the reader's own time: each reader
 * below the runner is given that share of the cost, less the shares of the
 * readers its calls hold, the runner the rest.  Readers' own work (reading
 * the store back, their filters) adds to those shares: where they add up
 * to a little more than the whole they are scaled down, and where to much
 * more, which reader ran the CTE cannot be told from their times (a cheap
 * CTE that three readers read through), and the runner gets it all, as
 * readers given shares of a run they did not hold would lose time they
 * spent: past TS_CTE_SHARES_MAX.  "run_ns" is the CTE's plan's time, as
 * it ran.
 */
static void
ts_move_init_plan(TsPlanEntry *plan, PlanState *owner, SubPlanState *sps,
				  double ns, double run_ns)
{
	PlanState  *runner = ts_init_plan_runner(plan, owner, sps);
	TsPlanLinks *l = plan->links;
	int			init_id = sps->planstate->plan->plan_node_id;
	double		left = 1.0;

	if (runner != owner && l != NULL && run_ns > 0 && ns > 0)
	{
		Bitmapset  *params = ts_init_plan_params(sps);
		int		   *readers = palloc(l->n * sizeof(int));
		double	   *held = palloc(l->n * sizeof(double));
		double	   *shares = palloc(l->n * sizeof(double));
		double		sum = 0;
		int			n = 0;

		for (int i = 0; i < l->n; i++)
		{
			PlanState  *reader = l->links[i].node;

			if (reader == runner || !ts_reads_cte(reader->plan, params))
				continue;
			readers[n] = i;
			held[n] = Min(ts_node_run_ns(plan, reader), run_ns) / run_ns;
			shares[n] = held[n];
			n++;
		}

		/*
		 * A reader whose calls hold another's (the other in an initPlan its
		 * filter runs) holds that one's part too: its own is what is left
		 * after the nearest readers inside it.
		 */
		for (int j = 0; j < n; j++)
		{
			int			above = ts_link_nearest_above(l, readers, n, j);

			if (above >= 0)
				shares[above] -= held[j];
		}
		for (int k = 0; k < n; k++)
		{
			shares[k] = Max(shares[k], 0.0);
			sum += shares[k];
		}
		if (sum > TS_CTE_SHARES_MAX)
		{
			ereport(DEBUG2,
					(errmsg_internal("timing_source: plan node %d: its CTE's readers' own times add up to %.0f%% of its run; its timing is left to plan node %d, which holds them all",
									 init_id, 100 * sum, runner->plan->plan_node_id)));
			n = 0;
		}
		for (int k = 0; k < n; k++)
		{
			double		share = sum > 1.0 ? shares[k] / sum : shares[k];

			if (share <= 0)
				continue;
			ts_move_cost(plan, owner, l->links[readers[k]].node, ns * share,
						 init_id, share);
			left -= share;
		}
		bms_free(params);
		pfree(readers);
		pfree(held);
		pfree(shares);
	}
	/* the readers' shares can leave a rounding error's worth */
	if (left > 1e-6)
		ts_move_cost(plan, owner, runner, ns * left, init_id, left);
}

/*
 * The CPUs this process may run on (its affinity mask, which taskset and
 * cpusets narrow; else the online CPUs), or fewer where its cgroup's CPU
 * quota allows less time than that, once a process
 */
static int
ts_cpus(void)
{
	static int	ncpus = 0;

	if (ncpus == 0)
	{
		int			quota = tsclock_cpu_quota();

#ifdef __linux__
		cpu_set_t	set;

		if (sched_getaffinity(0, sizeof(set), &set) == 0)
			ncpus = CPU_COUNT(&set);
#endif
		if (ncpus <= 0)
			ncpus = (int) sysconf(_SC_NPROCESSORS_ONLN);
		if (quota > 0 && (ncpus <= 0 || quota < ncpus))
			ncpus = quota;
		if (ncpus <= 0)
			ncpus = 1;
	}
	return ncpus;
}

/*
 * Processes a node ran in: the leader if it ran there, and each worker
 * that ran it.  A Gather waits for them side by side, so what their
 * timing cost reaches it divided among them, or among the CPUs they share
 * where there are fewer: processes that take turns on a CPU stretch each
 * other's wall time by what each of them spends, timing included.
 */
static int
ts_participants(PlanState *node)
{
	TsWorkerInstr *w;
	double		wloops = 0;
	int			n = 0;

	if (node == NULL || node->instrument == NULL)
		return 1;
	w = node->worker_instrument;
	if (w != NULL)
		for (int i = 0; i < w->num_workers; i++)
		{
			wloops += w->instrument[i].nloops;
			if (w->instrument[i].nloops > 0)
				n++;
		}
	if (node->instrument->nloops - wloops > 0)
		n++;
	return Max(n, 1);
}

/*
 * What a node's figures, summed over the processes that ran it, gained
 * from each unit of timing cost those processes spent in it.  Side by
 * side on CPUs of their own, each process's times hold its own timing
 * only: 1.  More processes than CPUs take turns, each running at CPUs /
 * processes of full speed, so each one's times stretch by that ratio's
 * inverse, timing included (the summed figures by processes / CPUs of
 * what timing cost), while the Gather above waits for all of it divided
 * among the CPUs.
 */
static double
ts_parallel_stretch(PlanState *node)
{
	int			procs;
	int			cpus;

	if (node->worker_instrument == NULL)
		return 1.0;
	procs = ts_participants(node);
	cpus = ts_cpus();
	if (procs <= cpus)
		return 1.0;
	ereport(DEBUG2,
			(errmsg_internal("timing_source: plan node %d: its timing, summed over %d processes on %d CPUs, stretched their times by %d/%d of it",
							 node->plan->plan_node_id, procs, cpus, procs, cpus)));
	return (double) procs / cpus;
}

/*
 * Scale a node's accumulated times (after InstrEndLoop) by ratio, in
 * [0, 1].  Startup is what the first calls of each loop took, overhead
 * included: scaled as the total is, it stays within it.
 */
static void
ts_scale_times(TsNodeInstr *instr, double ratio)
{
	double		left_s = ts_node_total_s(instr) * ratio;

	ts_node_set_times(instr, left_s,
					  Min(ts_node_startup_s(instr) * ratio, left_s));
}

/*
 * Each parallel worker's copy of a node's figures (EXPLAIN VERBOSE's
 * "Worker N:" lines) loses the share the node's summed total lost: those
 * lines and the node's own must still add up.
 */
static void
ts_scale_worker_times(PlanState *node, double ratio)
{
	TsWorkerInstr *w = node->worker_instrument;

	if (w == NULL)
		return;
	for (int i = 0; i < w->num_workers; i++)
		ts_scale_times(&w->instrument[i], ratio);
}

/*
 * A probed node's bare calls into its total (after InstrEndLoop and
 * ts_probe_settle), once, where this process ran any: see ts_probe_apply.
 * "timed" is the node's calls this total holds that were timed.  A
 * parallel worker does this for its own before core copies its figures to
 * the leader.
 */
void
ts_probe_impute(TsInstrumentation *ti, double timed)
{
	double		total_s;
	double		startup_s;
	double		later_s;
	double		bare_s;

	if (ti->bare_calls <= 0 || ti->imputed)
		return;
	total_s = ts_node_total_s(&ti->instr);
	startup_s = ts_node_startup_s(&ti->instr);
	later_s = Max(total_s - startup_s, 0.0);
	bare_s = ti->bare_ns / 1e9;
	if (ti->bare_orphans > 0 && timed > ti->instr.nloops)
		bare_s += ti->bare_orphans * later_s / (timed - ti->instr.nloops);
	ts_node_set_times(&ti->instr, total_s + bare_s, startup_s);
	ti->imputed = true;
}

/*
 * A probed node (insitu.h): its bare calls go into its total, once, each
 * as long as its probe's timed neighbours (ts_bare_imputed); those of a
 * probe without a usable neighbour (cut short by the end of its loop, or
 * the node's end) as long as the node's timed calls after the first of
 * their loops were on average (a loop's first call, a sort's or a hash's
 * whole input, is startup).  And where its probes measured what a timed
 * call cost in this plan, that figure replaces the calibration's, split
 * into the parts inside and outside the node's own interval as the
 * calibration splits its own.  Returns the calls that were timed.
 */
static double
ts_probe_apply(PlanState *node, TsInstrumentation *ti, const TsCallCost *cost,
			   double calls, double plan_call_ns, double plan_call_se,
			   double *inside_ns, double *outside_ns)
{
	double		timed;
	double		cal = cost->inside_ns + cost->outside_ns;
	double		measured = 0;
	double		se = 0;
	bool		own;

	ts_probe_settle(ti, -1.0);
	/* the workers' bare calls are in their own figures already */
	timed = Max(calls - ti->bare_calls - ti->worker_bare_calls, 0.0);
	ts_probe_impute(ti, timed);

	own = ts_span_cost(&ti->spans, &measured, &se);
	if (own)
		ereport(DEBUG2,
				(errmsg_internal("timing_source: plan node %d: a timed call costs %.2f ns (+/- %.2f) measured in the plan, %.2f ns calibrated; %.0f timed and %.0f bare spans, %.0f left out%s",
								 node->plan->plan_node_id, Max(measured, 0.0),
								 1.96 * se, cal,
								 (double) ti->spans.n[0], (double) ti->spans.n[1],
								 (double) ti->spans.dropped,
								 ts_span_cost_precise(se, cal) ? "" :
								 "; too imprecise to stand for the node")));
	if (own && ts_span_cost_precise(se, cal))
		measured = Max(measured, 0.0);
	else if (plan_call_ns >= 0 && ts_span_cost_precise(plan_call_se, cal))
	{
		/*
		 * Too few spans of its own, or too uneven ones: the plan's other
		 * nodes measured what the calibration only models, on this
		 * machine in this run
		 */
		measured = plan_call_ns;
		ti->call_pooled = true;
		ereport(DEBUG2,
				(errmsg_internal("timing_source: plan node %d: %.0f and %.0f spans, %s; the plan's %.2f ns (+/- %.2f) a timed call, %.2f ns calibrated",
								 node->plan->plan_node_id,
								 (double) ti->spans.n[0], (double) ti->spans.n[1],
								 own ? "too imprecise" : "too few of its own",
								 measured, 1.96 * plan_call_se, cal)));
	}
	else
	{
		ereport(DEBUG2,
				(errmsg_internal("timing_source: plan node %d: %.0f and %.0f spans, and no figure of the plan precise enough to stand for the calibrated %.2f ns",
								 node->plan->plan_node_id,
								 (double) ti->spans.n[0], (double) ti->spans.n[1],
								 cal)));
		return timed;
	}
	ti->call_ns = measured;
	*inside_ns = cal > 0 ? measured * (cost->inside_ns / cal) : measured / 2;
	*outside_ns = measured - *inside_ns;
	return timed;
}

/*
 * The node whose calls hold every run of subplan top, where several
 * SubPlan expressions share it (each partition's scan filtering through
 * one correlated subquery): the lowest node above all the nodes that run
 * it, each of which holds some of its loops in proportions no figure
 * keeps.  (Given to the first the walk meets, all of it was capped at
 * that node's total, and lost where that was a small partition.)  Above
 * them in the plan tree, not through initPlans' runners: so it is on the
 * estimate's path to the first of them, and still to come.  NULL where
 * one node runs it (or the walk did not reach it); *nrunners says how
 * many do.
 */
static PlanState *
ts_subplan_holder(TsPlanLinks *l, PlanState *top, int *nrunners)
{
	int		   *runners = palloc(l->n * sizeof(int));
	int			n = 0;
	int			common = -1;

	for (int i = 0; i < l->n; i++)
	{
		int			p = l->links[i].parent;
		bool		dup = false;

		if (l->links[i].node != top || p < 0)
			continue;
		for (int j = 0; j < n && !dup; j++)
			dup = l->links[runners[j]].node == l->links[p].node;
		if (!dup)
			runners[n++] = p;
	}
	*nrunners = n;
	if (n >= 2)
	{
		common = runners[0];
		for (int r = 1; r < n && common >= 0; r++)
			common = ts_link_meet(l, common, runners[r], false);
	}
	pfree(runners);
	return n >= 2 && common >= 0 ? l->links[common].node : NULL;
}

/*
 * A data-modifying CTE runs inside the CTE Scans that read it only as far
 * as they read; ExecutorFinish runs the rest (ExecPostprocessPlan), and
 * all of one that nothing reads, outside every node's call.  The calls
 * each has made by then are noted here, before ExecutorFinish, so that
 * the estimate gives its runner only their share of its timing cost.
 */
void
ts_overhead_mark_run(QueryDesc *queryDesc, TsPlanEntry *plan)
{
	ListCell   *lc;

	if (plan->sample_every > 1)
		return;
	foreach(lc, queryDesc->estate->es_auxmodifytables)
	{
		PlanState  *ps = (PlanState *) lfirst(lc);

		if (ps->instrument != NULL && ts_is_exact(ps, plan->set))
		{
			TsInstrumentation *ti = (TsInstrumentation *) ps->instrument;

			ti->run_calls = ts_node_calls_so_far(ti);
		}
	}
}

/*
 * The share of a node's timing cost that lies inside its runner's calls:
 * all of it, but for a data-modifying CTE that ExecutorFinish finished
 * (ts_overhead_mark_run), its calls made before, taken as alike
 */
static double
ts_run_share(PlanState *node, TsPlanEntry *plan)
{
	TsInstrumentation *ti;
	double		calls;
	double		share;

	if (!IsA(node, ModifyTableState) || node->instrument == NULL ||
		!ts_is_exact(node, plan->set))
		return 1.0;
	ti = (TsInstrumentation *) node->instrument;
	if (ti->run_calls < 0)
		return 1.0;
	calls = ts_node_calls_so_far(ti);
	share = calls > 0 ? Min(ti->run_calls / calls, 1.0) : 1.0;
	ereport(DEBUG2,
			(errmsg_internal("timing_source: plan node %d: a data-modifying CTE, %.0f of its %.0f calls run by the plan and the rest by ExecutorFinish, outside every node: %.1f%% of its timing goes to the node that runs it",
							 node->plan->plan_node_id, ti->run_calls, calls,
							 100.0 * share)));
	return share;
}

/*
 * ts_overhead_subtree, once for each subplan: the walk meets a shared one
 * once from every node that runs it, and the executor lists it again.
 * A shared subplan's cost waits for the node whose calls hold all of its
 * runs.
 */
static double
ts_overhead_node(PlanState *node, TsPlanEntry *plan, bool subtract)
{
	List	   *subplans = plan->entry.queryDesc->estate->es_subplanstates;
	double		ns;
	PlanState  *holder;
	int			nrunners;

	if (ts_subplan_seen(subplans, &plan->seen, node))
		return 0;
	ns = ts_overhead_subtree(node, plan, subtract) * ts_run_share(node, plan);
	if (!list_member_ptr(subplans, node) ||
		(holder = ts_subplan_holder(plan->links, node, &nrunners)) == NULL)
		return ns;
	ereport(DEBUG2,
			(errmsg_internal("timing_source: plan node %d: a subplan %d nodes run; its %.0f ns of timing go to plan node %d, above them all",
							 node->plan->plan_node_id, nrunners, ns,
							 holder->plan->plan_node_id)));
	ts_move_cost(plan, holder, holder, ns, -1, 1.0);
	return 0;
}

/*
 * A probed node's parallel workers' probes, added to its own once, before
 * anything reads its spans or its bare calls (worker_sampling.c)
 */
static void
ts_workers_probes(PlanState *node, TsInstrumentation *ti)
{
	if (!ti->probed || ti->workers_merged)
		return;
	ti->workers_merged = true;
	ti->workers_probed = ts_worker_probes_collect(node, ti);
}

typedef struct TsPoolWalk
{
	const TsWrapperSet *set;
	TsCostPool	pool;
	List	   *subplans;		/* the executor's es_subplanstates */
	List	   *seen;			/* those of them pooled already */
} TsPoolWalk;

/* add a probed node's measured cost, weighted by its precision; recurse */
static bool
ts_pool_node(PlanState *node, void *arg)
{
	TsPoolWalk *w = (TsPoolWalk *) arg;

	if (node == NULL || ts_subplan_seen(w->subplans, &w->seen, node))
		return false;
	if (node->instrument != NULL && ts_is_exact(node, w->set))
	{
		TsInstrumentation *ti = (TsInstrumentation *) node->instrument;
		double		cost;
		double		se;

		ts_workers_probes(node, ti);
		if (ti->probed && ts_span_cost(&ti->spans, &cost, &se))
			ts_cost_pool_add(&w->pool, cost, se);
	}
	return planstate_tree_walker(node, ts_pool_node, arg);
}

/*
 * Estimate (and with "subtract" remove) the node's instrumentation cost,
 * its subtree's first; returns what the node's timing adds to whatever
 * encloses its calls.
 */
static double
ts_overhead_subtree(PlanState *node, TsPlanEntry *plan, bool subtract)
{
	TsOverheadWalk below;
	ListCell   *lc;
	TsNodeInstr *instr = node->instrument;
	TsInstrumentation *ti = NULL;
	const TsCallCost *cost;
	double		calls;
	double		timed_calls;
	double		inside_ns;
	double		outside_ns;
	double		own;
	double		total_ns;
	double		probing_ns = 0;
	const TsProbeCost *pcost = NULL;
	double		own_calls = 0;
	double		probes = 0;
	double		passed_ns;
	double		moved_ns = 0;

	check_stack_depth();

	below.plan = plan;
	below.subtract = subtract;
	below.below_ns = 0;
	below.parent = node;

	/*
	 * The initPlans first, each cost left for the node that runs it, then
	 * the other children, among whom that node is; then what was left here
	 */
	foreach(lc, node->initPlan)
	{
		SubPlanState *sps = (SubPlanState *) lfirst(lc);
		double		run_ns = ts_node_run_ns(plan, sps->planstate);
		double		ns = ts_overhead_node(sps->planstate, plan, subtract);

		ts_move_init_plan(plan, node, sps, ns, run_ns);
	}
	(void) planstate_tree_walker(node, ts_overhead_child, &below);
	/* an initPlan whose runner the walk did not reach stays here */
	foreach(lc, plan->moved)
	{
		TsMovedCost *m = (TsMovedCost *) lfirst(lc);

		if (m->runner == node || m->owner == node)
		{
			if (m->runner == node && m->owner != node)
				ereport(DEBUG2,
						(errmsg_internal("timing_source: plan node %d: runs an initPlan of plan node %d, whose %.0f ns of timing it holds (%.0f%% of plan node %d's)",
										 node->plan->plan_node_id,
										 m->owner->plan->plan_node_id, m->ns,
										 100 * m->share, m->init_id)));
			moved_ns += m->ns;
			pfree(m);
			plan->moved = foreach_delete_current(plan->moved, lc);
		}
	}

	if (instr == NULL || !TS_INSTR_FLAGS(instr)->need_timer)
		return below.below_ns + moved_ns;

	if (IsA(node, GatherState) || IsA(node, GatherMergeState))
	{
		int			procs = ts_participants(outerPlanState(node));
		int			cpus = ts_cpus();

		below.below_ns /= Min(procs, cpus);
		ereport(DEBUG2,
				(errmsg_internal("timing_source: plan node %d: its processes' timing divided among %d (%d processes, %d CPUs)",
								 node->plan->plan_node_id, Min(procs, cpus),
								 procs, cpus)));
	}
	/* an initPlan runs in this process alone, a Gather's included */
	below.below_ns += moved_ns;

	/* as EXPLAIN would: the last loop's figures into the totals */
	InstrEndLoop(instr);

	if (ts_is_exact(node, plan->set))
	{
		TsUsage usage = ts_node_usage(instr);
		int			set_index = ts_wrapper_set_index(plan->set);
		TsWorkerInstr *w = node->worker_instrument;
		double		wtuples = 0;
		double		wcalls = 0;
		TsVariantWrappers wrappers;

		ti = (TsInstrumentation *) instr;
		ts_variant_wrappers(plan->set, usage, &wrappers);
		if (!ts_wrapper_cost[set_index][usage].measured)
			ts_cal_measure(wrappers.timer, wrappers.rows, usage != TS_USAGE_NONE,
						   &ts_wrapper_cost[set_index][usage]);
		cost = &ts_wrapper_cost[set_index][usage];

		/*
		 * This process counted its calls; a worker's, copied back without
		 * the count of empty returns, are at most one more per loop than
		 * its tuples.
		 */
		if (w != NULL)
			for (int i = 0; i < w->num_workers; i++)
			{
				wtuples += w->instrument[i].ntuples;
				wcalls += w->instrument[i].ntuples + w->instrument[i].nloops;
			}
		calls = Max(instr->ntuples - wtuples, 0.0) + ti->nulls + wcalls;

		/*
		 * A probed node's probes, and its countdown on every call: this
		 * process's, and its workers' where they probed it too
		 * (worker_sampling.c)
		 */
		ts_workers_probes(node, ti);
		if (ti->probed)
		{
			TsProbeCost *pc = &ts_probe_cost[set_index][usage];

			if (!pc->measured)
				ts_cal_measure_probe(wrappers.timer, wrappers.probed,
									 usage != TS_USAGE_NONE,
									 cost->inside_ns + cost->outside_ns, pc);
			own_calls = calls - wcalls;
			probes = ti->probes;
			if (ti->workers_probed)
			{
				own_calls = calls;
				probes += ti->worker_probes;
			}
			probing_ns = probes * pc->probe_ns + own_calls * pc->call_ns;
			pcost = pc;
		}
	}
	else
	{
		int			usage = (TS_INSTR_FLAGS(instr)->need_bufusage ||
							 TS_INSTR_FLAGS(instr)->need_walusage) ? 1 : 0;

		if (!ts_core_cost[usage].measured)
			ts_cal_measure(NULL, NULL, usage, &ts_core_cost[usage]);
		cost = &ts_core_cost[usage];

		/*
		 * Core times it: once per loop for a node it runs through
		 * MultiExecProcNode (and then the struct is ours), else per call,
		 * at most one more than its tuples per loop.
		 */
		if (ts_multi_exec_node(node))
		{
			calls = instr->nloops;
			if (plan->sample_every <= 1)
				ti = (TsInstrumentation *) instr;
		}
		else
			calls = instr->ntuples + instr->nloops;
	}

	inside_ns = cost->inside_ns;
	outside_ns = cost->outside_ns;
	timed_calls = calls;
	if (ti != NULL && ti->probed)
		timed_calls = ts_probe_apply(node, ti, cost, calls, plan->call_ns,
									 plan->call_se, &inside_ns, &outside_ns);

	/*
	 * Never more than the node's own total.  The bare calls' lengths were
	 * taken from timed calls, reads included, so the total holds the
	 * inside part for them as well; they added nothing to the enclosing
	 * calls' time.
	 */
	total_ns = ts_node_total_s(instr) * 1e9;
	own = calls * inside_ns + below.below_ns;
	if (own > total_ns)
		own = total_ns;
	if (own < 0)
		own = 0;

	if (ti != NULL)
	{
		double		shown = own * ts_parallel_stretch(node);

		/* never more than the node's own total (see above) */
		shown = Min(shown, total_ns);

		if (subtract && !ti->subtracted)
		{
			double		total_s = ts_node_total_s(instr);
			double		left_s = Max(total_s - shown / 1e9, 0.0);
			double		kept = total_s > 0 ? left_s / total_s : 0.0;

			ts_scale_times(instr, kept);
			ts_scale_worker_times(node, kept);
			ti->subtracted = true;
		}
		ti->overhead_ns = shown;
	}

	passed_ns = Max(own - (calls - timed_calls) * inside_ns, 0.0) +
		timed_calls * outside_ns + probing_ns;
	if (pcost != NULL)
		ereport(DEBUG2,
				(errmsg_internal("timing_source: plan node %d: %.0f ns of timing seen by what encloses it: %.0f timed calls at %.2f ns, %.0f probes at %.2f ns, %.0f calls at %.2f ns for the countdown, %.0f ns from below",
								 node->plan->plan_node_id, passed_ns,
								 timed_calls, inside_ns + outside_ns,
								 probes, pcost->probe_ns,
								 own_calls, pcost->call_ns, below.below_ns)));
	return passed_ns;
}

/* the top node's estimate of the query that ended last, for compare() */
static double ts_last_top_ns = -1.0;

double
ts_last_top_overhead_ns(void)
{
	return ts_last_top_ns;
}

void
ts_reset_last_top_overhead(void)
{
	ts_last_top_ns = -1.0;
}

/*
 * Estimate the overhead of every node of a bound query, once.  Its
 * workspace lives in the query's own memory: a query run inside a
 * function, many times, finishes in a context that outlives its runs.
 */
static void
ts_plan_estimate(TsPlanEntry *plan, bool subtract)
{
	QueryDesc  *queryDesc = plan->entry.queryDesc;
	List	   *subplans = queryDesc->estate->es_subplanstates;
	MemoryContext oldcxt;
	ListCell   *lc;
	TsPoolWalk	pool;

	if (plan->estimated || plan->sample_every > 1)
		return;
	plan->estimated = true;
	oldcxt = MemoryContextSwitchTo(queryDesc->estate->es_query_cxt);

	/* what the plan's probed nodes measured, for those too small to */
	pool.set = plan->set;
	pool.pool.sum = pool.pool.weight = 0;
	pool.subplans = subplans;
	pool.seen = NIL;
	(void) ts_pool_node(queryDesc->planstate, &pool);
	if (ts_cost_pool_get(&pool.pool, &plan->call_ns, &plan->call_se))
		plan->call_ns = Max(plan->call_ns, 0.0);
	else
		plan->call_ns = plan->call_se = -1.0;
	list_free(pool.seen);

	plan->moved = NIL;
	plan->seen = NIL;
	ts_link_plan(plan, queryDesc->planstate);
	(void) ts_overhead_node(queryDesc->planstate, plan, subtract);

	/*
	 * Then the subplans that walk did not reach (normally none: it reaches
	 * each through the node that runs it; those are seen already).  The
	 * planner leaves NULL for the arm of an AlternativeSubPlan it dropped.
	 */
	foreach(lc, subplans)
	{
		PlanState  *sub = (PlanState *) lfirst(lc);

		if (sub != NULL)
			(void) ts_overhead_node(sub, plan, subtract);
	}

	list_free(plan->seen);
	plan->seen = NIL;
	list_free_deep(plan->moved);
	plan->moved = NIL;
	list_free(plan->links->seen);
	pfree(plan->links->links);
	pfree(plan->links);
	plan->links = NULL;
	MemoryContextSwitchTo(oldcxt);
}

double
ts_node_overhead_ns(PlanState *node)
{
	TsPlanEntry *plan;

	if (node == NULL || node->instrument == NULL ||
		(plan = ts_plan_of(node)) == NULL || plan->sample_every > 1)
		return -1.0;
	if (!ts_is_exact(node, plan->set) &&
		!(ts_multi_exec_node(node) && TS_INSTR_FLAGS(node->instrument)->need_timer))
		return -1.0;
	ts_plan_estimate(plan, false);
	return ((TsInstrumentation *) node->instrument)->overhead_ns;
}

bool
ts_node_overhead_subtracted(PlanState *node)
{
	if (ts_node_overhead_ns(node) < 0)
		return false;
	return ((TsInstrumentation *) node->instrument)->subtracted;
}

double
ts_node_overhead_call_ns(PlanState *node, bool *pooled)
{
	TsInstrumentation *ti;

	*pooled = false;
	if (ts_node_overhead_ns(node) < 0)
		return -1.0;
	ti = (TsInstrumentation *) node->instrument;
	*pooled = ti->call_pooled;
	return ti->probed ? ti->call_ns : -1.0;
}

/*
 * At ExecutorFinish, the last point where the times EXPLAIN and
 * auto_explain print can still be adjusted: estimate (and, where the
 * query asked, subtract) every node's cost; keep the top node's for
 * timing_source_compare(), for an explained query only.
 */
void
ts_overhead_finish(QueryDesc *queryDesc, TsPlanEntry *plan)
{
	if (plan->sample_every > 1)
		return;
	ts_plan_estimate(plan, plan->subtract);
	if (queryDesc->planstate->instrument != NULL &&
		!ts_tracked_statement(queryDesc))
		ts_last_top_ns = ts_node_overhead_ns(queryDesc->planstate);
}

#else							/* !TS_HAVE_NODE_WRAPPERS */

/* no wrappers, no estimate (see instrument.c) */
double
ts_last_top_overhead_ns(void)
{
	return -1.0;
}

void
ts_reset_last_top_overhead(void)
{
}

#ifdef TS_HAVE_EXECUTOR_HOOK
double
ts_node_overhead_ns(PlanState *node)
{
	return -1.0;
}

bool
ts_node_overhead_subtracted(PlanState *node)
{
	return false;
}

double
ts_node_overhead_call_ns(PlanState *node, bool *pooled)
{
	*pooled = false;
	return -1.0;
}
#endif

#endif							/* TS_HAVE_NODE_WRAPPERS */
