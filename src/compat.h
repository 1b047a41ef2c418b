/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  The one place where timing_source adapts to PostgreSQL major
 *	  versions.  Everything keyed on PG_VERSION_NUM lives here; the rest
 *	  of the code uses the macros and inline functions defined below.
 *	  Included through timing_source.h, after postgres.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_COMPAT_H
#define TS_COMPAT_H

/* like every PostgreSQL header: the including .c file has postgres.h first */

#if PG_VERSION_NUM < 150000
#error "timing_source requires PostgreSQL 15 or later"
#endif

/*
 * heap_form_tuple() is declared in access/htup_details.h.  Before 19 the
 * executor headers that funcapi.h pulls in included it, so code building
 * result rows got it for free; 19 trimmed those includes, so it has to be
 * included explicitly.  Including it on every major is harmless.
 */
#include "access/htup_details.h"

/*
 * PostgreSQL 19 ships timing_clock_source and TSC timing in core; the
 * extension then registers neither timing_clock_source nor
 * timing_source.clock_source, and its node wrappers read core's clock
 * (timing_source.node_wrappers).  TS_SAMPLED_NODES, for
 * timing_source.sample_every's description, says which nodes it samples:
 * through 18 those the extension times, with the TSC; on 19 those its
 * wrappers time, with core's clock, whichever it is.
 */
#if PG_VERSION_NUM >= 190000
#define TS_CORE_OWNS_SETTING true
#define TS_SAMPLED_NODES \
	"Applies to nodes timed by timing_source.node_wrappers, under either clock."
#else
#define TS_CORE_OWNS_SETTING false
#define TS_SAMPLED_NODES \
	"Applies to nodes timed with the TSC; under the system clock every call is timed."
#endif

/*
 * ts_core_uses_tsc(): whether core times executor nodes with the TSC in
 * this session right now (19+: core's timing_clock_source after resolving
 * "auto").  Core's GUC value as a string cannot tell, since
 * GetConfigOption() returns "auto" and only SHOW adds "(tsc)".
 * ts_core_tsc_khz(): core's TSC frequency in kHz (19+; 0 when core found
 * the TSC unusable, -1 before core initialized timing, and -1 always on
 * earlier majors); ts_core_tsc_source(): how core found it.
 */
#if PG_VERSION_NUM >= 190000
#include "portability/instr_time.h"

static inline bool
ts_core_uses_tsc(void)
{
	return pg_current_timing_clock_source() != TIMING_CLOCK_SOURCE_SYSTEM;
}

static inline int64
ts_core_tsc_khz(void)
{
	return (int64) timing_tsc_frequency_khz;
}

/* how core found its TSC frequency (x86-64 builds of 19+), else NULL */
static inline const char *
ts_core_tsc_source(void)
{
#if PG_INSTR_TSC_CLOCK
	const TscClockSourceInfo *info = pg_timing_tsc_clock_source_info();

	return info != NULL ? info->frequency_source : NULL;
#else
	return NULL;
#endif
}
#else
static inline bool
ts_core_uses_tsc(void)
{
	return false;
}

static inline int64
ts_core_tsc_khz(void)
{
	return -1;
}

static inline const char *
ts_core_tsc_source(void)
{
	return NULL;
}
#endif

/*
 * The library's magic block.  From 18 on it also carries the library's
 * name and version, which pg_get_loaded_modules() shows; the version is
 * the extension's default_version.  Earlier majors have only the plain
 * block.
 */
#define TS_LIBRARY_VERSION "1.5"

#if PG_VERSION_NUM >= 180000
#define TS_MODULE_MAGIC \
	PG_MODULE_MAGIC_EXT(.name = "timing_source", .version = TS_LIBRARY_VERSION)
#else
#define TS_MODULE_MAGIC PG_MODULE_MAGIC
#endif

/* pg_attribute_always_inline was renamed pg_always_inline in 20devel */
#if !defined(pg_attribute_always_inline) && defined(pg_always_inline)
#define pg_attribute_always_inline pg_always_inline
#endif

/* pg_attribute_noreturn() was replaced by pg_noreturn in 18 */
#ifndef pg_attribute_noreturn
#define pg_attribute_noreturn() __attribute__((noreturn))
#endif

