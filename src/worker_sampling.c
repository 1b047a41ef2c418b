/*-------------------------------------------------------------------------
 *
 * worker_sampling.c
 *	  Parallel workers' sampling and probing figures, passed to their
 *	  leader, so that a sampled node the workers ran has an interval too,
 *	  and the cost of a timed call is measured in the workers' calls too.
 *
 * Core copies back only a worker's Instrumentation: the totals, not the
 * count of sampled calls or the sum their variance needs, nor a probed
 * node's spans (instrument_private.h, TsInstrumentation).  So the leader
 * of a sampled or a probed (timing_source.subtract_overhead), timed query
 * whose plan has a Gather creates a small segment of dynamic shared
 * memory, one slot per plan node and worker, before it enters parallel
 * mode, and names it in a hidden setting (timing_source.parallel_sampling)
 * that its workers receive with its other settings.  Each worker adds its
 * nodes' figures to its own slots once its part of the plan has run
 * (ExecutorFinish); the leader reads them when it states a node's
 * interval or estimates its timing cost.  A worker that did not report
 * leaves its node without an interval, as before.  A worker probes only
 * where the segment is its leader's, so that its probes reach the one
 * process that counts them: without the leader taking part, none of the
 * nodes below a Gather runs a call in the leader, and the workers' probes
 * are all the plan has.
 *
 * The setting can only name a segment made before the leader entered
 * parallel mode, and no other query can replace it until the leader
 * leaves it.  A query the leader runs meanwhile (in a function) may still
 * start workers of its own, which get the same name; they, and those of
 * a later query that finds a stale name (the setting lasts until the
 * transaction ends, the segment until its query ends), are kept out by a
 * random token and a signature of each plan node: a worker adds its
 * figures only to the slots of nodes that are its own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "instrument_private.h"
#include "timing_source.h"

#include "access/parallel.h"
#include "utils/guc.h"

/* the leader's segment, "handle/token/check"; set by this file alone */
static char *ts_parallel_sampling = NULL;
static bool ts_setting_it = false;

#ifdef TS_HAVE_NODE_WRAPPERS

#include <math.h>

#include "access/xact.h"
#include "common/pg_prng.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "storage/dsm.h"

#define TS_WORKER_SAMPLING_MAGIC	UINT64CONST(0x7473776b73616d70)

/* what one worker's runs of one plan node add up to */
typedef struct TsWorkerSlot
{
	uint64		reports;		/* how many times the worker reported it */
	TsSampling	sum;			/* zeroed: checked until a run is not */
	/* a probed node: */
	uint64		probe_reports;
	double		probes;
	double		bare_calls;		/* given their lengths in the worker */
	TsSpanSums	spans;
} TsWorkerSlot;

/* the setting's flags */
#define TS_WS_CHECK		1		/* timing_source_explain_nodes_check() */
#define TS_WS_PROBE		2		/* exact timing whose cost is measured */

/* see ts_node_sig() */
typedef struct TsNodeSig
{
	NodeTag		tag;			/* T_Invalid: no node of this number */
	int			width;
	double		rows;
	double		total;
} TsNodeSig;

typedef struct TsWorkerSegment
{
	uint64		magic;
	uint64		token;
	int			nnodes;			/* plan_node_id < nnodes */
	int			nworkers;		/* ParallelWorkerNumber < nworkers */
	Size		slots_offset;	/* from the start: nnodes x nworkers slots */
	TsNodeSig	sigs[FLEXIBLE_ARRAY_MEMBER];	/* each plan node's signature */
} TsWorkerSegment;

/*
 * What tells a plan node from another of the same number in a different
 * plan: its type, width and estimates.  A worker's copy of the plan went
 * through nodeToString(), which writes the estimates rounded (rows to
 * units, costs to hundredths), so they are compared within that.
 */
static void
ts_node_sig(Plan *plan, TsNodeSig *sig)
{
	sig->tag = nodeTag(plan);
	sig->width = plan->plan_width;
	sig->rows = plan->plan_rows;
	sig->total = plan->total_cost;
}

