/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  The one place where timing_source adapts to PostgreSQL major
 *	  versions.  Everything keyed on PG_VERSION_NUM lives here; the rest
 *	  of the code uses the macros and inline functions defined below.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_COMPAT_H
#define TS_COMPAT_H

#include "postgres.h"

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
 * earlier majors).
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
#endif

/* pg_attribute_always_inline was renamed pg_always_inline in 20devel */
#if !defined(pg_attribute_always_inline) && defined(pg_always_inline)
#define pg_attribute_always_inline pg_always_inline
#endif

/* pg_attribute_noreturn() was replaced by pg_noreturn in 18 */
#ifndef pg_attribute_noreturn
#define pg_attribute_noreturn() __attribute__((noreturn))
#endif

#endif							/* TS_COMPAT_H */