/* ----------------------------------------------------------------
 * Executor instrumentation (src/instrument.h and the files it names)
 *
 * PostgreSQL 15-18 share the Instrumentation struct layout that matters
 * here (counter, firsttuple as double seconds, tuplecount, running,
 * async_mode, need_* flags) and keep ExecProcNodeFirst/ExecProcNodeInstr
 * static, so the extension installs its own node wrappers.  What differs
 * is instr_time: a struct timespec in 15 (when the platform has
 * clock_gettime), an int64 nanosecond count ("ticks") from 16 on.
 *
 * PostgreSQL 19 splits a node's instrumentation into NodeInstrumentation
 * (counter, firsttuple and startup now instr_time, tuplecount, running,
 * async_mode) around a general Instrumentation (need_* flags, total,
 * buffer and WAL usage), and times nodes with its own clock: the TSC when
 * its timing_clock_source resolves to it, instr_time.ticks then counting
 * TSC ticks that are converted to nanoseconds with the scale current at
 * conversion time.  The wrappers (timing_source.node_wrappers) read that
 * clock of core's, as core chose it when the query started
 * (TS_CORE_CLOCK).
 *
 * 20devel (master) replaces the per-call buffer/WAL snapshots with a
 * stack of Instrumentation entries (need_stack, InstrPushStack) that
 * core's own node wrappers maintain; wrappers that copy pgBufferUsage
 * would not count buffers as core does there.  Until wrappers exist for
 * that instrumentation (a file of their own, see instrument.h), 20 and
 * later get no hook.
 *
 * TS_HAVE_EXECUTOR_HOOK is defined where the wrappers can be built;
 * elsewhere ts_instrument_init() installs nothing.  On Windows instr_time
 * is not in nanoseconds before 19 and 19's QueryPerformanceCounter path is
 * untested, so Windows gets no hook.
 * ----------------------------------------------------------------
 */
#include "executor/instrument.h"

#if PG_VERSION_NUM < 190000 && !defined(WIN32) && \
	(PG_VERSION_NUM >= 160000 || defined(HAVE_CLOCK_GETTIME))
#define TS_HAVE_EXECUTOR_HOOK 1
#endif

#if PG_VERSION_NUM >= 190000 && PG_VERSION_NUM < 200000 && !defined(WIN32)
#define TS_HAVE_EXECUTOR_HOOK 1
#define TS_CORE_CLOCK 1
#endif

#ifdef TS_HAVE_EXECUTOR_HOOK

#define TS_NS_PER_S		INT64CONST(1000000000)

#ifdef TS_CORE_CLOCK

/* what PlanState.instrument points to */
typedef NodeInstrumentation TsNodeInstr;

/* its need_* flags */
#define TS_INSTR_FLAGS(ni)	(&(ni)->instr)

/* firsttuple is an instr_time, set from the running counter */
#define TS_INSTR_SET_FIRSTTUPLE(ni) ((ni)->firsttuple = (ni)->counter)

/*
 * Core's clocks, read as core reads them for per-node timing: the TSC
 * without waiting for earlier instructions (RDTSC, as
 * INSTR_TIME_SET_CURRENT_FAST does), or the system clock, whose ticks are
 * nanoseconds.  TS_CORE_HAVE_TSC is 0 where core has no TSC clock source.
 */
#define TS_CORE_HAVE_TSC PG_INSTR_TSC_CLOCK

static pg_attribute_always_inline int64
ts_core_read_tsc(void)
{
#if PG_INSTR_TSC_CLOCK
	return pg_rdtsc();
#else
	return pg_get_ticks_system().ticks;
#endif
}

static pg_attribute_always_inline int64
ts_core_read_system(void)
{
	return pg_get_ticks_system().ticks;
}

/*
 * What instr_time.ticks means right now: core's fixed-point ticks-to-ns
 * factor (0: ticks are nanoseconds).  Two instants with the same value
 * count ticks in the same unit.
 */
static inline uint64
ts_core_ticks_unit(void)
{
	return ticks_per_ns_scaled;
}

/*
 * The unit of the ticks of one of core's clocks, whichever core converts
 * with now: the system clock's are nanoseconds (0), the TSC's core's
 * factor for its frequency.  A query's nodes keep reading the clock they
 * were bound to when a superuser switches timing_clock_source inside it.
 */
static inline uint64
ts_core_clock_unit(bool tsc)
{
#if PG_INSTR_TSC_CLOCK
	if (tsc && !timing_tsc_enabled && timing_tsc_frequency_khz > 0)
		return ((uint64) (TS_NS_PER_S / 1000) << TICKS_TO_NS_SHIFT) /
			(uint64) timing_tsc_frequency_khz;
	if (tsc)
		return ticks_per_ns_scaled;
#endif
	return 0;
}

/* ticks of the unit "unit" (see above) in nanoseconds, as core converts */
static inline int64
ts_core_ticks_to_ns(int64 ticks, uint64 unit)
{
	int64		hi;
	int64		lo;

	if (unit == 0 || ticks <= 0)
		return ticks;
	hi = ticks >> TICKS_TO_NS_SHIFT;
	lo = ticks - (hi << TICKS_TO_NS_SHIFT);
	return hi * (int64) unit + ((lo * (int64) unit) >> TICKS_TO_NS_SHIFT);
}

/* nanoseconds in the unit core converts with now */
static inline int64
ts_core_ns_to_ticks(int64 ns)
{
	return pg_ns_to_ticks(ns);
}

