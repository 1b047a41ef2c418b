/*-------------------------------------------------------------------------
 *
 * timing_source.c
 *	  Module entry point and the timing_clock_source settings.
 *
 * Two settings:
 *
 *	 timing_source.clock_source (PGC_SIGHUP): the server-wide default, the
 *	 one to put in postgresql.conf.  The file is read before preloaded
 *	 libraries are loaded, and a name without a dot that no one has defined
 *	 yet stops the server, so the file cannot name timing_clock_source on
 *	 releases before 19.
 *
 *	 timing_clock_source (PGC_USERSET): the same name and values as in
 *	 PostgreSQL 19, per session.  Its boot value is a hidden "default"
 *	 that follows the server-wide setting, so SET overrides the server
 *	 default for the session, RESET goes back to following it, and a
 *	 reload that changes the server default reaches every session that has
 *	 not SET its own value.
 *
 * On PostgreSQL 19 and later, core owns timing_clock_source: we define
 * neither setting.  There timing_source.node_wrappers (on by default)
 * times plan nodes through the extension's wrappers, which are cheaper
 * than core's own (docs/benchmark.md), with core's clock as core
 * chose it at the start of each query; timing_source.sample_every works
 * there too.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "timing_source.h"
#include "planid.h"
#include "track.h"

TS_MODULE_MAGIC;

bool		ts_core_owns_setting = TS_CORE_OWNS_SETTING;

static const struct config_enum_entry session_source_options[] = {
	{"auto", TS_CLOCK_AUTO, false},
	{"system", TS_CLOCK_SYSTEM, false},
	{"tsc", TS_CLOCK_TSC, false},
	/* boot value: follow timing_source.clock_source */
	{"default", TS_CLOCK_DEFAULT, true},
	/* what SHOW prints for auto, so that it can be fed back */
	{"auto (tsc)", TS_CLOCK_AUTO, true},
	{"auto (system)", TS_CLOCK_AUTO, true},
	{NULL, 0, false}
};

static const struct config_enum_entry server_source_options[] = {
	{"auto", TS_CLOCK_AUTO, false},
	{"system", TS_CLOCK_SYSTEM, false},
	{"tsc", TS_CLOCK_TSC, false},
	{NULL, 0, false}
};

static int	session_source = TS_CLOCK_DEFAULT;
static int	server_source = TS_CLOCK_AUTO;
int			ts_sample_every = 1;
int			ts_sample_budget = 0;
bool		ts_subtract_overhead = false;
bool		ts_sample_buffers = false;
bool		ts_node_wrappers = true;

/*
 * timing_source.parallel_clock: hidden, set only by this library.  The
 * leader writes its TSC decision here before a timed query starts, as
 * "kHz/usable/auto"; parallel workers get it with the leader's other
 * settings and adopt it, so they never detect or calibrate themselves and
 * always agree with the leader.
 */
static char *parallel_clock = NULL;
static bool exporting_decision = false;
static bool have_leader_decision = false;

/* when the clocksource was last re-read, and the reload that was seen */
static TimestampTz last_os_check = 0;
static TimestampTz seen_reload_time = 0;

#define TS_OS_RECHECK_INTERVAL	(10 * USECS_PER_SEC)

void		_PG_init(void);
static void ts_define_clock_settings(void);
static bool ts_check_sample_buffers(bool *newval, void **extra, GucSource source);
static bool ts_check_sample_budget(int *newval, void **extra, GucSource source);

void
ts_ensure_detected(void)
{
	if (likely(tsclock_info.detected))
		return;
	if (IsParallelWorker())
	{
		/* no leader decision arrived: time with the system clock */
		tsclock_set_unusable(&tsclock_info,
							 "This parallel worker did not receive its leader's TSC decision.");
		tsclock_info.detected = true;
		return;
	}
	tsclock_detect();
	last_os_check = GetCurrentTimestamp();
	elog(DEBUG1, "timing_source: clock detection in process %d: %s, %llu kHz from %s (calibration %.3f ms)",
		 MyProcPid, tsclock_info.usable ? "TSC usable" : "TSC unusable",
		 (unsigned long long) tsclock_info.khz, tsclock_info.freq_source,
		 tsclock_info.cal.elapsed_ns / 1e6);
}

/* Core's timing_clock_source on 19+, by its displayed value */
static TimingClockSource
core_setting(void)
{
	const char *val = GetConfigOption("timing_clock_source", true, false);

	if (val == NULL || strncmp(val, "auto", 4) == 0)
		return TS_CLOCK_AUTO;
	if (strcmp(val, "tsc") == 0)
		return TS_CLOCK_TSC;
	return TS_CLOCK_SYSTEM;
}

