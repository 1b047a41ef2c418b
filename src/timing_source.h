/*-------------------------------------------------------------------------
 *
 * timing_source.h
 *	  Declarations shared by the PostgreSQL-facing files of timing_source
 *	  (setting, executor glue, diagnostics).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIMING_SOURCE_H
#define TIMING_SOURCE_H

#include "compat.h"
#include "tsclock.h"

/* Values of timing_clock_source / timing_source.clock_source */
typedef enum TimingClockSource
{
	TS_CLOCK_DEFAULT = -1,		/* hidden: follow the server default */
	TS_CLOCK_AUTO = 0,
	TS_CLOCK_SYSTEM,
	TS_CLOCK_TSC
} TimingClockSource;

/*
 * Run CPU detection and calibration if this process has not done so yet
 * (it normally has: the postmaster does it when the library is preloaded).
 */
extern void ts_ensure_detected(void);

/*
 * True when the current session's effective timing_clock_source resolves
 * to the TSC (explicit 'tsc', or 'auto' where the TSC is eligible).
 * Cheap: no detection work after the first call.
 */
extern bool ts_session_uses_tsc(void);

/* The session's setting after resolving the server default (never DEFAULT) */
extern TimingClockSource ts_session_setting(void);

/*
 * ereport(ERROR) explaining why the TSC cannot be used, with the concrete
 * reason as errdetail; what names the thing asked for (a setting value,
 * a function argument).  Only call when !tsclock_info.usable.
 */
extern void ts_report_tsc_unusable(const char *what) pg_attribute_noreturn();

/* PostgreSQL 19 and later: core owns timing_clock_source */
extern bool ts_core_owns_setting;

/* executor glue (instrument.c) */
extern void ts_instrument_init(void);

#endif							/* TIMING_SOURCE_H */