static bool
ts_node_sig_matches(const TsNodeSig *sig, Plan *plan)
{
	return sig->tag == nodeTag(plan) && sig->width == plan->plan_width &&
		fabs(sig->rows - plan->plan_rows) <= 0.5 + 1e-9 * fabs(sig->rows) &&
		fabs(sig->total - plan->total_cost) <= 0.005 + 1e-9 * fabs(sig->total);
}

static inline TsWorkerSlot *
ts_worker_slot(TsWorkerSegment *seg, int id, int worker)
{
	return (TsWorkerSlot *) ((char *) seg + seg->slots_offset) +
		(Size) id * seg->nworkers + worker;
}

/*
 * The plan's nodes: the largest plan_node_id and the most workers a
 * Gather asks for; each node's signature, where sigs is given.  A node this
 * walk misses gets no slot, and the leader then states no interval for it.
 */
static void
ts_plan_walk(Plan *plan, int *maxid, int *maxworkers, TsNodeSig *sigs, int nsigs)
{
	ListCell   *lc;
	List	   *children = NIL;

	if (plan == NULL)
		return;
	check_stack_depth();
	*maxid = Max(*maxid, plan->plan_node_id);
	if (sigs != NULL && plan->plan_node_id >= 0 && plan->plan_node_id < nsigs)
		ts_node_sig(plan, &sigs[plan->plan_node_id]);
	switch (nodeTag(plan))
	{
		case T_Gather:
			*maxworkers = Max(*maxworkers, ((Gather *) plan)->num_workers);
			break;
		case T_GatherMerge:
			*maxworkers = Max(*maxworkers, ((GatherMerge *) plan)->num_workers);
			break;
		case T_Append:
			children = ((Append *) plan)->appendplans;
			break;
		case T_MergeAppend:
			children = ((MergeAppend *) plan)->mergeplans;
			break;
		case T_BitmapAnd:
			children = ((BitmapAnd *) plan)->bitmapplans;
			break;
		case T_BitmapOr:
			children = ((BitmapOr *) plan)->bitmapplans;
			break;
		case T_SubqueryScan:
			ts_plan_walk(((SubqueryScan *) plan)->subplan, maxid, maxworkers,
						 sigs, nsigs);
			break;
		case T_CustomScan:
			children = ((CustomScan *) plan)->custom_plans;
			break;
		default:
			break;
	}
	foreach(lc, children)
		ts_plan_walk((Plan *) lfirst(lc), maxid, maxworkers, sigs, nsigs);
	ts_plan_walk(plan->lefttree, maxid, maxworkers, sigs, nsigs);
	ts_plan_walk(plan->righttree, maxid, maxworkers, sigs, nsigs);
}

static void
ts_stmt_walk(PlannedStmt *stmt, int *maxid, int *maxworkers, TsNodeSig *sigs,
			 int nsigs)
{
	ListCell   *lc;

	ts_plan_walk(stmt->planTree, maxid, maxworkers, sigs, nsigs);
	foreach(lc, stmt->subplans)
		ts_plan_walk((Plan *) lfirst(lc), maxid, maxworkers, sigs, nsigs);
}

/*
 * The leader, before ExecutorStart enters parallel mode: the segment for
 * a sampled or probed ("probe"), timed query whose plan has a Gather,
 * named in the setting its workers will get; NULL where there is none to
 * make.
 */