TimingClockSource
ts_session_setting(void)
{
	if (ts_core_owns_setting)
		return core_setting();
	if (session_source == TS_CLOCK_DEFAULT)
		return (TimingClockSource) server_source;
	return (TimingClockSource) session_source;
}

/* this process's view of the shared phase (shared.c) */
TsTscPhase	ts_tsc_phase = TS_TSC_TRUSTED;
uint32		ts_tsc_generation = 0;
uint32		ts_tsc_freq_generation = 0;

bool
ts_distrust_tsc(const char *reason, uint32 generation, uint32 freq_generation)
{
	bool		changed = ts_shared_distrust(reason, generation, freq_generation);

	/*
	 * A finding the shared state ignored as stale (this process has already
	 * taken up a newer state, say a nested query's) is no reason to stop
	 * the TSC here: nothing would ever bring it back, this process's
	 * generation being the shared one.
	 */
	if (tsclock_info.usable && (changed || generation == ts_tsc_generation))
	{
		/* keeps mult: queries bound before this point still convert with it */
		tsclock_set_unusable(&tsclock_info, reason);
	}
	return changed;
}

/*
 * Test seam, not for production: TIMING_SOURCE_TEST_RECOVER_MS replaces
 * TS_RECOVER_INTERVAL_MS, so that a test sees re-calibrations within
 * seconds.
 */
int64
ts_recover_interval_us(void)
{
	static int64 interval_us = 0;

	if (interval_us == 0)
	{
		const char *v = getenv("TIMING_SOURCE_TEST_RECOVER_MS");
		long		ms = v != NULL ? strtol(v, NULL, 10) : 0;

		if (ms <= 0 || ms > TS_RECOVER_INTERVAL_MS)
			ms = TS_RECOVER_INTERVAL_MS;
		interval_us = (int64) ms * 1000;
	}
	return interval_us;
}

/*
 * Take up the shared phase when it changed.  A stop applies at once (the
 * multiplier stays, so queries bound before convert as they started).  A
 * new frequency, on probation or trusted, changes the multiplier, so it
 * waits while a query of this process is still timed with the old one,
 * and the TSC stays off meanwhile.
 */
static void
ts_adopt_shared(void)
{
	TsTscShared snap;

	if (likely(ts_shared_generation() == ts_tsc_generation))
		return;
	ts_shared_snapshot(&snap);

	if (snap.phase == TS_TSC_DISTRUSTED)
	{
		/*
		 * Also when already off here: the reason is the new trip's, not
		 * the one this process had (a failed probation after it was held
		 * back, say).
		 */
		tsclock_set_unusable(&tsclock_info, snap.reason);
	}
	else if (ts_clock_tsc_queries_running())
	{
		tsclock_set_unusable(&tsclock_info,
							 "The TSC has a new frequency, taken up once this session's queries timed with the old one have ended.");
		return;
	}
	else if (snap.phase == TS_TSC_PROBATION)
	{
		char		reason[256];

		snprintf(reason, sizeof(reason),
				 "The TSC is on probation after the per-query watchdog stopped it: two calibrations agreed on %llu kHz, and it is used again once %d timed queries in a row pass the watchdog (%d so far).",
				 (unsigned long long) snap.khz, TS_RECOVER_PASSES, snap.passes);
		tsclock_set_unusable(&tsclock_info, reason);
		tsclock_info.khz = snap.khz;
		tsclock_info.mult = tsclock_mult_for_khz(snap.khz);
	}
	else if (snap.khz != 0)
		tsclock_restore(&tsclock_info, snap.khz);

	ts_tsc_phase = snap.phase;
	ts_tsc_generation = snap.generation;
	ts_tsc_freq_generation = snap.freq_generation;
}

