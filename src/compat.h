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
 * PostgreSQL 19 ships timing_clock_source and TSC timing in core; the
 * extension then registers neither the setting nor the executor hook.
 */
#if PG_VERSION_NUM >= 190000
#define TS_CORE_OWNS_SETTING true
#else
#define TS_CORE_OWNS_SETTING false
#endif

/* pg_attribute_noreturn() was replaced by pg_noreturn in 18 */
#ifndef pg_attribute_noreturn
#define pg_attribute_noreturn() __attribute__((noreturn))
#endif

/* ----------------------------------------------------------------------
 * Diagnostics (diagnostics.c)
 * ----------------------------------------------------------------------
 */

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