#else							/* !TS_CORE_CLOCK */

typedef Instrumentation TsNodeInstr;

#define TS_INSTR_FLAGS(ni)	(ni)

/*
 * Instrumentation.firsttuple is a double in seconds through 18, set from
 * the running counter exactly as InstrStopNode does.
 */
#define TS_INSTR_SET_FIRSTTUPLE(instr) \
	((instr)->firsttuple = INSTR_TIME_GET_DOUBLE((instr)->counter))

/*
 * Add a non-negative number of nanoseconds to an instr_time accumulator,
 * leaving it in the same normalized form core's INSTR_TIME_ACCUM_DIFF
 * leaves it in.  Per-call deltas are almost always below one second,
 * so 15's timespec form needs no division on the hot path.
 */
static inline void
ts_instr_time_add_ns(instr_time *t, uint64 ns)
{
#if PG_VERSION_NUM >= 160000
	t->ticks += (int64) ns;
#else
	if (likely(ns < (uint64) TS_NS_PER_S))
		t->tv_nsec += (long) ns;
	else
	{
		t->tv_sec += (time_t) (ns / (uint64) TS_NS_PER_S);
		t->tv_nsec += (long) (ns % (uint64) TS_NS_PER_S);
	}
	if (t->tv_nsec >= TS_NS_PER_S)
	{
		t->tv_nsec -= TS_NS_PER_S;
		t->tv_sec++;
	}
#endif
}
#endif							/* TS_CORE_CLOCK */

/*
 * A node's accumulated times after InstrEndLoop, and its parallel workers'
 * copies.  Through 18 total and startup are doubles in seconds in
 * Instrumentation; 19 keeps them as instr_time (total in the general
 * Instrumentation, startup in NodeInstrumentation), in core's ticks.
 */
#ifdef TS_CORE_CLOCK
typedef WorkerNodeInstrumentation TsWorkerInstr;

static inline double
ts_node_total_s(TsNodeInstr *ni)
{
	return INSTR_TIME_GET_DOUBLE(ni->instr.total);
}

static inline double
ts_node_startup_s(TsNodeInstr *ni)
{
	return INSTR_TIME_GET_DOUBLE(ni->startup);
}

static inline void
ts_node_set_times(TsNodeInstr *ni, double total_s, double startup_s)
{
	ni->instr.total.ticks = ts_core_ns_to_ticks((int64) (total_s * 1e9));
	ni->startup.ticks = ts_core_ns_to_ticks((int64) (startup_s * 1e9));
}
#else
typedef WorkerInstrumentation TsWorkerInstr;

static inline double
ts_node_total_s(TsNodeInstr *ni)
{
	return ni->total;
}

static inline double
ts_node_startup_s(TsNodeInstr *ni)
{
	return ni->startup;
}

static inline void
ts_node_set_times(TsNodeInstr *ni, double total_s, double startup_s)
{
	ni->total = total_s;
	ni->startup = startup_s;
}
#endif

/* the running loop's accumulated time, in nanoseconds, on every major */
#define TS_NODE_COUNTER_NS(ni)	(INSTR_TIME_GET_DOUBLE((ni)->counter) * 1e9)

/*
 * ExecutorStart_hook is void (QueryDesc *, int) in all of 15-19, so it
 * needs no adapter.  ExecutorRun_hook lost execute_once in 18; per-node
 * tracking (track.c) hooks it to know statements' nesting.
 */

/*
 * PostgreSQL 18 lets extensions add lines to EXPLAIN's output for each
 * plan node (also in auto_explain, which prints through the same code);
 * ExplainPropertyText moved to explain_format.h there.  Sampled timing
 * says so through it; earlier majors have no such hook.
 */
#if PG_VERSION_NUM >= 180000
#define TS_HAVE_EXPLAIN_NODE_HOOK 1
#include "commands/explain.h"
#include "commands/explain_format.h"
#include "commands/explain_state.h"
#endif

#endif							/* TS_HAVE_EXECUTOR_HOOK */

/*
 * A plan node's instrumentation as EXPLAIN reads it once its loops have
 * ended (InstrEndLoop): startup and total times over all loops, in
 * nanoseconds.  Through 18 they are doubles in seconds; 19 keeps them as
 * instr_time (core's ticks, which INSTR_TIME_GET_DOUBLE converts).
 * ts_instr_workers_ran(): whether parallel workers ran the node (their
 * figures, added to the leader's, are kept per worker too).
 */
#include "nodes/execnodes.h"

#if PG_VERSION_NUM >= 190000
static inline double
ts_instr_total_ns(NodeInstrumentation *ni)
{
	return INSTR_TIME_GET_DOUBLE(ni->instr.total) * 1e9;
}