void
ts_recover_tick(void)
{
	uint32		generation;
	TsCalibration cal;
	uint64		cand_khz = 0;
	bool		seam;

	if (IsParallelWorker())
		return;
	ts_ensure_detected();
	ts_adopt_shared();
	if (likely(ts_tsc_phase != TS_TSC_DISTRUSTED) ||
		!tsclock_can_calibrate(&tsclock_info) ||
		!ts_shared_claim_recalibration(&generation))
		return;

	tsclock_calibrate(&cal);
	seam = tsclock_apply_test_calibration(&tsclock_info, &cal);

	switch (ts_shared_recalibrated(generation, cal.converged, cal.khz,
								   cal.uncertainty_ppm, &cand_khz))
	{
		case TS_RECAL_AGREED:
			ereport(LOG_SERVER_ONLY,
					(errmsg("timing_source: two calibrations after the watchdog trip agree on a TSC frequency of %llu kHz",
							(unsigned long long) ((cand_khz + cal.khz + 1) / 2)),
					 errdetail("They measured %llu kHz and %llu kHz%s. The TSC is on probation: it is used again once %d timed queries in a row pass the watchdog at that frequency.",
							   (unsigned long long) cand_khz,
							   (unsigned long long) cal.khz,
							   seam ? " (as TIMING_SOURCE_TEST_CAL_KHZ_FILE said)" : "",
							   TS_RECOVER_PASSES)));
			break;
		case TS_RECAL_DISAGREED:
			elog(DEBUG1, "timing_source: re-calibration measured %llu kHz, %llu kHz before: the TSC stays off",
				 (unsigned long long) cal.khz, (unsigned long long) cand_khz);
			break;
		case TS_RECAL_NOT_CONVERGED:
			elog(DEBUG1, "timing_source: re-calibration did not converge: the TSC stays off");
			break;
		case TS_RECAL_FIRST:
			elog(DEBUG1, "timing_source: re-calibration measured %llu kHz, to be confirmed by the next",
				 (unsigned long long) cal.khz);
			break;
		case TS_RECAL_STALE:
			break;
	}
	ts_adopt_shared();
}

/*
 * Bring this process's view up to date before a decision: a watchdog
 * stop or recovery elsewhere in the server, and the operating system's
 * clocksource, re-read at every configuration reload and at least every
 * TS_OS_RECHECK_INTERVAL.  A parallel worker follows its leader instead.
 */
static void
ts_refresh(void)
{
	TimestampTz now;

	if (IsParallelWorker())
		return;
	ts_ensure_detected();

	/*
	 * Not in the postmaster (a check hook at a reload): it must stay clear
	 * of shared memory's locks, and has no query whose clock to decide.
	 */
	if (IsUnderPostmaster || !IsPostmasterEnvironment)
		ts_adopt_shared();

	now = GetCurrentTimestamp();
	if (PgReloadTime != seen_reload_time ||
		now - last_os_check >= TS_OS_RECHECK_INTERVAL ||
		now < last_os_check)
	{
		bool		was_ok = tsclock_info.auto_ok;

		seen_reload_time = PgReloadTime;
		last_os_check = now;
		if (tsclock_recheck_os(&tsclock_info) && was_ok != tsclock_info.auto_ok)
			ereport(LOG,
					(errmsg("timing_source: \"auto\" %s the TSC now that the operating system's clocksource is \"%s\"",
							tsclock_info.auto_ok ? "uses" : "no longer uses",
							tsclock_info.os_clocksource)));
	}
}

bool
ts_session_uses_tsc(void)
{
	/* on 19+ core decides, and says so without string matching */
	if (ts_core_owns_setting)
		return ts_core_uses_tsc();

	if (IsParallelWorker() && !have_leader_decision)
		return false;
	ts_refresh();

	switch (ts_session_setting())
	{
		case TS_CLOCK_SYSTEM:
			return false;
		case TS_CLOCK_TSC:
			return tsclock_info.usable;
		default:
			return tsclock_info.auto_ok;
	}
}

void
ts_export_decision(void)
{
	char		want[TSCLOCK_DECISION_LEN];

	if (IsParallelWorker() || IsInParallelMode())
		return;
	tsclock_decision_encode(&tsclock_info, want, sizeof(want));
	if (parallel_clock != NULL && strcmp(parallel_clock, want) == 0)
		return;

	exporting_decision = true;
	PG_TRY();
	{
		SetConfigOption("timing_source.parallel_clock", want,
						PGC_USERSET, PGC_S_SESSION);
	}
	PG_FINALLY();
	{
		exporting_decision = false;
	}
	PG_END_TRY();
}

static bool
check_parallel_clock(char **newval, void **extra, GucSource source)
{
	TsClockDecision d;

	if (*newval == NULL || (*newval)[0] == '\0')
		return true;
	if (!exporting_decision && !IsParallelWorker())
	{
		GUC_check_errcode(ERRCODE_CANT_CHANGE_RUNTIME_PARAM);
		GUC_check_errdetail("This parameter is set by timing_source itself.");
		return false;
	}
	if (!tsclock_decision_parse(*newval, &d))
	{
		GUC_check_errdetail("The value must have the form \"kHz/usable/auto\".");
		return false;
	}
	return true;
}

/* In a parallel worker, adopt the leader's decision */
static void
assign_parallel_clock(const char *newval, void *extra)
{
	TsClockDecision d;

	if (!IsParallelWorker())
		return;
	if (!tsclock_decision_parse(newval, &d))
	{
		have_leader_decision = false;
		return;
	}
	tsclock_adopt_decision(&tsclock_info, &d);
	have_leader_decision = true;
}

