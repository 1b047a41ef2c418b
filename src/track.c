/*-------------------------------------------------------------------------
 *
 * track.c
 *	  Per-node statistics across executions: timing_source.track_nodes,
 *	  the shared hash they are added to, its file across restarts, and
 *	  the SQL functions behind timing_source_plan_nodes.
 *
 * A tracked statement that nothing else instruments gets row counting,
 * and per-node timing where the extension's wrappers can sample it, set
 * before core builds its plan state tree (ExecutorStart).  The wrappers
 * then time it at timing_source.track_sample_every (TS_INSTRUMENT_TRACKED,
 * track.h).  A statement EXPLAIN ANALYZE or auto_explain instruments keeps
 * their options exactly, and what they measured is added as well.
 *
 * At ExecutorEnd the plan's nodes are walked with the numbering
 * timing_source_explain_nodes() shows, and each node's figures for this
 * execution are added to one shared entry per (user, database, query id,
 * plan id): a shared lock to find the entry, its spinlock to add, the
 * exclusive lock only to create or evict entries, as pg_stat_statements
 * does.  An entry holds a fixed array of TS_TRACK_NODES nodes: one lookup
 * and one spinlock per execution, whatever the plan's size, and an
 * evicted plan goes whole; nodes past the array are counted, not kept
 * (docs/internals.md).
 *
 * Nothing here raises an error on the query's path: an execution whose
 * figures cannot be kept (no room, a plan larger than the array) is
 * counted in not_tracked.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "access/parallel.h"
#include "catalog/pg_authid.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
#include "common/pg_prng.h"

#include "instrument.h"
#include "planid.h"
#include "plan_nodes.h"
#include "track.h"

/* nodes kept per plan; a larger plan keeps its first ones (pre-order) */
#define TS_TRACK_NODES			48
#define TS_TRACK_TYPE_LEN		24
#define TS_TRACK_REL_LEN		64

/* the file the statistics are kept in across a clean restart */
#define TS_TRACK_DUMP_FILE		"pg_stat/timing_source_track.stat"
#define TS_TRACK_FILE_MAGIC		0x54535452	/* "TSTR" */
#define TS_TRACK_FILE_VERSION	3

/* eviction: the least used share of the entries goes, at least 10 */
#define TS_TRACK_DEALLOC_PERCENT	5
#define TS_TRACK_USAGE_DECAY	0.99

typedef enum TsTrackLevel
{
	TS_TRACK_NONE,
	TS_TRACK_TOP,
	TS_TRACK_ALL
} TsTrackLevel;

static const struct config_enum_entry ts_track_options[] = {
	{"none", TS_TRACK_NONE, false},
	{"top", TS_TRACK_TOP, false},
	{"all", TS_TRACK_ALL, false},
	{NULL, 0, false}
};

/* which clocks an entry's timed executions read (TsTrackEntry.clocks) */
#define TS_TRACK_CLOCK_TSC		0x01
#define TS_TRACK_CLOCK_SYSTEM	0x02

typedef struct TsTrackKey
{
	Oid			userid;
	Oid			dbid;
	uint64		queryid;
	uint64		planid;
} TsTrackKey;

/* one node's sums over the executions added */
typedef struct TsTrackNode
{
	double		loops;
	double		rows;
	double		total_ns;		/* timed executions only */
	double		startup_ns;
	int64		calls;
	int64		sampled_calls;
	int64		blks_hit;		/* executions with buffers only */
	int64		blks_read;
	int32		parent_id;
	int32		plan_node_id;	/* the planner's: what matches the node
								 * across executions */
	char		node_type[TS_TRACK_TYPE_LEN];
	char		relation[TS_TRACK_REL_LEN];	/* "" for none */
} TsTrackNode;

typedef struct TsTrackEntry
{
	TsTrackKey	key;			/* hash key, must be first */
	slock_t		mutex;			/* protects everything below */
	int64		executions;
	int64		counted_executions;	/* whose nodes were counted */
	int64		timed_executions;	/* with per-node timing */
	int64		buffer_executions;	/* with buffer counts */
	int32		sample_every;	/* largest rate of the timed executions */
	int32		clocks;			/* TS_TRACK_CLOCK_* */
	int32		nnodes;			/* nodes kept */
	int32		plan_nodes;		/* nodes of the plan */
	double		usage;			/* for eviction */
	TsTrackNode nodes[TS_TRACK_NODES];
} TsTrackEntry;

typedef struct TsTrackShared
{
	LWLock	   *lock;			/* the hash's entries */
	slock_t		mutex;			/* the counters below */
	int64		dealloc;
	int64		not_tracked;
	TimestampTz stats_reset;
} TsTrackShared;

/* the file's header: a file of another layout is discarded */
typedef struct TsTrackFileHeader
{
	uint32		magic;
	uint32		version;
	uint32		entry_size;
	uint32		nodes;
	int32		entries;
} TsTrackFileHeader;

int			ts_track_sample_every = 64;
static int	ts_track_level = TS_TRACK_NONE;
static int	ts_track_max = 1000;
static int	ts_track_every = 1;
static bool ts_track_buffers = false;
static bool ts_track_save = true;

/* whether the library was preloaded, so that tracking has shared memory */
static bool ts_track_preloaded = false;

static TsTrackShared *ts_track = NULL;
static HTAB *ts_track_hash = NULL;