static inline double
ts_instr_startup_ns(NodeInstrumentation *ni)
{
	return INSTR_TIME_GET_DOUBLE(ni->startup) * 1e9;
}
#else
static inline double
ts_instr_total_ns(Instrumentation *instr)
{
	return instr->total * 1e9;
}

static inline double
ts_instr_startup_ns(Instrumentation *instr)
{
	return instr->startup * 1e9;
}
#endif

static inline bool
ts_instr_workers_ran(PlanState *node)
{
	if (node->worker_instrument == NULL)
		return false;
	for (int i = 0; i < node->worker_instrument->num_workers; i++)
	{
		if (node->worker_instrument->instrument[i].nloops > 0)
			return true;
	}
	return false;
}

/*
 * Running a planned query to completion (plan_nodes.c): planning takes
 * an ExplainState from 19 on (NULL: not under EXPLAIN), and ExecutorRun
 * lost execute_once in 18.
 */
#if PG_VERSION_NUM >= 190000
#define ts_plan_query(query, text, opts, params) \
	pg_plan_query((query), (text), (opts), (params), NULL)
#else
#define ts_plan_query(query, text, opts, params) \
	pg_plan_query((query), (text), (opts), (params))
#endif

#if PG_VERSION_NUM >= 180000
#define TS_EXECUTOR_RUN_PARAMS \
	QueryDesc *queryDesc, ScanDirection direction, uint64 count
#define TS_EXECUTOR_RUN_ARGS queryDesc, direction, count
#else
#define TS_EXECUTOR_RUN_PARAMS \
	QueryDesc *queryDesc, ScanDirection direction, uint64 count, \
	bool execute_once
#define TS_EXECUTOR_RUN_ARGS queryDesc, direction, count, execute_once
#endif

#if PG_VERSION_NUM >= 180000
#define ts_executor_run_all(qd) ExecutorRun((qd), ForwardScanDirection, 0)
#else
#define ts_executor_run_all(qd) ExecutorRun((qd), ForwardScanDirection, 0, true)
#endif

/* ----------------------------------------------------------------------
 * Plan and query identity (src/planid.c)
 * ----------------------------------------------------------------------
 */

/*
 * EnableQueryId() is declared in utils/queryjumble.h through 15 and in
 * nodes/queryjumble.h from 16 on.  PlannedStmt.planId, which modules may
 * set and core reports, exists from 18 on; before that the plan id is
 * the extension's own and there is nowhere to share it.  queryId became
 * signed in 18; the extension keeps both as 64-bit unsigned.
 */
#if PG_VERSION_NUM >= 160000
#include "nodes/queryjumble.h"
#else
#include "utils/queryjumble.h"
#endif

#if PG_VERSION_NUM >= 180000
#define ts_pstmt_plan_id(pstmt) ((uint64) (pstmt)->planId)
#define ts_pstmt_set_plan_id(pstmt, id) ((pstmt)->planId = (int64) (id))
#else
#define ts_pstmt_plan_id(pstmt) ((void) (pstmt), (uint64) 0)
#define ts_pstmt_set_plan_id(pstmt, id) ((void) (pstmt), (void) (id))
#endif
#define ts_pstmt_query_id(pstmt) ((uint64) (pstmt)->queryId)

/*
 * A shared hash table made at shared memory startup (track.c): 19 dropped
 * ShmemInitHash's separate initial size (it allocates the whole table at
 * once, as the extension asked for anyway).
 */
#if PG_VERSION_NUM >= 190000
#define ts_shmem_init_hash(name, nelems, info, flags) \
	ShmemInitHash((name), (nelems), (info), (flags))
#else
#define ts_shmem_init_hash(name, nelems, info, flags) \
	ShmemInitHash((name), (nelems), (nelems), (info), (flags))
#endif

/* ----------------------------------------------------------------------
 * Diagnostics (src/diagnostics.c)
 * ----------------------------------------------------------------------
 */

/* EXPLAIN ANALYZE reports buffer usage unless told otherwise from 18 on */
#if PG_VERSION_NUM >= 180000
#define TS_EXPLAIN_BUFFERS_DEFAULT "on"
#else
#define TS_EXPLAIN_BUFFERS_DEFAULT "off"
#endif

/*
 * InitMaterializedSRF() and its MAT_SRF_* flags are the 15.1 names of
 * 15.0's SetSingleFuncCall() and SRF_SINGLE_*.  Macros only, so funcapi.h
 * need not be included here.
 */
#if PG_VERSION_NUM < 150001
#define InitMaterializedSRF(fcinfo, flags)	SetSingleFuncCall(fcinfo, flags)
#define MAT_SRF_USE_EXPECTED_DESC	SRF_SINGLE_USE_EXPECTED
#define MAT_SRF_BLESS				SRF_SINGLE_BLESS
#endif

#endif							/* TS_COMPAT_H */