void
ts_report_tsc_unusable(const char *what)
{
	ts_ensure_detected();
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("clock source \"%s\" is not available on this system", what),
			 errdetail("%s", tsclock_info.reason),
			 errhint("Use the \"system\" clock source; timing_source_tsc() shows what was detected.")));
}

/* Check hook of both settings: 'tsc' only where the TSC is usable */
static bool
check_clock_source(int *newval, void **extra, GucSource source)
{
	if (*newval != TS_CLOCK_TSC)
		return true;

	/*
	 * A parallel worker restores the leader's settings, which the leader
	 * has already checked.  Re-checking here would make every worker of a
	 * process that did not preload the library calibrate first, and fail
	 * the whole query should that calibration not converge; the executor
	 * hook still checks usability before it binds any node.
	 */
	if (IsParallelWorker())
		return true;

	ts_refresh();
	if (tsclock_info.usable)
		return true;

	GUC_check_errcode(ERRCODE_FEATURE_NOT_SUPPORTED);
	GUC_check_errdetail("%s", tsclock_info.reason);
	GUC_check_errhint("Use \"auto\" or \"system\"; timing_source_tsc() shows what was detected.");
	return false;
}

/*
 * timing_source.sample_buffers makes some buffer figures estimates; only
 * where EXPLAIN can say so (its per-node hook) may it be turned on.
 */
static bool
ts_check_sample_buffers(bool *newval, void **extra, GucSource source)
{
#ifdef TS_HAVE_EXPLAIN_NODE_HOOK
	return true;
#else
	if (!*newval)
		return true;
	GUC_check_errcode(ERRCODE_FEATURE_NOT_SUPPORTED);
	GUC_check_errdetail("EXPLAIN in this version of PostgreSQL cannot mark estimated buffer figures as estimates.");
	GUC_check_errhint("Buffer and WAL usage stay exact under sampled timing; the setting needs PostgreSQL 18 or later.");
	return false;
#endif
}

/*
 * timing_source.sample_budget: 0, or at least TS_MIN_SAMPLE_BUDGET (which
 * is also above the warm-up's calls, so that the weight it gives the k-th
 * call, k / budget, never exceeds the warm-up's k / TS_WARMUP_CALLS)
 */
StaticAssertDecl(TS_MIN_SAMPLE_BUDGET >= TS_WARMUP_CALLS,
				 "a budget's weights must stay below the warm-up's");

static bool
ts_check_sample_budget(int *newval, void **extra, GucSource source)
{
	if (*newval == 0 || *newval >= TS_MIN_SAMPLE_BUDGET)
		return true;
	GUC_check_errcode(ERRCODE_INVALID_PARAMETER_VALUE);
	GUC_check_errdetail("timing_source.sample_budget must be 0 (off) or at least %d.",
						TS_MIN_SAMPLE_BUDGET);
	GUC_check_errhint("Fewer sampled calls before a node is thinned leave its interval too uncertain to hold.");
	return false;
}

static const char *
show_session_source(void)
{
	switch (ts_session_setting())
	{
		case TS_CLOCK_SYSTEM:
			return "system";
		case TS_CLOCK_TSC:
			return "tsc";
		default:
			return ts_session_uses_tsc() ? "auto (tsc)" : "auto (system)";
	}
}

