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

/*
 * diagnostics.c: fn(arg) inside a subtransaction that is always rolled
 * back, returning what fn returns.  Errors roll it back and are re-thrown
 * as they came, as PL/pgSQL's exception blocks do, so that an enclosing
 * subtransaction of the caller stays intact.  fn runs in the caller's
 * memory context when in_caller_context (what it allocates outlives the
 * subtransaction), else in the subtransaction's (gone with it).
 */
typedef double (*TsSubxactFn) (void *arg);
extern double ts_in_rolled_back_subxact(TsSubxactFn fn, void *arg,
										bool in_caller_context);

/* PostgreSQL 19 and later: core owns timing_clock_source */
extern bool ts_core_owns_setting;

/* timing_source.sample_every: time 1 in N calls of each node (1: all) */
extern int	ts_sample_every;

/*
 * timing_source.sample_budget: past N times this many calls, a sampled
 * node's k-th call is timed with probability budget / k (0: never)
 */
extern int	ts_sample_budget;

/*
 * A sampled node's first calls after the first of their loop, timed
 * exactly before the probability falls towards 1 in N (instrument.c,
 * ts_warm_weight).  As many as an interval needs, so that a node of a few
 * hundred calls has one.
 */
#define TS_WARMUP_CALLS		30

/*
 * The smallest timing_source.sample_budget: a node is thinned only after
 * this many sampled calls at 1 in N, so that its estimate never rests on
 * fewer than a node of as many calls times N gets without a budget.  A
 * few dozen let a node's rare long calls be caught so seldom, each at a
 * weight in the tens, that its intervals held in well under 90% of runs.
 */
#define TS_MIN_SAMPLE_BUDGET	1000

/*
 * timing_source.subtract_overhead: remove the estimated instrumentation
 * cost from exactly timed nodes' printed times
 */
extern bool ts_subtract_overhead;

/*
 * timing_source.sample_buffers: with sampled timing, scan nodes estimate
 * their buffer and WAL usage from their timed calls (opt-in; only where
 * EXPLAIN can say the figures are estimates)
 */
extern bool ts_sample_buffers;

/*
 * The top node's estimated instrumentation cost (ns) in the last query
 * the wrappers timed exactly, < 0 if none since the reset (overhead.c,
 * for timing_source_compare)
 */
extern double ts_last_top_overhead_ns(void);
extern void ts_reset_last_top_overhead(void);

/*
 * timing_source.node_wrappers (19+): time plan nodes through the
 * extension's wrappers, reading core's clock, rather than core's own
 */
extern bool ts_node_wrappers;

/*
 * Mark the TSC unusable in this process (and, when preloaded, in every
 * process of the server) because the per-query watchdog, checking at the
 * frequency of generation, caught it disagreeing with the system clock.
 * Queries already bound keep it.  True when this was the trip that
 * stopped it (false: already stopped, or a check of an older generation).
 */
extern bool ts_distrust_tsc(const char *reason, uint32 generation,
							uint32 freq_generation);

/*
 * Make sure this session's parallel workers will see this process's TSC
 * decision (called before an instrumented query starts, right after
 * ts_session_uses_tsc() has brought that decision up to date).
 */
extern void ts_export_decision(void);

/* executor glue (instrument.c; what its files share is in instrument.h) */
extern void ts_instrument_init(void);

/*
 * The hidden setting through which a leader tells its parallel workers
 * where to leave their sampling figures (worker_sampling.c); defines
 * nothing where the wrappers are not built
 */
extern void ts_worker_sampling_init(void);

/*
 * Whether EXPLAIN ANALYZE run now, with the TSC (tsc) or the system clock,
 * would time nodes sampled (timing_source.sample_every > 1 and wrappers
 * that sample with that clock).
 */
extern bool ts_instrument_samples(bool tsc);

/*
 * Whether the wrappers would time a query started now sampled, at any
 * rate (the session's clock is one they sample with): what tracking asks
 * before it asks for per-node timing.
 */
extern bool ts_instrument_can_sample(void);

/* state shared across processes when preloaded (shared.c) */
typedef struct TsStats
{
	uint64		watchdog_checks;
	uint64		watchdog_failures;
	uint64		tsc_calls;		/* plan node calls timed with the TSC */
	uint64		recalibrations; /* run after a watchdog trip */
	uint64		recalibrations_agreed;	/* that confirmed the one before */
	uint64		recoveries;		/* probations passed: TSC trusted again */
	bool		shared;			/* server-wide, else this process only */
} TsStats;

extern void ts_shared_init(void);
extern bool ts_shared_is_shared(void);
extern void ts_stats_add_calls(uint64 n);
extern void ts_stats_watchdog(bool failed);
extern void ts_stats_read(TsStats *stats);

/*
 * Recovery after a watchdog trip (15-18; docs/internals.md).  The TSC is
 * trusted, distrusted (a trip stopped it; re-calibrated at most once per
 * interval, with a back-off) or on probation (two calibrations agreed on a
 * frequency; the watchdog checks timed queries at it, whose nodes keep the
 * system clock, and TS_RECOVER_PASSES passes in a row trust it again).
 */
typedef enum TsTscPhase
{
	TS_TSC_TRUSTED = 0,
	TS_TSC_DISTRUSTED,
	TS_TSC_PROBATION
} TsTscPhase;

#define TS_RECOVER_PASSES		3
#define TS_RECOVER_INTERVAL_MS	(30 * 1000)
/* the wait grows to at most this many intervals */
#define TS_RECOVER_MAX_BACKOFF	64

typedef struct TsTscShared
{
	uint32		generation;
	uint32		freq_generation;	/* bumped only when the frequency changes */
	TsTscPhase	phase;
	uint64		khz;			/* 0: the frequency detected at startup */
	int			passes;
	char		reason[256];
} TsTscShared;

typedef enum TsRecalResult
{
	TS_RECAL_STALE,				/* the state changed meanwhile: ignored */
	TS_RECAL_NOT_CONVERGED,
	TS_RECAL_FIRST,				/* now the candidate */
	TS_RECAL_DISAGREED,			/* with the candidate; now the candidate */
	TS_RECAL_AGREED				/* with the candidate: probation */
} TsRecalResult;

/* the re-calibration interval, microseconds (a test seam may shorten it) */
extern int64 ts_recover_interval_us(void);

extern uint32 ts_shared_generation(void);
extern void ts_shared_snapshot(TsTscShared *snap);
extern bool ts_shared_distrust(const char *reason, uint32 generation,
							   uint32 freq_generation);
extern uint32 ts_shared_freq_generation(void);
extern bool ts_shared_claim_recalibration(uint32 *generation);
extern TsRecalResult ts_shared_recalibrated(uint32 generation, bool converged,
											uint64 khz, double ppm,
											uint64 *cand_khz);
extern bool ts_shared_probation_passed(uint32 generation);

/*
 * timing_source.c: this process's view of the shared phase, and the
 * generation it is of
 */
extern TsTscPhase ts_tsc_phase;
extern uint32 ts_tsc_generation;
extern uint32 ts_tsc_freq_generation;

/*
 * At the start of a query the extension may time: when the TSC is
 * distrusted and the interval is over, re-calibrate (timing_source.c)
 */
extern void ts_recover_tick(void);

/*
 * watchdog.c: whether a query of this process is timed with the TSC now
 * (false where there is no watchdog)
 */
extern bool ts_clock_tsc_queries_running(void);

#endif							/* TIMING_SOURCE_H */