dsm_segment *
ts_worker_sampling_prepare(QueryDesc *queryDesc, int eflags, int sample_every,
						   bool check, bool probe)
{
	int			maxid = -1;
	int			maxworkers = 0;
	Size		sigs_size;
	Size		size;
	dsm_segment *seg;
	TsWorkerSegment *ws;
	char		name[64];

	if ((sample_every <= 1 && !probe) ||
		(queryDesc->instrument_options & INSTRUMENT_TIMER) == 0 ||
		(eflags & EXEC_FLAG_EXPLAIN_ONLY) != 0 ||
		queryDesc->plannedstmt == NULL ||
		!queryDesc->plannedstmt->parallelModeNeeded ||
		IsParallelWorker() || IsInParallelMode())
		return NULL;

	ts_stmt_walk(queryDesc->plannedstmt, &maxid, &maxworkers, NULL, 0);
	if (maxworkers <= 0 || maxid < 0 || maxid >= 100000)
		return NULL;

	sigs_size = MAXALIGN(offsetof(TsWorkerSegment, sigs) +
						 sizeof(TsNodeSig) * (maxid + 1));
	size = sigs_size + sizeof(TsWorkerSlot) * (Size) (maxid + 1) * maxworkers;
	seg = dsm_create(size, DSM_CREATE_NULL_IF_MAXSEGMENTS);
	if (seg == NULL)
		return NULL;
	ws = (TsWorkerSegment *) dsm_segment_address(seg);
	memset(ws, 0, size);
	ws->magic = TS_WORKER_SAMPLING_MAGIC;
	ws->token = pg_prng_uint64(&pg_global_prng_state);
	ws->nnodes = maxid + 1;
	ws->nworkers = maxworkers;
	ws->slots_offset = sigs_size;
	maxid = -1;
	maxworkers = 0;
	ts_stmt_walk(queryDesc->plannedstmt, &maxid, &maxworkers, ws->sigs,
				 ws->nnodes);

	snprintf(name, sizeof(name), "%u/%llx/%d",
			 (unsigned) dsm_segment_handle(seg),
			 (unsigned long long) ws->token,
			 sample_every > 1 ? (check ? TS_WS_CHECK : 0) : TS_WS_PROBE);
	ts_setting_it = true;
	PG_TRY();
	{
		/* until the transaction ends; a later query may replace it */
		(void) set_config_option("timing_source.parallel_sampling", name,
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL,
								 true, 0, false);
	}
	PG_FINALLY();
	{
		ts_setting_it = false;
	}
	PG_END_TRY();
	return seg;
}

/* the setting's "handle/token/flags", if a leader set it */
static bool
ts_setting_parse(unsigned *handle, unsigned long long *token, int *flags)
{
	return ts_parallel_sampling != NULL &&
		sscanf(ts_parallel_sampling, "%u/%llx/%d", handle, token, flags) == 3;
}

/*
 * A parallel worker: the segment the setting names, attached, if the
 * setting has every flag of "need" and the segment is one a leader made
 * with that token and has this worker's slots; NULL otherwise
 */
static dsm_segment *
ts_segment_attach(int need)
{
	unsigned	handle;
	unsigned long long token;
	int			flags;
	dsm_segment *seg;
	TsWorkerSegment *ws;

	if (!IsParallelWorker() || !ts_setting_parse(&handle, &token, &flags) ||
		(flags & need) != need)
		return NULL;
	seg = dsm_attach((dsm_handle) handle);
	if (seg == NULL)
		return NULL;
	ws = (TsWorkerSegment *) dsm_segment_address(seg);
	if (dsm_segment_map_length(seg) >= offsetof(TsWorkerSegment, sigs) &&
		ws->magic == TS_WORKER_SAMPLING_MAGIC && ws->token == (uint64) token &&
		ws->nnodes > 0 && ws->nworkers > 0 &&
		dsm_segment_map_length(seg) >= ws->slots_offset +
		sizeof(TsWorkerSlot) * (Size) ws->nnodes * ws->nworkers &&
		ParallelWorkerNumber >= 0 && ParallelWorkerNumber < ws->nworkers)
		return seg;
	dsm_detach(seg);
	return NULL;
}

/* whether plan is the node of its number in the leader's plan */
static bool
ts_segment_has(TsWorkerSegment *ws, Plan *plan)
{
	int			id = plan->plan_node_id;

	return id >= 0 && id < ws->nnodes &&
		ts_node_sig_matches(&ws->sigs[id], plan);
}

/*
 * A parallel worker, before its plan is bound: whether its nodes timed
 * exactly are to be probed, which they are only where its leader probes
 * and made the segment for this plan, so that the probes reach it.  The
 * workers of a query the leader runs inside a function get the same
 * setting but not the plan, and do not probe.
 */