/* statements of this backend nested inside the one executing */
static int	ts_nesting_level = 0;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static ExecutorRun_hook_type prev_ExecutorRun = NULL;
static ExecutorFinish_hook_type prev_ExecutorFinish = NULL;
static ExecutorEnd_hook_type prev_ExecutorEnd = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;

PG_FUNCTION_INFO_V1(timing_source_plan_nodes);
PG_FUNCTION_INFO_V1(timing_source_plan_nodes_reset);
PG_FUNCTION_INFO_V1(timing_source_plan_nodes_info);
PG_FUNCTION_INFO_V1(timing_source_plan);

static Size
ts_track_memsize(void)
{
	return add_size(MAXALIGN(sizeof(TsTrackShared)),
					hash_estimate_size(ts_track_max, sizeof(TsTrackEntry)));
}

static void
ts_track_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(ts_track_memsize());
	RequestNamedLWLockTranche("timing_source_track", 1);
}

static void ts_track_load(void);
static void ts_track_shmem_shutdown(int code, Datum arg);

static void
ts_track_shmem_startup(void)
{
	bool		found;
	HASHCTL		info;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	ts_track = NULL;
	ts_track_hash = NULL;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	ts_track = ShmemInitStruct("timing_source_track", sizeof(TsTrackShared),
							   &found);
	if (!found)
	{
		ts_track->lock = &(GetNamedLWLockTranche("timing_source_track"))->lock;
		SpinLockInit(&ts_track->mutex);
		ts_track->dealloc = 0;
		ts_track->not_tracked = 0;
		ts_track->stats_reset = GetCurrentTimestamp();
	}
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(TsTrackKey);
	info.entrysize = sizeof(TsTrackEntry);
	ts_track_hash = ts_shmem_init_hash("timing_source_track hash",
									   ts_track_max, &info,
									   HASH_ELEM | HASH_BLOBS);
	LWLockRelease(AddinShmemInitLock);

	/*
	 * The postmaster saves at shutdown and loads now; after a crash it
	 * comes here again and finds no file (loading removed it), so a crash
	 * loses what was gathered since the last start, never more.
	 */
	if (!IsUnderPostmaster)
		on_shmem_exit(ts_track_shmem_shutdown, (Datum) 0);
	if (!found)
		ts_track_load();
}

/* the least used entries go; the caller holds the lock exclusively */
static int
ts_usage_cmp(const void *a, const void *b)
{
	double		l = (*(TsTrackEntry *const *) a)->usage;
	double		r = (*(TsTrackEntry *const *) b)->usage;

	if (l < r)
		return -1;
	if (l > r)
		return 1;
	return 0;
}

static void
ts_track_dealloc(void)
{
	HASH_SEQ_STATUS hs;
	TsTrackEntry **entries;
	TsTrackEntry *e;
	int			n = 0;
	int			nvictims;

	entries = palloc(hash_get_num_entries(ts_track_hash) * sizeof(TsTrackEntry *));
	hash_seq_init(&hs, ts_track_hash);
	while ((e = hash_seq_search(&hs)) != NULL)
	{
		entries[n++] = e;
		e->usage *= TS_TRACK_USAGE_DECAY;
	}
	qsort(entries, n, sizeof(TsTrackEntry *), ts_usage_cmp);
	nvictims = Max(10, n * TS_TRACK_DEALLOC_PERCENT / 100);
	nvictims = Min(nvictims, n);
	for (int i = 0; i < nvictims; i++)
		hash_search(ts_track_hash, &entries[i]->key, HASH_REMOVE, NULL);
	pfree(entries);

	SpinLockAcquire(&ts_track->mutex);
	ts_track->dealloc++;
	SpinLockRelease(&ts_track->mutex);
}

static void
ts_count_not_tracked(void)
{
	SpinLockAcquire(&ts_track->mutex);
	ts_track->not_tracked++;
	SpinLockRelease(&ts_track->mutex);
}

/*
 * Save at a clean shutdown: to a temporary file first, renamed over the
 * old one, so that a crash while writing leaves no half file.
 */
static void
ts_track_shmem_shutdown(int code, Datum arg)
{
	FILE	   *file;
	HASH_SEQ_STATUS hs;
	TsTrackEntry *e;
	TsTrackFileHeader hdr;

	/* not after a crash: shared memory may be anything */
	if (code != 0 || ts_track == NULL || ts_track_hash == NULL)
		return;
	if (!ts_track_save)
	{
		unlink(TS_TRACK_DUMP_FILE);
		return;
	}

	file = AllocateFile(TS_TRACK_DUMP_FILE ".tmp", PG_BINARY_W);
	if (file == NULL)
		goto error;
	hdr.magic = TS_TRACK_FILE_MAGIC;
	hdr.version = TS_TRACK_FILE_VERSION;
	hdr.entry_size = sizeof(TsTrackEntry);
	hdr.nodes = TS_TRACK_NODES;
	hdr.entries = hash_get_num_entries(ts_track_hash);
	if (fwrite(&hdr, sizeof(hdr), 1, file) != 1)
		goto error;
	hash_seq_init(&hs, ts_track_hash);
	while ((e = hash_seq_search(&hs)) != NULL)
	{
		if (fwrite(e, sizeof(TsTrackEntry), 1, file) != 1)
		{
			hash_seq_term(&hs);
			goto error;
		}
	}
	if (fwrite(&ts_track->dealloc, sizeof(int64), 1, file) != 1 ||
		fwrite(&ts_track->not_tracked, sizeof(int64), 1, file) != 1 ||
		fwrite(&ts_track->stats_reset, sizeof(TimestampTz), 1, file) != 1 ||
		fwrite(&hdr.magic, sizeof(uint32), 1, file) != 1)
		goto error;
	if (FreeFile(file))
	{
		file = NULL;
		goto error;
	}
	(void) durable_rename(TS_TRACK_DUMP_FILE ".tmp", TS_TRACK_DUMP_FILE, LOG);
	return;

error:
	ereport(LOG,
			(errcode_for_file_access(),
			 errmsg("could not write file \"%s\": %m",
					TS_TRACK_DUMP_FILE ".tmp")));
	if (file)
		FreeFile(file);
	unlink(TS_TRACK_DUMP_FILE ".tmp");
}

