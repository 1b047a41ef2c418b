/*-------------------------------------------------------------------------
 *
 * timing_source.c
 *	  Module entry point, the timing_clock_source settings, and
 *	  timing_source_tsc().
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
 * neither setting nor the executor hook, and only answer questions about
 * what core uses.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/parallel.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "timing_source.h"

PG_MODULE_MAGIC;

bool		ts_core_owns_setting = TS_CORE_OWNS_SETTING;

static const struct config_enum_entry session_source_options[] = {
	{"auto", TS_CLOCK_AUTO, false},
	{"system", TS_CLOCK_SYSTEM, false},
	{"tsc", TS_CLOCK_TSC, false},
	/* boot value: follow timing_source.clock_source */
	{"default", TS_CLOCK_DEFAULT, true},
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

void		_PG_init(void);

void
ts_ensure_detected(void)
{
	if (unlikely(!tsclock_info.detected))
		tsclock_detect();
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

bool
ts_session_uses_tsc(void)
{
	/* on 19+ core decides, and says so without string matching */
	if (ts_core_owns_setting)
		return ts_core_uses_tsc();

	switch (ts_session_setting())
	{
		case TS_CLOCK_SYSTEM:
			return false;
		case TS_CLOCK_TSC:
			ts_ensure_detected();
			return tsclock_info.usable;
		default:
			ts_ensure_detected();
			return tsclock_info.auto_ok;
	}
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

	ts_ensure_detected();
	if (tsclock_info.usable)
		return true;

	GUC_check_errcode(ERRCODE_FEATURE_NOT_SUPPORTED);
	GUC_check_errdetail("%s", tsclock_info.reason);
	GUC_check_errhint("Use \"auto\" or \"system\"; timing_source_tsc() shows what was detected.");
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
	/* Detect once in the postmaster so that no backend pays for it */
	if (process_shared_preload_libraries_in_progress)
		tsclock_detect();

	if (ts_core_owns_setting)
		return;

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

	MarkGUCPrefixReserved("timing_source");

	ts_instrument_init();
}

/*
 * timing_source_tsc() -> one row, see the install script for the columns.
 */
PG_FUNCTION_INFO_V1(timing_source_tsc);

Datum
timing_source_tsc(PG_FUNCTION_ARGS)
{
	const TsClockInfo *info = &tsclock_info;
	TupleDesc	tupdesc;
	Datum		values[12];
	bool		nulls[12];

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	ts_ensure_detected();
	memset(nulls, 0, sizeof(nulls));

	values[0] = BoolGetDatum(info->usable);
	values[1] = BoolGetDatum(ts_session_uses_tsc());
	values[2] = Int64GetDatum((int64) info->khz);
	nulls[2] = (info->khz == 0);
	values[3] = CStringGetTextDatum(info->freq_source);
	values[4] = Int64GetDatum((int64) info->cal.khz);
	nulls[4] = !info->cal.converged;
	values[5] = Float8GetDatum(info->calibration_ppm);
	nulls[5] = !info->have_ppm;
	/* CPU features are unknown, not absent, where the TSC is compiled out */
	values[6] = BoolGetDatum(info->invariant);
	values[7] = BoolGetDatum(info->rdtscp);
	values[8] = BoolGetDatum(info->tsc_adjust);
	nulls[6] = nulls[7] = nulls[8] = !info->x86_64;
	values[9] = CStringGetTextDatum(info->hv_name);
	nulls[9] = !info->hypervisor;
	values[10] = CStringGetTextDatum(info->os_clocksource);
	nulls[10] = (info->os_clocksource[0] == '\0');
	values[11] = CStringGetTextDatum(info->reason);
	nulls[11] = info->usable;

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