bool
ts_worker_probes_wanted(QueryDesc *queryDesc)
{
	dsm_segment *seg;
	bool		wanted;

	if (queryDesc->plannedstmt == NULL ||
		queryDesc->plannedstmt->planTree == NULL)
		return false;
	seg = ts_segment_attach(TS_WS_PROBE);
	if (seg == NULL)
		return false;
	wanted = ts_segment_has((TsWorkerSegment *) dsm_segment_address(seg),
							queryDesc->plannedstmt->planTree);
	dsm_detach(seg);
	return wanted;
}

typedef struct TsReportContext
{
	TsWorkerSegment *ws;		/* NULL: nowhere to report */
	int			worker;
} TsReportContext;

static bool
ts_report_node(PlanState *node, void *context)
{
	TsReportContext *rc = (TsReportContext *) context;
	int			id = node->plan->plan_node_id;
	bool		ours;

	if (node->instrument == NULL)
		return planstate_tree_walker(node, ts_report_node, context);
	ours = rc->ws != NULL && ts_segment_has(rc->ws, node->plan);
	if (ts_node_sample_every(node) > 1 && ours)
	{
		TsWorkerSlot *slot = ts_worker_slot(rc->ws, id, rc->worker);
		TsSampling	s;

		ts_node_sampling((TsInstrumentation *) node->instrument, &s);
		ts_sampling_add(&slot->sum, &s);
		slot->reports++;
	}
	else if (ts_node_probed(node))
	{
		TsInstrumentation *ti = (TsInstrumentation *) node->instrument;
		double		before_s;

		/*
		 * Its bare calls into its own total before core copies that to
		 * the leader, whether or not their count can reach it (as
		 * ExecParallelReportInstrumentation would, the last loop first)
		 */
		InstrEndLoop(node->instrument);
		before_s = ts_node_total_s(node->instrument);
		ts_probe_settle(ti, -1.0);
		ts_probe_impute(ti, Max(ts_node_calls_so_far(ti) - ti->bare_calls, 0.0));
		if (ours)
		{
			TsWorkerSlot *slot = ts_worker_slot(rc->ws, id, rc->worker);

			slot->probes += ti->probes;
			slot->bare_calls += ti->bare_calls;
			ts_span_sums_add(&slot->spans, &ti->spans);
			slot->probe_reports++;
		}
		ereport(DEBUG2,
				(errmsg_internal("timing_source: plan node %d: parallel worker %d ran %.0f probes, %.0f bare calls given %.0f ns, its total %.0f ns without them and %.0f ns with them; %.0f timed and %.0f bare spans, %s",
								 id, ParallelWorkerNumber, ti->probes,
								 ti->bare_calls, ti->bare_ns,
								 before_s * 1e9,
								 ts_node_total_s(node->instrument) * 1e9,
								 (double) ti->spans.n[0], (double) ti->spans.n[1],
								 ours ? "reported to the leader" : "not reported")));
	}
	return planstate_tree_walker(node, ts_report_node, context);
}

/*
 * A parallel worker, its part of the plan run: its sampled and probed
 * nodes' figures into its slots of the leader's segment, where the
 * setting names one.
 */
void
ts_worker_sampling_report(QueryDesc *queryDesc)
{
	dsm_segment *seg;
	TsReportContext rc;

	if (!IsParallelWorker() || queryDesc->planstate == NULL ||
		queryDesc->instrument_options == 0)
		return;
	seg = ts_segment_attach(0);
	rc.ws = seg != NULL ? (TsWorkerSegment *) dsm_segment_address(seg) : NULL;
	rc.worker = ParallelWorkerNumber;
	(void) ts_report_node(queryDesc->planstate, &rc);
	if (seg != NULL)
		dsm_detach(seg);
}

/* The leader: its plan's segment, if node has slots there; NULL if not */
static TsWorkerSegment *
ts_node_segment(PlanState *node)
{
	TsPlanEntry *plan = ts_plan_of(node);
	TsWorkerSegment *ws;

	if (plan == NULL || plan->workers == NULL || node->worker_instrument == NULL)
		return NULL;
	ws = (TsWorkerSegment *) dsm_segment_address(plan->workers);
	return ts_segment_has(ws, node->plan) ? ws : NULL;
}