void
_PG_init(void)
{
	/*
	 * Detect and calibrate now, when the library is loaded: in the
	 * postmaster when preloaded (every backend inherits the result), else
	 * in this backend at LOAD, session_preload_libraries or the first call
	 * of one of its functions (CREATE EXTENSION alone does not load it),
	 * never later inside SHOW or a timed query.
	 * A parallel worker takes its leader's decision instead.
	 */
	if (!IsParallelWorker())
		ts_ensure_detected();

	ts_shared_init();

	/* the per-node statistics key on core's query id */
	ts_planid_init();

	if (ts_core_owns_setting)
	{
		DefineCustomBoolVariable("timing_source.node_wrappers",
								 "Times plan nodes through timing_source's executor wrappers, with core's clock.",
								 "On, plan nodes that EXPLAIN ANALYZE or auto_explain instrument run through "
								 "the extension's wrappers, which read the clock core's timing_clock_source "
								 "had chosen when the query started and count rows, loops and buffers exactly "
								 "as core does, at less cost; timing_source.sample_every works only with them. "
								 "Off, core's own instrumentation runs unchanged.",
								 &ts_node_wrappers,
								 true,
								 PGC_USERSET,
								 0,
								 NULL, NULL, NULL);
	}
	else
		ts_define_clock_settings();

	DefineCustomIntVariable("timing_source.sample_every",
							"Times 1 in this many calls of each timed plan node; per-node times are then estimates.",
							"1 (the default) times every call.  With N > 1, each node times the first "
							"call of every loop, so startup times stay exact, its first 30 other calls, "
							"and then, at random, fewer of its other calls, down to 1 in N, scaled up "
							"to all calls: "
							"total times are estimates, rows and loops are exact.  "
							TS_SAMPLED_NODES,
							&ts_sample_every,
							1, 1, 1000000,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("timing_source.sample_budget",
							"With sampled timing, times the calls of a node past sample_every times this many more rarely.",
							"0 (the default) times 1 in timing_source.sample_every calls of a node however "
							"many it has.  With B > 0, once a node has had sample_every x B calls, its k-th "
							"call is timed with probability B / k: its timed calls then grow with the "
							"logarithm of its calls rather than in proportion, so sampling a long scan costs "
							"about what sampling a short one does, and its interval stops narrowing at a "
							"few percent.",
							&ts_sample_budget,
							0, 0, PG_INT32_MAX,
							PGC_USERSET,
							0,
							ts_check_sample_budget, NULL, NULL);

	DefineCustomBoolVariable("timing_source.subtract_overhead",
							 "Removes the estimated cost of timing itself from exactly timed plan nodes' times.",
							 "On, EXPLAIN ANALYZE and auto_explain print each exactly timed node's times "
							 "less an estimate of what its own clock reads and those of the timed nodes "
							 "beneath it cost, from a per-call cost each node measures among its own calls "
							 "(a few of which run without their clock reads), or for nodes of few calls the "
							 "one the plan's other nodes measured; never below zero.  Changes printed "
							 "figures only, never the clock; no effect on sampled timing or where core "
							 "times the nodes.",
							 &ts_subtract_overhead,
							 false,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("timing_source.sample_buffers",
							 "With sampled timing, scan nodes estimate their buffer and WAL usage from their timed calls.",
							 "Off (the default), buffer and WAL usage stay exact under sampled timing: "
							 "every call compares the usage counters.  On, with timing_source.sample_every > 1, "
							 "a scan node (of a query without subplans) looks at them only on the calls it "
							 "times and scales those up as it does their times; EXPLAIN marks such a node's "
							 "figures as estimates.  Only where EXPLAIN can mark them (PostgreSQL 18 and later).",
							 &ts_sample_buffers,
							 false,
							 PGC_USERSET,
							 0,
							 ts_check_sample_buffers, NULL, NULL);

	ts_track_init();
	ts_worker_sampling_init();

	MarkGUCPrefixReserved("timing_source");

	ts_instrument_init();
	/* after the wrappers': its ExecutorStart sets options before theirs */
	ts_track_hooks();
}

/*
 * 15-18: timing_clock_source, its server default timing_source.clock_source,
 * and the hidden decision a leader passes to its parallel workers.
 */
static void
ts_define_clock_settings(void)
{
	DefineCustomEnumVariable("timing_source.clock_source",
							 "Server-wide default of timing_clock_source.",
							 "Set this in postgresql.conf; sessions that do not SET "
							 "timing_clock_source follow it, also after a reload.",
							 &server_source,
							 TS_CLOCK_AUTO,
							 server_source_options,
							 PGC_SIGHUP,
							 0,
							 check_clock_source, NULL, NULL);

	DefineCustomEnumVariable("timing_clock_source",
							 "Clock used for per-node timing in EXPLAIN ANALYZE and auto_explain.",
							 "\"auto\" uses the TSC where it is reliable, \"system\" uses "
							 "clock_gettime(), \"tsc\" forces the TSC.  Unless set, follows "
							 "timing_source.clock_source.",
							 &session_source,
							 TS_CLOCK_DEFAULT,
							 session_source_options,
							 PGC_USERSET,
							 GUC_DISALLOW_IN_FILE | GUC_DISALLOW_IN_AUTO_FILE,
							 check_clock_source, NULL, show_session_source);

	DefineCustomStringVariable("timing_source.parallel_clock",
							   "The TSC decision a leader passes to its parallel workers.",
							   "Set by timing_source itself; not user-settable.",
							   &parallel_clock,
							   "",
							   PGC_USERSET,
							   GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE | GUC_NO_RESET_ALL |
							   GUC_DISALLOW_IN_FILE | GUC_DISALLOW_IN_AUTO_FILE,
							   check_parallel_clock, assign_parallel_clock, NULL);
}
