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
 * extension then registers neither the setting nor the executor hook.
 */
#if PG_VERSION_NUM >= 190000
#define TS_CORE_OWNS_SETTING true
#else
#define TS_CORE_OWNS_SETTING false
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

/* pg_attribute_always_inline was renamed pg_always_inline in 20devel */
#if !defined(pg_attribute_always_inline) && defined(pg_always_inline)
#define pg_attribute_always_inline pg_always_inline
#endif

/* pg_attribute_noreturn() was replaced by pg_noreturn in 18 */
#ifndef pg_attribute_noreturn
#define pg_attribute_noreturn() __attribute__((noreturn))
#endif

/* ----------------------------------------------------------------
 * Executor instrumentation (src/instrument.c)
 *
 * PostgreSQL 15-18 share the Instrumentation struct layout that matters
 * here (counter, firsttuple as double seconds, tuplecount, running,
 * async_mode, need_* flags) and keep ExecProcNodeFirst/ExecProcNodeInstr
 * static, so the extension installs its own node wrappers.  What differs
 * is instr_time: a struct timespec in 15 (when the platform has
 * clock_gettime), an int64 nanosecond count ("ticks") from 16 on.
 *
 * TS_HAVE_EXECUTOR_HOOK is defined where the TSC wrappers can be built;
 * elsewhere ts_instrument_init() installs nothing.  PostgreSQL 19 times
 * nodes with the TSC itself, and on Windows instr_time is not in
 * nanoseconds, so neither gets the hook.
 * ----------------------------------------------------------------
 */
#include "executor/instrument.h"

#if PG_VERSION_NUM < 190000 && !defined(WIN32) && \
	(PG_VERSION_NUM >= 160000 || defined(HAVE_CLOCK_GETTIME))
#define TS_HAVE_EXECUTOR_HOOK 1
#endif

#ifdef TS_HAVE_EXECUTOR_HOOK

#define TS_NS_PER_S		INT64CONST(1000000000)

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

/*
 * Instrumentation.firsttuple is a double in seconds through 18, set from
 * the running counter exactly as InstrStopNode does.
 */
#define TS_INSTR_SET_FIRSTTUPLE(instr) \
	((instr)->firsttuple = INSTR_TIME_GET_DOUBLE((instr)->counter))

/*
 * ExecutorStart_hook is void (QueryDesc *, int) in all of 15-18: the
 * bool-returning variant of the 18 development cycle was reverted before
 * release.  (ExecutorRun_hook lost execute_once in 18; the extension does
 * not hook ExecutorRun.)
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