/*
 * Load what the last clean shutdown saved, in the postmaster before any
 * backend runs (no lock needed), then remove the file.  A file of another
 * layout, a short one or one with a bad trailer is discarded whole.
 */
static void
ts_track_load(void)
{
	FILE	   *file;
	TsTrackFileHeader hdr;
	TsTrackEntry *buf = NULL;
	int64		dealloc;
	int64		not_tracked;
	TimestampTz stats_reset;
	uint32		trailer;

	unlink(TS_TRACK_DUMP_FILE ".tmp");
	if (!ts_track_save)
	{
		unlink(TS_TRACK_DUMP_FILE);
		return;
	}
	file = AllocateFile(TS_TRACK_DUMP_FILE, PG_BINARY_R);
	if (file == NULL)
	{
		if (errno != ENOENT)
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("could not read file \"%s\": %m",
							TS_TRACK_DUMP_FILE)));
		return;
	}
	if (fread(&hdr, sizeof(hdr), 1, file) != 1 ||
		hdr.magic != TS_TRACK_FILE_MAGIC ||
		hdr.version != TS_TRACK_FILE_VERSION ||
		hdr.entry_size != sizeof(TsTrackEntry) ||
		hdr.nodes != TS_TRACK_NODES ||
		hdr.entries < 0)
		goto discard;

	/* read all before adding any: a short file adds nothing */
	buf = palloc_extended((Size) Max(hdr.entries, 1) * sizeof(TsTrackEntry),
						  MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
	if (buf == NULL)
		goto discard;
	if (hdr.entries > 0 &&
		fread(buf, sizeof(TsTrackEntry), hdr.entries, file) != (size_t) hdr.entries)
		goto discard;
	if (fread(&dealloc, sizeof(int64), 1, file) != 1 ||
		fread(&not_tracked, sizeof(int64), 1, file) != 1 ||
		fread(&stats_reset, sizeof(TimestampTz), 1, file) != 1 ||
		fread(&trailer, sizeof(uint32), 1, file) != 1 ||
		trailer != TS_TRACK_FILE_MAGIC)
		goto discard;

	for (int i = 0; i < hdr.entries; i++)
	{
		TsTrackEntry *e;
		bool		found;

		/* a smaller track_max since: keep what fits */
		if (hash_get_num_entries(ts_track_hash) >= ts_track_max)
			break;
		if (buf[i].nnodes < 0 || buf[i].nnodes > TS_TRACK_NODES)
			continue;
		/* names end within their arrays, whatever the file says */
		for (int n = 0; n < buf[i].nnodes; n++)
		{
			buf[i].nodes[n].node_type[TS_TRACK_TYPE_LEN - 1] = '\0';
			buf[i].nodes[n].relation[TS_TRACK_REL_LEN - 1] = '\0';
		}
		e = hash_search(ts_track_hash, &buf[i].key, HASH_ENTER_NULL, &found);
		if (e == NULL)
			break;
		memcpy(e, &buf[i], sizeof(TsTrackEntry));
		SpinLockInit(&e->mutex);
	}
	ts_track->dealloc = dealloc;
	ts_track->not_tracked = not_tracked;
	ts_track->stats_reset = stats_reset;
	pfree(buf);
	FreeFile(file);
	unlink(TS_TRACK_DUMP_FILE);
	return;

discard:
	ereport(LOG,
			(errmsg("timing_source: discarding per-node statistics file \"%s\": not of this version or incomplete",
					TS_TRACK_DUMP_FILE)));
	if (buf)
		pfree(buf);
	FreeFile(file);
	unlink(TS_TRACK_DUMP_FILE);
}

/* ----------------------------------------------------------------
 * The executor hooks
 * ----------------------------------------------------------------
 */

/* where the extension has no executor glue, nothing is tracked */
#ifdef TS_HAVE_EXECUTOR_HOOK

/* whether a statement at the current nesting level is tracked */
static inline bool
ts_track_enabled(void)
{
	if (ts_track == NULL || IsParallelWorker())
		return false;
	return ts_track_level == TS_TRACK_ALL ||
		(ts_track_level == TS_TRACK_TOP && ts_nesting_level == 0);
}

/*
 * Tracked executions timing_source.track_every left uninstrumented: they
 * are counted at ExecutorEnd, their nodes are not.
 */
static TsQueryList ts_track_skipped;