/*
 * The leader: worker w's slot of node, NULL if that worker did not run
 * it; one that says no report where the worker has no slot
 */
static const TsWorkerSlot *
ts_ran_slot(TsWorkerSegment *ws, PlanState *node, int w)
{
	static const TsWorkerSlot none = {0};

	if (node->worker_instrument->instrument[w].nloops <= 0)
		return NULL;
	if (w >= ws->nworkers)
		return &none;
	return ts_worker_slot(ws, node->plan->plan_node_id, w);
}

/*
 * The leader: the figures of every worker that ran node, added to sum;
 * false if one of them did not report them (sum is then left alone).
 */
bool
ts_worker_sampling_collect(PlanState *node, TsSampling *sum)
{
	TsWorkerSegment *ws = ts_node_segment(node);
	TsSampling	add = {0};

	if (ws == NULL)
		return false;
	for (int w = 0; w < node->worker_instrument->num_workers; w++)
	{
		const TsWorkerSlot *slot = ts_ran_slot(ws, node, w);

		if (slot == NULL)
			continue;
		if (slot->reports == 0)
			return false;
		ts_sampling_add(&add, &slot->sum);
	}
	ts_sampling_add(sum, &add);
	return true;
}

/*
 * The leader, estimating a probed node's timing cost: the probes of every
 * worker that ran node, their spans merged into the node's own; false
 * (and nothing merged) if one of them did not report them.
 */
bool
ts_worker_probes_collect(PlanState *node, TsInstrumentation *ti)
{
	TsWorkerSegment *ws = ts_node_segment(node);
	TsSpanStats spans;
	double		probes = 0;
	double		bare_calls = 0;

	if (ws == NULL)
		return false;
	spans = ti->spans;
	for (int w = 0; w < node->worker_instrument->num_workers; w++)
	{
		const TsWorkerSlot *slot = ts_ran_slot(ws, node, w);

		if (slot == NULL)
			continue;
		if (slot->probe_reports == 0)
			return false;
		probes += slot->probes;
		bare_calls += slot->bare_calls;
		ts_span_merge(&spans, &slot->spans);
	}
	ti->spans = spans;
	ti->worker_probes = probes;
	ti->worker_bare_calls = bare_calls;
	return true;
}

/*
 * A parallel worker, before its plan is bound: whether its leader's query
 * is checked (timing_source_explain_nodes_check), so that the worker
 * times every call of its sampled nodes as well
 */
bool
ts_worker_sampling_checked(void)
{
	unsigned	handle;
	unsigned long long token;
	int			flags;

	return IsParallelWorker() && ts_setting_parse(&handle, &token, &flags) &&
		(flags & TS_WS_CHECK) != 0;
}

#endif							/* TS_HAVE_NODE_WRAPPERS */

/*
 * Defined in every build, so that the setting behaves alike everywhere:
 * where nothing samples, nothing sets it or reads it.
 */
static bool
ts_check_parallel_sampling(char **newval, void **extra, GucSource source)
{
	if (*newval == NULL || (*newval)[0] == '\0' || ts_setting_it ||
		IsParallelWorker())
		return true;
	GUC_check_errcode(ERRCODE_CANT_CHANGE_RUNTIME_PARAM);
	GUC_check_errdetail("This parameter is set by timing_source itself.");
	return false;
}

void
ts_worker_sampling_init(void)
{
	DefineCustomStringVariable("timing_source.parallel_sampling",
							   "Where a leader's parallel workers leave their sampling figures.",
							   "Set by timing_source itself; not user-settable.",
							   &ts_parallel_sampling,
							   "",
							   PGC_USERSET,
							   GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE | GUC_NO_RESET_ALL |
							   GUC_DISALLOW_IN_FILE | GUC_DISALLOW_IN_AUTO_FILE,
							   ts_check_parallel_sampling, NULL, NULL);
}
