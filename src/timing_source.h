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
 * Run CPU detection and calibration if this process has not done so yet.
 * It normally has: _PG_init detects, in the postmaster when the library is
 * preloaded, else when the library is loaded into the backend.  A parallel
 * worker never detects: it takes its leader's decision.
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

/*
 * diagnostics.c: a fractional result figure as the caller's SQL definition
 * declares it: numeric rounded to scale decimals (1.2 on), or float8 (1.0,
 * 1.1).  The scales follow pg_test_timing's output.
 */
#define TS_PCT_SCALE	4		/* percentages, as "%10.4f" */
#define TS_NS_SCALE		2		/* nanoseconds, as "%0.2f ns" */
#define TS_PPM_SCALE	3		/* parts per million */
#define TS_MS_SCALE		3		/* milliseconds, as EXPLAIN prints them */
#define TS_US_SCALE		3		/* microseconds */
#define TS_RATIO_SCALE	3		/* ratios */
extern Datum ts_fixed_datum(TupleDesc desc, int attno, double value, int scale);

/*
 * compare.c: ereport(ERROR) unless query is one statement with plan nodes
 * (SELECT, VALUES, INSERT, UPDATE, DELETE, MERGE); returns it parsed.
 * "what" names the caller in the error about a utility statement.
 */
typedef enum TsQueryCheck
{
	TS_CHECK_COMPARE,			/* timing_source_compare() */
	TS_CHECK_PLAN_NODES			/* timing_source_explain_nodes() */
} TsQueryCheck;
struct RawStmt;
extern struct RawStmt *ts_check_query(const char *query, TsQueryCheck what);

/* diagnostics.c: ereport(ERROR) unless 1 <= runs <= max */
extern int	ts_check_runs(int runs, int max);

/* PostgreSQL 19 and later: core owns timing_clock_source */
extern bool ts_core_owns_setting;

/* timing_source.sample_every: time 1 in N calls of each node (1: all) */
extern int	ts_sample_every;

/*
 * timing_source.node_wrappers (19+): time plan nodes through the
 * extension's wrappers, reading core's clock, rather than core's own
 */
extern bool ts_node_wrappers;

/*
 * Mark the TSC unusable in this process (and, when preloaded, in every
 * process of the server) because the per-query watchdog caught it
 * disagreeing with the system clock.  Queries already bound keep it.
 */
extern void ts_distrust_tsc(const char *reason);

/*
 * Make sure this session's parallel workers will see this process's TSC
 * decision (called before an instrumented query starts, right after
 * ts_session_uses_tsc() has brought that decision up to date).
 */
extern void ts_export_decision(void);

/* executor glue (instrument.c; what its files share is in instrument.h) */
extern void ts_instrument_init(void);

/*
 * Whether EXPLAIN ANALYZE run now, with the TSC (tsc) or the system clock,
 * would time nodes sampled (timing_source.sample_every > 1 and wrappers
 * that sample with that clock).
 */
extern bool ts_instrument_samples(bool tsc);

/* state shared across processes when preloaded (shared.c) */
typedef struct TsStats
{
	uint64		watchdog_checks;
	uint64		watchdog_failures;
	uint64		tsc_calls;		/* plan node calls timed with the TSC */
	bool		shared;			/* server-wide, else this process only */
} TsStats;

extern void ts_shared_init(void);
extern bool ts_shared_is_shared(void);
extern void ts_stats_add_calls(uint64 n);
extern void ts_stats_watchdog(bool failed);
extern void ts_stats_read(TsStats *stats);
extern void ts_shared_distrust(const char *reason);
extern bool ts_shared_distrusted(char *reason, size_t len);

#endif							/* TIMING_SOURCE_H */