static void
ts_track_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	bool		track = queryDesc->instrument_options == 0 &&
		(eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0 &&
		queryDesc->plannedstmt->queryId != 0 &&
		ts_track_enabled();
	bool		skipped = false;

	/*
	 * Only a statement nothing instruments yet: anyone who set options
	 * (EXPLAIN ANALYZE, auto_explain before us in the chain) keeps them.
	 * With track_every > 1, a random 1 in track_every of them is
	 * instrumented (random, so that no pattern in the workload lines up
	 * with the choice) and the others run as they would untracked.
	 */
	if (track && ts_track_every > 1 &&
		pg_prng_uint64_range(&pg_global_prng_state, 1, ts_track_every) != 1)
		skipped = true;
	else if (track)
	{
		int			options = INSTRUMENT_ROWS | TS_INSTRUMENT_TRACKED;

		/*
		 * Timed only where the wrappers sample: where core would time
		 * every call with the system clock, rows and loops are counted
		 * without reading a clock and the times stay NULL.
		 */
		if (ts_instrument_can_sample())
			options |= INSTRUMENT_TIMER;
		if (ts_track_buffers)
			options |= INSTRUMENT_BUFFERS;
		queryDesc->instrument_options = options;
	}

	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);

	/* another module may have instrumented it after all */
	if (skipped && queryDesc->instrument_options == 0 &&
		queryDesc->estate != NULL)
		(void) ts_query_add(&ts_track_skipped, queryDesc, sizeof(TsQueryEntry));
}

static void
ts_track_ExecutorRun(TS_EXECUTOR_RUN_PARAMS)
{
	ts_nesting_level++;
	PG_TRY();
	{
		if (prev_ExecutorRun)
			prev_ExecutorRun(TS_EXECUTOR_RUN_ARGS);
		else
			standard_ExecutorRun(TS_EXECUTOR_RUN_ARGS);
	}
	PG_FINALLY();
	{
		ts_nesting_level--;
	}
	PG_END_TRY();
}

static void
ts_track_ExecutorFinish(QueryDesc *queryDesc)
{
	ts_nesting_level++;
	PG_TRY();
	{
		if (prev_ExecutorFinish)
			prev_ExecutorFinish(queryDesc);
		else
			standard_ExecutorFinish(queryDesc);
	}
	PG_FINALLY();
	{
		ts_nesting_level--;
	}
	PG_END_TRY();
}

/*
 * The statements of a DO block or a procedure are nested in it, as
 * pg_stat_statements counts them, though no executor runs between:
 * the level is raised around those two commands.  Other utility commands
 * that run a plan (EXPLAIN ANALYZE, EXECUTE, CREATE TABLE AS, COPY from a
 * query) run it as the statement's own, at their level.
 */
static void
ts_track_ProcessUtility(PlannedStmt *pstmt, const char *queryString,
						bool readOnlyTree, ProcessUtilityContext context,
						ParamListInfo params, QueryEnvironment *queryEnv,
						DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	bool		nests = IsA(parsetree, DoStmt) || IsA(parsetree, CallStmt);

	if (nests)
		ts_nesting_level++;
	PG_TRY();
	{
		if (prev_ProcessUtility)
			prev_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
									params, queryEnv, dest, qc);
	}
	PG_FINALLY();
	{
		if (nests)
			ts_nesting_level--;
	}
	PG_END_TRY();
}

/* one execution's figures, before they are added */
typedef struct TsTrackRun
{
	int			nnodes;			/* kept */
	int			plan_nodes;		/* visited */
	bool		counted;		/* the nodes were instrumented */
	bool		timed;
	bool		buffers;
	TsTrackNode nodes[TS_TRACK_NODES];
	PlanState  *states[TS_TRACK_NODES];
} TsTrackRun;

/*
 * One execution's figures are gathered here, not in memory allocated per
 * execution: nothing run while they are gathered and added (catalog
 * lookups for a new entry's names) starts or ends another statement.
 */
static TsTrackRun ts_run;

static void
ts_track_visit(const TsPlanNodeRef *ref, void *arg)
{
	TsTrackRun *run = (TsTrackRun *) arg;
	PlanState  *ps = ref->planstate;
	TsNodeInstr *instr = ps->instrument;
	TsTrackNode *n;
	TsSampleEstimate est;

	run->plan_nodes++;
	if (ref->node_id > TS_TRACK_NODES)
		return;
	n = &run->nodes[ref->node_id - 1];
	run->states[ref->node_id - 1] = ps;
	run->nnodes = Max(run->nnodes, ref->node_id);
	memset(n, 0, sizeof(*n));
	n->parent_id = ref->parent_id;
	n->plan_node_id = ps->plan->plan_node_id;
	if (instr == NULL)
		return;

	/* as EXPLAIN does: the last loop into the totals (once) */
	InstrEndLoop(instr);
	n->loops = instr->nloops;
	n->rows = instr->ntuples;
	/* one call per tuple and one that ends each loop */
	n->calls = (int64) (instr->ntuples + instr->nloops);
	if (TS_INSTR_FLAGS(instr)->need_timer)
	{
		n->total_ns = ts_instr_total_ns(instr);
		n->startup_ns = ts_instr_startup_ns(instr);
	}
	if (ts_node_sample_estimate(ps, &est))
		n->sampled_calls = (int64) est.sampled_calls;
	if (TS_INSTR_FLAGS(instr)->need_bufusage)
	{
		n->blks_hit = TS_INSTR_FLAGS(instr)->bufusage.shared_blks_hit;
		n->blks_read = TS_INSTR_FLAGS(instr)->bufusage.shared_blks_read;
	}
}

/* a new entry's node names, outside any lock: they read the catalogs */
static void
ts_track_describe(TsTrackRun *run)
{
	for (int i = 0; i < run->nnodes; i++)
	{
		PlanState  *ps = run->states[i];
		char	   *rel;

		if (ps == NULL)
			continue;
		strlcpy(run->nodes[i].node_type, ts_plan_node_type(ps->plan),
				TS_TRACK_TYPE_LEN);
		rel = ts_plan_node_relation(ps);
		if (rel != NULL)
			strlcpy(run->nodes[i].relation, rel, TS_TRACK_REL_LEN);
	}
}

/*
 * Which of "into"'s nodes each of "from"'s is (map[i], -1 for none);
 * whether every one was found.  One plan id is one plan, but the
 * executor prunes partitions at its start, so two executions (or two
 * entries) of it can hold different subsets of its nodes: matched by
 * the planner's node id, in walk order, as a subplan several nodes run
 * is walked once under each.
 */
static bool
ts_track_match(const TsTrackNode *into, int ninto,
			   const TsTrackNode *from, int nfrom, int *map)
{
	int			next = 0;
	bool		all = true;

	for (int i = 0; i < nfrom; i++)
	{
		int			k = next;

		while (k < ninto && into[k].plan_node_id != from[i].plan_node_id)
			k++;
		if (k < ninto)
		{
			map[i] = k;
			next = k + 1;
		}
		else
		{
			map[i] = -1;
			all = false;
		}
	}
	return all;
}

static void
ts_track_store(QueryDesc *queryDesc)
{
	TsTrackRun *run;
	TsTrackKey	key;
	TsTrackEntry *e;
	TsPlanTiming timing;
	int			clock = 0;
	int			sample_every = 0;
	bool		partial;
	int			map[TS_TRACK_NODES];

	memset(&key, 0, sizeof(key));
	key.userid = GetUserId();
	key.dbid = MyDatabaseId;
	key.queryid = queryDesc->plannedstmt->queryId;
	key.planid = ts_plan_id_of(queryDesc);

	/*
	 * An execution whose nodes were not counted (track_every) only adds
	 * to executions: where its entry exists, that is all it does, without
	 * walking the plan.
	 */
	if (queryDesc->planstate->instrument == NULL)
	{
		LWLockAcquire(ts_track->lock, LW_SHARED);
		e = hash_search(ts_track_hash, &key, HASH_FIND, NULL);
		if (e != NULL)
		{
			SpinLockAcquire(&e->mutex);
			e->executions++;
			e->usage += 1.0;
			SpinLockRelease(&e->mutex);
		}
		LWLockRelease(ts_track->lock);
		if (e != NULL)
			return;
	}

	run = &ts_run;
	run->nnodes = 0;
	run->plan_nodes = 0;
	ts_plan_nodes_walk(queryDesc->planstate, ts_track_visit, run);
	run->counted = queryDesc->planstate->instrument != NULL;
	run->timed = (queryDesc->instrument_options & INSTRUMENT_TIMER) != 0;
	run->buffers = (queryDesc->instrument_options & INSTRUMENT_BUFFERS) != 0;
	if (run->timed)
	{
		if (ts_plan_timing(queryDesc->planstate, &timing))
		{
			clock = timing.clock == TS_CLOCK_TSC ?
				TS_TRACK_CLOCK_TSC : TS_TRACK_CLOCK_SYSTEM;
			sample_every = Max(timing.sample_every, 1);
		}
		else
		{
			/* core timed every call, with its own clock */
			clock = ts_core_uses_tsc() ?
				TS_TRACK_CLOCK_TSC : TS_TRACK_CLOCK_SYSTEM;
			sample_every = 1;
		}
	}

	LWLockAcquire(ts_track->lock, LW_SHARED);
	e = hash_search(ts_track_hash, &key, HASH_FIND, NULL);
	if (e == NULL)
	{
		bool		found;

		LWLockRelease(ts_track->lock);
		ts_track_describe(run);
		LWLockAcquire(ts_track->lock, LW_EXCLUSIVE);
		if (hash_get_num_entries(ts_track_hash) >= ts_track_max)
			ts_track_dealloc();
		e = hash_search(ts_track_hash, &key, HASH_ENTER_NULL, &found);
		if (e == NULL)
		{
			LWLockRelease(ts_track->lock);
			ts_count_not_tracked();
			return;
		}
		if (!found)
		{
			/* the key is set; everything else starts at zero */
			memset((char *) e + sizeof(TsTrackKey), 0,
				   sizeof(TsTrackEntry) - sizeof(TsTrackKey));
			SpinLockInit(&e->mutex);
			e->nnodes = run->nnodes;
			e->plan_nodes = run->plan_nodes;
			for (int i = 0; i < run->nnodes; i++)
			{
				e->nodes[i].parent_id = run->nodes[i].parent_id;
				e->nodes[i].plan_node_id = run->nodes[i].plan_node_id;
				memcpy(e->nodes[i].node_type, run->nodes[i].node_type,
					   TS_TRACK_TYPE_LEN);
				memcpy(e->nodes[i].relation, run->nodes[i].relation,
					   TS_TRACK_REL_LEN);
			}
		}
	}

	/* an entry's nodes never change once it exists: matched outside the spinlock */
	partial = !ts_track_match(e->nodes, e->nnodes, run->nodes, run->nnodes, map) ||
		run->plan_nodes > TS_TRACK_NODES;

	SpinLockAcquire(&e->mutex);
	e->executions++;
	e->usage += 1.0;
	if (run->counted)
		e->counted_executions++;
	if (run->timed)
	{
		e->timed_executions++;
		e->clocks |= clock;
		e->sample_every = Max(e->sample_every, sample_every);
	}
	if (run->buffers)
		e->buffer_executions++;
	/* each node to its own: one pruned now adds nothing, one not kept is lost */
	for (int i = 0; i < (run->counted ? run->nnodes : 0); i++)
	{
		TsTrackNode *d;
		TsTrackNode *s = &run->nodes[i];

		if (map[i] < 0)
			continue;
		d = &e->nodes[map[i]];

		d->loops += s->loops;
		d->rows += s->rows;
		d->calls += s->calls;
		d->sampled_calls += s->sampled_calls;
		d->total_ns += s->total_ns;
		d->startup_ns += s->startup_ns;
		d->blks_hit += s->blks_hit;
		d->blks_read += s->blks_read;
	}
	SpinLockRelease(&e->mutex);
	LWLockRelease(ts_track->lock);

	if (partial)
		ts_count_not_tracked();
}

static void
ts_track_ExecutorEnd(QueryDesc *queryDesc)
{
	/*
	 * Ours, or instrumented by someone else at a level that is tracked.
	 * A parallel worker's figures reach the leader's nodes when its
	 * workers finish (ExecShutdownNode, before this).
	 */
	TsQueryEntry *skipped = ts_query_find(&ts_track_skipped, queryDesc);

	if (skipped != NULL)
	{
		/* counted as an execution only (timing_source.track_every) */
		ts_query_remove(skipped);
		if (ts_track != NULL && queryDesc->planstate != NULL)
			ts_track_store(queryDesc);
	}
	else if (ts_track != NULL && !IsParallelWorker() &&
			 queryDesc->planstate != NULL &&
			 queryDesc->plannedstmt->queryId != 0 &&
			 queryDesc->planstate->instrument != NULL &&
			 (queryDesc->estate->es_top_eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0 &&
			 (ts_tracked_statement(queryDesc) ||
			  ts_track_enabled()))
		ts_track_store(queryDesc);

	if (prev_ExecutorEnd)
		prev_ExecutorEnd(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
}

#endif							/* TS_HAVE_EXECUTOR_HOOK */

/*
 * Not preloaded there is no shared memory to keep statistics in: asking
 * for them is refused where it is asked (SET, ALTER SYSTEM) rather than
 * accepted and ignored.  A value in postgresql.conf then draws a WARNING
 * when the library is loaded on demand, and stays "none".
 */
static bool
check_track_nodes(int *newval, void **extra, GucSource source)
{
#ifndef TS_HAVE_EXECUTOR_HOOK
	/* refused, not accepted and ignored, where nothing could track */
	if (*newval != TS_TRACK_NONE)
	{
		GUC_check_errdetail("This build of timing_source has no executor hooks (Windows, PostgreSQL 20 and later), so it cannot keep per-node statistics.");
		return false;
	}
#endif
	if (*newval != TS_TRACK_NONE && !ts_track_preloaded)
	{
		GUC_check_errdetail("Per-node statistics need timing_source in shared_preload_libraries.");
		return false;
	}
	return true;
}

void
ts_track_init(void)
{
	ts_track_preloaded = process_shared_preload_libraries_in_progress;

	DefineCustomEnumVariable("timing_source.track_nodes",
							 "Keeps per-node statistics of executed statements: none, top-level statements, or all.",
							 "Tracked statements that nothing else instruments count rows and loops exactly "
							 "and, where timing_source's wrappers sample, time their nodes sampled at "
							 "timing_source.track_sample_every; see timing_source_plan_nodes.  Needs "
							 "timing_source in shared_preload_libraries.",
							 &ts_track_level,
							 TS_TRACK_NONE,
							 ts_track_options,
							 PGC_SUSET,
							 0,
							 check_track_nodes, NULL, NULL);

	DefineCustomIntVariable("timing_source.track_sample_every",
							"Times 1 in this many calls of each plan node of a tracked statement.",
							"Like timing_source.sample_every, for statements timed because they are tracked; "
							"1 times every call.  Rows and loops are always exact.",
							&ts_track_sample_every,
							64, 1, 1000000,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);

	/*
	 * Sizes shared memory: a server-start setting, which core lets a
	 * library define only while it is preloaded (later, defining it would
	 * end the session).  Loaded on demand there is nothing to size.
	 */
	if (ts_track_preloaded)
		DefineCustomIntVariable("timing_source.track_max",
								"Plans whose per-node statistics are kept.",
								"When full, the least used plans are evicted.",
								&ts_track_max,
								1000, 100, 1000000,
								PGC_POSTMASTER,
								0,
								NULL, NULL, NULL);

	DefineCustomIntVariable("timing_source.track_every",
							"Counts the plan nodes of 1 in this many tracked executions, chosen at random.",
							"1 (the default) counts every execution's nodes exactly.  Larger, the others "
							"run uninstrumented and count only as executions: executions stay exact, "
							"the nodes' figures cover the counted_executions.",
							&ts_track_every,
							1, 1, 1000000000,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("timing_source.track_buffers",
							 "Counts shared buffer hits and reads per node of tracked statements.",
							 NULL,
							 &ts_track_buffers,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("timing_source.track_save",
							 "Keeps per-node statistics across a clean server restart.",
							 NULL,
							 &ts_track_save,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	if (!ts_track_preloaded)
		return;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = ts_track_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = ts_track_shmem_startup;
}

/*
 * Installed after the wrappers' hooks, so that its ExecutorStart, setting
 * options, runs before theirs, which bind the nodes
 */
void
ts_track_hooks(void)
{
#ifdef TS_HAVE_EXECUTOR_HOOK
	if (!ts_track_preloaded)
		return;
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = ts_track_ExecutorStart;
	prev_ExecutorRun = ExecutorRun_hook;
	ExecutorRun_hook = ts_track_ExecutorRun;
	prev_ExecutorFinish = ExecutorFinish_hook;
	ExecutorFinish_hook = ts_track_ExecutorFinish;
	prev_ExecutorEnd = ExecutorEnd_hook;
	ExecutorEnd_hook = ts_track_ExecutorEnd;
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = ts_track_ProcessUtility;
#endif
}

/* ----------------------------------------------------------------
 * SQL
 * ----------------------------------------------------------------
 */

static void
ts_track_require(void)
{
	if (ts_track == NULL || ts_track_hash == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("timing_source must be loaded via \"shared_preload_libraries\" to keep per-node statistics")));
}

/* a copy of an entry taken under its spinlock */
static void
ts_track_copy(TsTrackEntry *e, TsTrackEntry *copy)
{
	SpinLockAcquire(&e->mutex);
	memcpy(copy, e, sizeof(TsTrackEntry));
	SpinLockRelease(&e->mutex);
}

static const char *
ts_track_clock_name(int clocks)
{
	switch (clocks)
	{
		case TS_TRACK_CLOCK_TSC:
			return "tsc";
		case TS_TRACK_CLOCK_SYSTEM:
			return "system";
		case TS_TRACK_CLOCK_TSC | TS_TRACK_CLOCK_SYSTEM:
			return "tsc+system";
	}
	return NULL;
}

#define TS_PLAN_NODES_COLS	22

Datum
timing_source_plan_nodes(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			userid = GetUserId();
	bool		all = has_privs_of_role(userid, ROLE_PG_READ_ALL_STATS);
	HASH_SEQ_STATUS hs;
	TsTrackEntry *e;
	TsTrackEntry *copy;

	ts_track_require();
	InitMaterializedSRF(fcinfo, 0);
	copy = palloc(sizeof(TsTrackEntry));

	LWLockAcquire(ts_track->lock, LW_SHARED);
	hash_seq_init(&hs, ts_track_hash);
	while ((e = hash_seq_search(&hs)) != NULL)
	{
		if (!all && e->key.userid != userid)
			continue;
		ts_track_copy(e, copy);
		for (int i = 0; i < copy->nnodes; i++)
		{
			TsTrackNode *n = &copy->nodes[i];
			Datum		values[TS_PLAN_NODES_COLS];
			bool		nulls[TS_PLAN_NODES_COLS];
			const char *clock = ts_track_clock_name(copy->clocks);
			bool		timed = copy->timed_executions > 0;
			bool		bufs = copy->buffer_executions > 0;
			int			c = 0;

			memset(nulls, 0, sizeof(nulls));
			values[c++] = ObjectIdGetDatum(copy->key.userid);
			values[c++] = ObjectIdGetDatum(copy->key.dbid);
			values[c++] = Int64GetDatum((int64) copy->key.queryid);
			values[c++] = Int64GetDatum((int64) copy->key.planid);
			values[c++] = Int32GetDatum(i + 1);
			values[c++] = Int32GetDatum(n->parent_id);
			values[c++] = CStringGetTextDatum(n->node_type);
			if (n->relation[0] != '\0')
				values[c++] = CStringGetTextDatum(n->relation);
			else
				nulls[c++] = true;
			values[c++] = Int64GetDatum(copy->executions);
			values[c++] = Float8GetDatum(n->loops);
			values[c++] = Float8GetDatum(n->rows);
			values[c] = Float8GetDatum(n->total_ns / 1e6);
			nulls[c++] = !timed;
			values[c] = Float8GetDatum(n->startup_ns / 1e6);
			nulls[c++] = !timed;
			values[c++] = Int64GetDatum(n->calls);
			values[c] = Int64GetDatum(n->sampled_calls);
			nulls[c++] = !timed;
			values[c] = Int32GetDatum(copy->sample_every);
			nulls[c++] = !timed;
			if (clock != NULL)
				values[c++] = CStringGetTextDatum(clock);
			else
				nulls[c++] = true;
			values[c] = Int64GetDatum(n->blks_hit);
			nulls[c++] = !bufs;
			values[c] = Int64GetDatum(n->blks_read);
			nulls[c++] = !bufs;
			values[c++] = Int64GetDatum(copy->timed_executions);
			values[c++] = Int32GetDatum(copy->plan_nodes);
			values[c++] = Int64GetDatum(copy->counted_executions);
			Assert(c == TS_PLAN_NODES_COLS);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
								 values, nulls);
		}
	}
	LWLockRelease(ts_track->lock);
	pfree(copy);
	return (Datum) 0;
}

Datum
timing_source_plan_nodes_reset(PG_FUNCTION_ARGS)
{
	HASH_SEQ_STATUS hs;
	TsTrackEntry *e;
	bool		one = !PG_ARGISNULL(0);
	uint64		queryid = one ? (uint64) PG_GETARG_INT64(0) : 0;
	TimestampTz now = GetCurrentTimestamp();

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to reset per-node statistics"),
				 errdetail("Only superusers can reset them.")));
	ts_track_require();

	LWLockAcquire(ts_track->lock, LW_EXCLUSIVE);
	hash_seq_init(&hs, ts_track_hash);
	while ((e = hash_seq_search(&hs)) != NULL)
	{
		if (!one || e->key.queryid == queryid)
			hash_search(ts_track_hash, &e->key, HASH_REMOVE, NULL);
	}
	if (!one)
	{
		SpinLockAcquire(&ts_track->mutex);
		ts_track->dealloc = 0;
		ts_track->not_tracked = 0;
		ts_track->stats_reset = now;
		SpinLockRelease(&ts_track->mutex);
	}
	LWLockRelease(ts_track->lock);
	PG_RETURN_VOID();
}

Datum
timing_source_plan_nodes_info(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[5];
	bool		nulls[5] = {false};
	int64		entries;

	ts_track_require();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	LWLockAcquire(ts_track->lock, LW_SHARED);
	entries = hash_get_num_entries(ts_track_hash);
	SpinLockAcquire(&ts_track->mutex);
	values[0] = Int64GetDatum(ts_track->dealloc);
	values[1] = Int64GetDatum(ts_track->not_tracked);
	values[4] = TimestampTzGetDatum(ts_track->stats_reset);
	SpinLockRelease(&ts_track->mutex);
	LWLockRelease(ts_track->lock);
	values[2] = Int64GetDatum(entries);
	values[3] = Int32GetDatum(ts_track_max);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * One plan as indented rows: the sums over every entry the caller may
 * see with that plan id (users and query ids running the same plan).
 */
#define TS_PLAN_BAR_WIDTH	40

Datum
timing_source_plan(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			userid = GetUserId();
	bool		all;
	uint64		planid;
	HASH_SEQ_STATUS hs;
	TsTrackEntry *e;
	TsTrackEntry *copy;
	TsTrackEntry *sum = NULL;
	int			depth[TS_TRACK_NODES];
	int			map[TS_TRACK_NODES];
	double		top_ns;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("planid must not be NULL"),
				 errhint("Plan ids are in the planid column of timing_source_plan_nodes.")));
	planid = (uint64) PG_GETARG_INT64(0);
	ts_track_require();
	all = has_privs_of_role(userid, ROLE_PG_READ_ALL_STATS);
	InitMaterializedSRF(fcinfo, 0);
	copy = palloc(sizeof(TsTrackEntry));

	LWLockAcquire(ts_track->lock, LW_SHARED);
	hash_seq_init(&hs, ts_track_hash);
	while ((e = hash_seq_search(&hs)) != NULL)
	{
		if (e->key.planid != planid || (!all && e->key.userid != userid))
			continue;
		ts_track_copy(e, copy);
		if (sum == NULL)
		{
			sum = palloc(sizeof(TsTrackEntry));
			memcpy(sum, copy, sizeof(TsTrackEntry));
			continue;
		}
		sum->executions += copy->executions;
		sum->counted_executions += copy->counted_executions;
		sum->timed_executions += copy->timed_executions;
		(void) ts_track_match(sum->nodes, sum->nnodes, copy->nodes, copy->nnodes, map);
		for (int i = 0; i < copy->nnodes; i++)
		{
			if (map[i] < 0)
				continue;
			sum->nodes[map[i]].rows += copy->nodes[i].rows;
			sum->nodes[map[i]].total_ns += copy->nodes[i].total_ns;
		}
	}
	LWLockRelease(ts_track->lock);
	pfree(copy);
	if (sum == NULL || sum->nnodes == 0)
		return (Datum) 0;

	top_ns = sum->nodes[0].total_ns;
	for (int i = 0; i < sum->nnodes; i++)
	{
		TsTrackNode *n = &sum->nodes[i];
		Datum		values[5];
		bool		nulls[5] = {false};
		StringInfoData label;
		int			p = n->parent_id;

		/* pre-order: a parent comes before its children */
		depth[i] = (p >= 1 && p <= i) ? depth[p - 1] + 1 : 0;
		initStringInfo(&label);
		appendStringInfoSpaces(&label, 2 * depth[i]);
		if (depth[i] > 0)
			appendStringInfoString(&label, "-> ");
		appendStringInfoString(&label, n->node_type);
		if (n->relation[0] != '\0')
			appendStringInfo(&label, " on %s", n->relation);

		values[0] = Int32GetDatum(i + 1);
		values[1] = CStringGetTextDatum(label.data);
		if (sum->counted_executions > 0)
			values[2] = Float8GetDatum(n->rows / (double) sum->counted_executions);
		else
			nulls[2] = true;
		if (sum->timed_executions > 0 && top_ns > 0)
		{
			double		share = Min(n->total_ns / top_ns, 1.0);
			int			width = (int) (share * TS_PLAN_BAR_WIDTH + 0.5);
			char	   *bar = palloc(width + 1);

			memset(bar, '#', width);
			bar[width] = '\0';
			values[3] = Float8GetDatum(share);
			values[4] = CStringGetTextDatum(bar);
		}
		else
		{
			nulls[3] = true;
			nulls[4] = true;
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
							 values, nulls);
	}
	pfree(sum);
	return (Datum) 0;
}
