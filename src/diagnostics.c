/*-------------------------------------------------------------------------
 *
 * diagnostics.c
 *	  Clock diagnostics as rows: what pg_test_timing prints, from SQL.
 *
 *	  timing_source_tsc		 what detection found, and the counts
 *	  timing_source_histogram	 log2 histogram of back-to-back reads
 *	  timing_source_durations	 exact observed differences up to a cutoff
 *	  timing_source_test		 one summary row per available source
 *	  timing_source_calibrate	 TSC calibration runs
 *	  timing_source_report		 the whole pg_test_timing-style report
 *
 * (timing_source_compare, which runs user queries, is in compare.c.)
 *
 * The measurement loop reads a counter back to back, exactly like
 * pg_test_timing: one read, a subtraction, a conversion to nanoseconds, a
 * bucket increment, and (when an exact table is wanted) a direct-count
 * increment.  Interrupts are checked once every TS_CFI_INTERVAL loops,
 * which is a fraction of a millisecond at any plausible read cost, so
 * cancel and statement_timeout act promptly without a per-loop cost.
 *
 * Memory is bounded: the log2 histogram is 65 counters; the exact table
 * holds counts for differences below TS_NUM_DIRECT ns only, and
 * above that only the bucket and the largest difference are kept, as
 * pg_test_timing does.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/tuplestore.h"

#include "timing_source.h"

PG_FUNCTION_INFO_V1(timing_source_tsc);
PG_FUNCTION_INFO_V1(timing_source_histogram);
PG_FUNCTION_INFO_V1(timing_source_durations);
PG_FUNCTION_INFO_V1(timing_source_test);
PG_FUNCTION_INFO_V1(timing_source_calibrate);
PG_FUNCTION_INFO_V1(timing_source_report);

/* exact counts are kept for differences below this many nanoseconds */
#define TS_NUM_DIRECT		10000

/* bucket 0 holds 0 ns, bucket k (1..64) holds [2^(k-1), 2^k - 1] ns */
#define TS_NUM_BUCKETS		65

/*
 * Check for interrupts once every this many loops (a power of two): often
 * enough for a prompt cancel even when each read is a system call, rarely
 * enough to cost nothing measurable per loop.
 */
#define TS_CFI_INTERVAL		4096

/* width in characters of the tallest row's bar (histogram, durations) */
#define TS_BAR_WIDTH		40

/* argument limits */
#define TS_MAX_DURATION		3600.0
#define TS_MAX_CALIBRATE_RUNS	1000

/* Result of one measurement run */
typedef struct TimingRun
{
	TsClockRead source;
	uint64		loops;			/* differences recorded */
	uint64		backwards;		/* readings lower than the previous one */
	uint64		elapsed_ns;		/* wall time of the loop (system clock) */
	uint64		largest;		/* largest difference, ns */
	uint64		largest_count;
	uint64		buckets[TS_NUM_BUCKETS];
	uint64	   *direct;			/* TS_NUM_DIRECT counts, or NULL */
} TimingRun;


/* ---------------------------------------------------------------------
 * Result values
 * ---------------------------------------------------------------------
 */

/*
 * A fractional figure for result column attno (0-based) of desc.  From
 * version 1.2 the SQL definitions declare such columns numeric, and the
 * value is rounded to scale decimals, so that psql shows it the way
 * pg_test_timing prints it (the count columns keep the exact figures).
 * Versions 1.0 and 1.1 declare float8, which a database that has not run
 * ALTER EXTENSION ... UPDATE yet still has: it gets the unrounded float8.
 */
Datum
ts_fixed_datum(TupleDesc desc, int attno, double value, int scale)
{
	Oid			type = TupleDescAttr(desc, attno)->atttypid;

	if (type == NUMERICOID)
		return DirectFunctionCall2(numeric_round,
								   DirectFunctionCall1(float8_numeric,
													   Float8GetDatum(value)),
								   Int32GetDatum(scale));
	if (type != FLOAT8OID)
		elog(ERROR, "timing_source: result column %d has type %u, expected numeric or double precision",
			 attno + 1, type);
	return Float8GetDatum(value);
}


/* ---------------------------------------------------------------------
 * timing_source_tsc()
 * ---------------------------------------------------------------------
 */

/*
 * timing_source_tsc() -> one row, see the install script for the columns.
 *
 * Version 1.0 of the SQL definition has the first 12 columns only; the
 * row is built to whatever the caller's definition asks for, so a new
 * library serves a database whose extension has not been updated yet.
 */
#define TS_TSC_COLS 21

Datum
timing_source_tsc(PG_FUNCTION_ARGS)
{
	const TsClockInfo *info = &tsclock_info;
	TupleDesc	tupdesc;
	Datum		values[TS_TSC_COLS];
	bool		nulls[TS_TSC_COLS];
	bool		in_use;
	TsStats		stats;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (tupdesc->natts > TS_TSC_COLS)
		elog(ERROR, "timing_source_tsc() returns at most %d columns, not %d",
			 TS_TSC_COLS, tupdesc->natts);

	ts_ensure_detected();
	in_use = ts_session_uses_tsc();
	ts_stats_read(&stats);
	memset(nulls, 0, sizeof(nulls));

	values[0] = BoolGetDatum(info->usable);
	values[1] = BoolGetDatum(in_use);
	values[2] = Int64GetDatum((int64) info->khz);
	nulls[2] = (info->khz == 0);
	values[3] = CStringGetTextDatum(info->freq_source);
	values[4] = Int64GetDatum((int64) info->cal.khz);
	nulls[4] = !info->cal.converged;
	values[5] = ts_fixed_datum(tupdesc, 5, info->calibration_ppm, TS_PPM_SCALE);
	nulls[5] = !info->have_ppm;
	/*
	 * CPU features are unknown, not absent, where the TSC is compiled out.
	 * On arm64 the counter is invariant by architecture, and RDTSCP and
	 * TSC_ADJUST are x86 concepts: NULL.
	 */
	values[6] = BoolGetDatum(info->invariant);
	values[7] = BoolGetDatum(info->rdtscp);
	values[8] = BoolGetDatum(info->tsc_adjust);
	nulls[6] = !tsclock_has_counter(info);
	nulls[7] = nulls[8] = !info->x86_64;
	values[9] = CStringGetTextDatum(info->hv_name);
	nulls[9] = !info->hypervisor;
	values[10] = CStringGetTextDatum(info->os_clocksource);
	nulls[10] = (info->os_clocksource[0] == '\0');
	values[11] = CStringGetTextDatum(info->reason);
	nulls[11] = info->usable;
	/* 1.1 */
	values[12] = CStringGetTextDatum(info->auto_reason);
	nulls[12] = info->auto_ok;
	values[13] = Int64GetDatum((int64) stats.watchdog_checks);
	values[14] = Int64GetDatum((int64) stats.watchdog_failures);
	values[15] = Int64GetDatum((int64) stats.tsc_calls);
	/* 1.3: what a counter read and a system call cost at detection */
	if (tupdesc->natts > 16)
	{
		values[16] = ts_fixed_datum(tupdesc, 16, info->read_ns, TS_NS_SCALE);
		nulls[16] = !(info->read_ns > 0);
		values[17] = ts_fixed_datum(tupdesc, 17, info->syscall_ns, TS_NS_SCALE);
		nulls[17] = !(info->syscall_ns > 0);
	}
	/* 1.4: recovery after a watchdog trip */
	if (tupdesc->natts > 18)
	{
		values[18] = Int64GetDatum((int64) stats.recalibrations);
		values[19] = Int64GetDatum((int64) stats.recalibrations_agreed);
		values[20] = Int64GetDatum((int64) stats.recoveries);
	}

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}


/* ---------------------------------------------------------------------
 * Argument checking
 * ---------------------------------------------------------------------
 */

/*
 * Map a source name to a TsClockRead, complaining about unknown names and
 * about TSC sources where the TSC cannot be used.
 */
static TsClockRead
parse_source(text *arg)
{
	char	   *name = text_to_cstring(arg);
	TsClockRead src;

	if (!tsclock_read_lookup(name, &src))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid clock source \"%s\"", name),
				 errhint("Valid sources are \"system\", \"rdtscp\" and \"rdtsc\".")));

	if (src != TSCLOCK_READ_SYSTEM)
	{
		ts_ensure_detected();
		if (!tsclock_info.usable)
			ts_report_tsc_unusable(tsclock_read_name(src));
	}
	pfree(name);
	return src;
}

static double
check_duration(double duration)
{
	/* written so that NaN fails too */
	if (!(duration > 0 && duration <= TS_MAX_DURATION))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("duration %s is out of range",
						float8out_internal(duration)),
				 errdetail("The duration must be greater than 0 and at most %g seconds.",
						   TS_MAX_DURATION)));
	return duration;
}

static double
check_cutoff(double cutoff)
{
	if (!(cutoff > 0 && cutoff <= 100))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cutoff %s is out of range",
						float8out_internal(cutoff)),
				 errdetail("The cutoff is a percentage greater than 0 and at most 100.")));
	return cutoff;
}

int
ts_check_runs(int runs, int max)
{
	if (runs < 1 || runs > max)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("runs %d is out of range", runs),
				 errdetail("The number of runs must be between 1 and %d.", max)));
	return runs;
}

double
ts_in_rolled_back_subxact(TsSubxactFn fn, void *arg, bool in_caller_context)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	double		result = 0;

	BeginInternalSubTransaction(NULL);
	if (in_caller_context)
		MemoryContextSwitchTo(oldcontext);

	PG_TRY();
	{
		result = fn(arg);

		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcontext);
		edata = CopyErrorData();
		FlushErrorState();

		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;

		ReThrowError(edata);
	}
	PG_END_TRY();

	return result;
}


/* ---------------------------------------------------------------------
 * The measurement loop
 * ---------------------------------------------------------------------
 */

/*
 * Read the counter back to back for duration_ns and record the
 * differences.  Always inlined with constant source and want_direct, so
 * that each caller below gets its own specialized loop.
 *
 * A reading lower than the previous one counts in run->backwards and is
 * recorded as a difference of 0 ns, so that the counts still add up to
 * the number of loops.
 */
static pg_attribute_always_inline void
timing_loop(TimingRun *run, TsClockRead source, uint64 duration_ns,
			bool want_direct)
{
	uint64	   *buckets = run->buckets;
	uint64	   *direct = run->direct;
	uint64		mult = tsclock_info.mult;
	uint64		loops = 0,
				backwards = 0,
				largest = 0,
				largest_count = 0;
	uint64		start_ns,
				prev,
				cur,
				end;

	start_ns = tsclock_system_ns();
	cur = tsclock_read_kind(source);
	if (source == TSCLOCK_READ_SYSTEM)
		end = cur + duration_ns;
	else
		end = cur + (uint64) ((double) duration_ns *
							  (double) tsclock_info.khz / 1e6);

	do
	{
		int64		diff;
		uint64		ns;

		prev = cur;
		cur = tsclock_read_kind(source);
		diff = (int64) (cur - prev);

		if (unlikely(diff < 0))
		{
			backwards++;
			ns = 0;
		}
		else if (source == TSCLOCK_READ_SYSTEM)
			ns = (uint64) diff;
		else
			ns = tsclock_ticks_to_ns_mult((uint64) diff, mult);

		buckets[ns == 0 ? 0 : pg_leftmost_one_pos64(ns) + 1]++;

		if (want_direct && ns < TS_NUM_DIRECT)
			direct[ns]++;

		if (ns > largest)
		{
			largest = ns;
			largest_count = 1;
		}
		else if (ns == largest)
			largest_count++;

		loops++;
		if (unlikely((loops & (TS_CFI_INTERVAL - 1)) == 0))
			CHECK_FOR_INTERRUPTS();
	} while ((int64) (end - cur) > 0);

	run->elapsed_ns = tsclock_system_ns() - start_ns;
	run->loops = loops;
	run->backwards = backwards;
	run->largest = largest;
	run->largest_count = largest_count;
}

/* One function per specialization, so each loop is compiled on its own */
static pg_noinline void
loop_system(TimingRun *run, uint64 ns, bool want_direct)
{
	if (want_direct)
		timing_loop(run, TSCLOCK_READ_SYSTEM, ns, true);
	else
		timing_loop(run, TSCLOCK_READ_SYSTEM, ns, false);
}

#ifdef TSCLOCK_HAVE_TSC
static pg_noinline void
loop_rdtscp(TimingRun *run, uint64 ns, bool want_direct)
{
	if (want_direct)
		timing_loop(run, TSCLOCK_READ_ORDERED, ns, true);
	else
		timing_loop(run, TSCLOCK_READ_ORDERED, ns, false);
}

static pg_noinline void
loop_rdtsc(TimingRun *run, uint64 ns, bool want_direct)
{
	if (want_direct)
		timing_loop(run, TSCLOCK_READ_FAST, ns, true);
	else
		timing_loop(run, TSCLOCK_READ_FAST, ns, false);
}
#endif

/*
 * Measure source for duration seconds.  With want_direct, the exact table
 * is allocated in the current memory context.
 */
static void
measure(TimingRun *run, TsClockRead source, double duration, bool want_direct)
{
	uint64		duration_ns = (uint64) llround(duration * 1e9);

	memset(run, 0, sizeof(*run));
	run->source = source;
	if (want_direct)
		run->direct = palloc0(sizeof(uint64) * TS_NUM_DIRECT);

	switch (source)
	{
		case TSCLOCK_READ_SYSTEM:
			loop_system(run, duration_ns, want_direct);
			break;
#ifdef TSCLOCK_HAVE_TSC
		case TSCLOCK_READ_ORDERED:
			loop_rdtscp(run, duration_ns, want_direct);
			break;
		case TSCLOCK_READ_FAST:
			loop_rdtsc(run, duration_ns, want_direct);
			break;
#else
		default:
			/* parse_source() has already refused these */
			elog(ERROR, "clock source \"%s\" is not compiled in",
				 tsclock_read_name(source));
#endif
	}
}

static void
warn_backwards(const TimingRun *run)
{
	if (run->backwards > 0)
		ereport(WARNING,
				(errmsg("clock source \"%s\" went backwards %llu times in %llu readings",
						tsclock_read_name(run->source),
						(unsigned long long) run->backwards,
						(unsigned long long) run->loops),
				 errdetail("Those differences are counted as 0 ns.")));
}

static inline int64
bucket_upper_bound(int k)
{
	/* 2^k - 1, clamped for the (unreachable) top buckets */
	if (k >= 63)
		return PG_INT64_MAX;
	return (int64) ((UINT64CONST(1) << k) - 1);
}

static int
highest_bucket(const TimingRun *run)
{
	int			k = TS_NUM_BUCKETS - 1;

	while (k > 0 && run->buckets[k] == 0)
		k--;
	return k;
}

static inline double
percent(uint64 part, uint64 whole)
{
	return (double) part * 100.0 / (double) whole;
}

/*
 * Smallest difference d such that at least fraction p of all differences
 * are <= d.  Exact below TS_NUM_DIRECT ns and for the largest difference;
 * in between, the upper bound of the log2 bucket (at most the largest).
 */
static int64
run_percentile(const TimingRun *run, double p)
{
	uint64		rank = (uint64) ceil(p * (double) run->loops);
	uint64		cum = 0;

	if (rank < 1)
		rank = 1;
	for (int i = 0; i < TS_NUM_DIRECT; i++)
	{
		cum += run->direct[i];
		if (cum >= rank)
			return i;
	}
	if (rank > run->loops - run->largest_count)
		return (int64) run->largest;

	/* count the differences >= TS_NUM_DIRECT bucket by bucket */
	for (int k = pg_leftmost_one_pos64(TS_NUM_DIRECT) + 1; k < TS_NUM_BUCKETS; k++)
	{
		uint64		n = run->buckets[k];

		if (k == pg_leftmost_one_pos64(TS_NUM_DIRECT) + 1)
		{
			/* this bucket straddles TS_NUM_DIRECT: drop its exact part */
			for (int i = 1 << (k - 1); i < TS_NUM_DIRECT; i++)
				n -= run->direct[i];
		}
		cum += n;
		if (cum >= rank)
			return Min(bucket_upper_bound(k), (int64) run->largest);
	}
	return (int64) run->largest;
}


/* ---------------------------------------------------------------------
 * Row emitters shared by the SQL functions and the report
 * ---------------------------------------------------------------------
 */

typedef void (*RowEmitter) (void *arg, int64 ns, uint64 count,
							double pct, double running_pct);

static void
emit_histogram(const TimingRun *run, RowEmitter emit, void *arg)
{
	int			top = highest_bucket(run);
	uint64		cum = 0;

	for (int k = 0; k <= top; k++)
	{
		cum += run->buckets[k];
		emit(arg, bucket_upper_bound(k), run->buckets[k],
			 percent(run->buckets[k], run->loops), percent(cum, run->loops));
	}
}

/*
 * Exact differences in ascending order until the running percentage
 * reaches cutoff, then the largest difference.  Returns true when rows
 * were skipped before the largest one.
 */
static bool
emit_durations(const TimingRun *run, double cutoff, RowEmitter emit,
			   void *arg, void (*gap) (void *arg))
{
	uint64		cum = 0;
	bool		stopped = false;
	bool		skipped = false;
	bool		largest_done = false;

	for (int i = 0; i < TS_NUM_DIRECT; i++)
	{
		double		running;

		if (run->direct[i] == 0)
			continue;
		cum += run->direct[i];
		running = percent(cum, run->loops);

		if (!stopped || (uint64) i == run->largest)
		{
			if (stopped && skipped && gap)
				gap(arg);
			emit(arg, i, run->direct[i], percent(run->direct[i], run->loops),
				 running);
			if ((uint64) i == run->largest)
				largest_done = true;
		}
		else
			skipped = true;

		if (running >= cutoff)
			stopped = true;
	}

	if (!largest_done)
	{
		/* the largest difference is beyond the exact table */
		if (gap)
			gap(arg);
		emit(arg, (int64) run->largest, run->largest_count,
			 percent(run->largest_count, run->loops), 100.0);
	}
	return skipped;
}

/*
 * Row emitter for timing_source_histogram() and timing_source_durations():
 * (ns bigint, pct, running_pct, count bigint[, bar text]).  The bar column
 * (1.2 on) draws count relative to the tallest row of the measurement:
 * TS_BAR_WIDTH '#' for the tallest, rounded down to whole characters, and
 * a single '.' for a row too small for one '#', so that every non-empty
 * row stays visible.
 */
typedef struct TupleEmitter
{
	ReturnSetInfo *rsinfo;
	uint64		tallest;		/* largest count of any row, for the bar */
} TupleEmitter;

/* the largest of n counts, and at least at_least */
static uint64
largest_count(const uint64 *counts, int n, uint64 at_least)
{
	for (int i = 0; i < n; i++)
		at_least = Max(at_least, counts[i]);
	return at_least;
}

static void
emit_tuple(void *arg, int64 ns, uint64 count, double pct, double running_pct)
{
	TupleEmitter *te = (TupleEmitter *) arg;
	TupleDesc	desc = te->rsinfo->setDesc;
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};

	values[0] = Int64GetDatum(ns);
	values[1] = ts_fixed_datum(desc, 1, pct, TS_PCT_SCALE);
	values[2] = ts_fixed_datum(desc, 2, running_pct, TS_PCT_SCALE);
	values[3] = Int64GetDatum((int64) count);
	if (desc->natts > 4)
	{
		char		bar[TS_BAR_WIDTH + 1];
		int			width = 0;

		if (count > 0 && te->tallest > 0)
		{
			width = (int) ((double) count * TS_BAR_WIDTH / (double) te->tallest);
			if (width == 0)
				bar[width++] = '.';
			else
				memset(bar, '#', width);
		}
		bar[width] = '\0';
		values[4] = CStringGetTextDatum(bar);
	}
	tuplestore_putvalues(te->rsinfo->setResult, desc, values, nulls);
}


/* ---------------------------------------------------------------------
 * timing_source_histogram(source text, duration float8)
 * ---------------------------------------------------------------------
 */
Datum
timing_source_histogram(PG_FUNCTION_ARGS)
{
	TsClockRead source = parse_source(PG_GETARG_TEXT_PP(0));
	double		duration = check_duration(PG_GETARG_FLOAT8(1));
	TimingRun	run;
	TupleEmitter te;

	InitMaterializedSRF(fcinfo, 0);

	/* bucket counters only: no exact table */
	measure(&run, source, duration, false);
	warn_backwards(&run);
	te.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	te.tallest = largest_count(run.buckets, TS_NUM_BUCKETS, 0);
	emit_histogram(&run, emit_tuple, &te);

	return (Datum) 0;
}


/* ---------------------------------------------------------------------
 * timing_source_durations(source text, duration float8, cutoff float8)
 * ---------------------------------------------------------------------
 */
Datum
timing_source_durations(PG_FUNCTION_ARGS)
{
	TsClockRead source = parse_source(PG_GETARG_TEXT_PP(0));
	double		duration = check_duration(PG_GETARG_FLOAT8(1));
	double		cutoff = check_cutoff(PG_GETARG_FLOAT8(2));
	TimingRun	run;
	TupleEmitter te;

	InitMaterializedSRF(fcinfo, 0);

	measure(&run, source, duration, true);
	warn_backwards(&run);
	te.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	te.tallest = largest_count(run.direct, TS_NUM_DIRECT, run.largest_count);
	emit_durations(&run, cutoff, emit_tuple, &te, NULL);
	pfree(run.direct);

	return (Datum) 0;
}


/* ---------------------------------------------------------------------
 * timing_source_test(duration float8)
 * ---------------------------------------------------------------------
 */

/* sources this build and machine can measure; returns how many */
static int
available_sources(TsClockRead *out)
{
	int			n = 0;

	out[n++] = TSCLOCK_READ_SYSTEM;
	ts_ensure_detected();
	if (tsclock_info.usable)
	{
		out[n++] = TSCLOCK_READ_ORDERED;
		out[n++] = TSCLOCK_READ_FAST;
	}
	return n;
}

Datum
timing_source_test(PG_FUNCTION_ARGS)
{
	double		duration = check_duration(PG_GETARG_FLOAT8(0));
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TsClockRead sources[TSCLOCK_NUM_READS];
	int			nsources = available_sources(sources);
	TimingRun	run;

	InitMaterializedSRF(fcinfo, 0);

	for (int i = 0; i < nsources; i++)
	{
		Datum		values[7];
		bool		nulls[7] = {false, false, false, false, false, false, false};

		measure(&run, sources[i], duration, true);

		values[0] = CStringGetTextDatum(tsclock_read_name(sources[i]));
		values[1] = Int64GetDatum((int64) run.loops);
		values[2] = ts_fixed_datum(rsinfo->setDesc, 2,
								   (double) run.elapsed_ns / (double) run.loops,
								   TS_NS_SCALE);
		values[3] = Int64GetDatum(run_percentile(&run, 0.50));
		values[4] = Int64GetDatum(run_percentile(&run, 0.99));
		values[5] = Int64GetDatum((int64) run.largest);
		values[6] = Int64GetDatum((int64) run.backwards);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		pfree(run.direct);
	}

	return (Datum) 0;
}


/* ---------------------------------------------------------------------
 * timing_source_calibrate(runs int)
 * ---------------------------------------------------------------------
 */

/*
 * Calibration needs RDTSCP, nothing more: it is also the tool to look at a
 * TSC that is unusable for other reasons (a CPUID frequency that
 * calibration contradicts, for one).
 */
static void
check_calibration_possible(void)
{
	ts_ensure_detected();
	if (!tsclock_can_calibrate(&tsclock_info))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("TSC calibration is not available on this system"),
				 errdetail("%s", tsclock_info.reason)));
}

Datum
timing_source_calibrate(PG_FUNCTION_ARGS)
{
	int			runs = ts_check_runs(PG_GETARG_INT32(0), TS_MAX_CALIBRATE_RUNS);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	check_calibration_possible();
	InitMaterializedSRF(fcinfo, 0);

	for (int i = 1; i <= runs; i++)
	{
		TsCalibration cal;
		/* 1.0's definition has the first six columns only */
		Datum		values[7];
		bool		nulls[7] = {false, false, false, false, false, false, false};

		/* each run is bounded (TSCLOCK_CAL_MAX_NS), check between runs */
		CHECK_FOR_INTERRUPTS();
		tsclock_calibrate(&cal);

		values[0] = Int32GetDatum(i);
		if (cal.khz > 0)
			values[1] = Int64GetDatum((int64) cal.khz);
		else
			nulls[1] = true;
		values[2] = Int32GetDatum((int32) cal.iterations);
		values[3] = ts_fixed_datum(rsinfo->setDesc, 3,
								   (double) cal.elapsed_ns / 1000.0, TS_US_SCALE);
		values[4] = BoolGetDatum(cal.converged);
		if (cal.khz > 0 && tsclock_info.khz > 0)
			values[5] = ts_fixed_datum(rsinfo->setDesc, 5,
									   (cal.hz / 1000.0 - (double) tsclock_info.khz) /
									   (double) tsclock_info.khz * 1e6,
									   TS_PPM_SCALE);
		else
			nulls[5] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	return (Datum) 0;
}


/* ---------------------------------------------------------------------
 * timing_source_report(duration float8)
 * ---------------------------------------------------------------------
 */

typedef struct ReportState
{
	ReturnSetInfo *rsinfo;
} ReportState;

static void
report_line(ReportState *rs, const char *fmt,...) pg_attribute_printf(2, 3);

static void
report_line(ReportState *rs, const char *fmt,...)
{
	StringInfoData buf;
	Datum		value;
	bool		isnull = false;

	initStringInfo(&buf);
	for (;;)
	{
		va_list		args;
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&buf, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&buf, needed);
	}
	value = CStringGetTextDatum(buf.data);
	tuplestore_putvalues(rs->rsinfo->setResult, rs->rsinfo->setDesc,
						 &value, &isnull);
	pfree(buf.data);
}

static void
report_row(void *arg, int64 ns, uint64 count, double pct, double running_pct)
{
	report_line((ReportState *) arg, "%8lld   %10.4f %10.4f %10llu",
				(long long) ns, pct, running_pct, (unsigned long long) count);
}

static void
report_gap(void *arg)
{
	report_line((ReportState *) arg, "...");
}

static void
report_section(ReportState *rs, TsClockRead source, double duration,
			   const char *title)
{
	TimingRun	run;

	measure(&run, source, duration, true);

	report_line(rs, "%s: %s", title, tsclock_read_insn(source));
	report_line(rs, "Average loop time including overhead: %0.2f ns",
				(double) run.elapsed_ns / (double) run.loops);
	if (run.backwards > 0)
		report_line(rs, "Detected clock going backwards in time: %llu of %llu readings (counted as 0 ns)",
					(unsigned long long) run.backwards,
					(unsigned long long) run.loops);
	report_line(rs, "Histogram of timing durations:");
	report_line(rs, "%8s   %10s %10s %10s", "<= ns", "% of total", "running %", "count");
	emit_histogram(&run, report_row, rs);
	report_line(rs, "%s", "");
	report_line(rs, "Observed timing durations up to %.4f%%:", 99.99);
	report_line(rs, "%8s   %10s %10s %10s", "ns", "% of total", "running %", "count");
	emit_durations(&run, 99.99, report_row, rs, report_gap);
	report_line(rs, "%s", "");
	pfree(run.direct);
}

Datum
timing_source_report(PG_FUNCTION_ARGS)
{
	double		duration = check_duration(PG_GETARG_FLOAT8(0));
	ReportState rs;
	const char *setting;

	ts_ensure_detected();
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	rs.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	report_line(&rs, "Testing timing overhead for %g %s per clock source.",
				duration, duration == 1.0 ? "second" : "seconds");
	report_line(&rs, "%s", "");
	report_section(&rs, TSCLOCK_READ_SYSTEM, duration, "System clock source");

	if (tsclock_info.usable)
	{
		TsCalibration cal;

		report_section(&rs, TSCLOCK_READ_ORDERED, duration, "Clock source");
		report_section(&rs, TSCLOCK_READ_FAST, duration, "Fast clock source");

		CHECK_FOR_INTERRUPTS();
		tsclock_calibrate(&cal);

		report_line(&rs, "TSC frequency source: %s", tsclock_info.freq_source);
		report_line(&rs, "TSC frequency in use: %llu kHz",
					(unsigned long long) tsclock_info.khz);
		if (cal.converged)
		{
			double		diff_pct = (cal.hz / 1000.0 - (double) tsclock_info.khz) /
				(double) tsclock_info.khz * 100.0;

			report_line(&rs, "TSC frequency from calibration: %llu kHz (%+.0f ppm vs in use)",
						(unsigned long long) cal.khz, diff_pct * 1e4);
			if (fabs(diff_pct) > TSCLOCK_CROSSCHECK_PCT)
				report_line(&rs, "WARNING: the calibrated TSC frequency differs from the frequency in use by %.1f%%; consider timing_clock_source = 'system'.",
							fabs(diff_pct));
		}
		else
			report_line(&rs, "TSC calibration did not converge (%u brackets in %.1f ms)",
						cal.iterations, (double) cal.elapsed_ns / 1e6);
		if (tsclock_info.read_ns > 0 && tsclock_info.syscall_ns > 0)
			report_line(&rs, "TSC read cost at detection: %.1f ns per ordered read, %.1f ns per system call (%s)",
						tsclock_info.read_ns, tsclock_info.syscall_ns,
						tsclock_info.read_trapped ? "trapped: the read is emulated" : "not trapped");

		if (tsclock_info.auto_ok)
			report_line(&rs, "TSC clock source will be used by default, unless timing_clock_source is set to 'system'.");
		else
		{
			report_line(&rs, "TSC clock source will not be used by default, unless timing_clock_source is set to 'tsc'.");
			report_line(&rs, "Reason: %s", tsclock_info.auto_reason);
		}
	}
	else
	{
		report_line(&rs, "TSC clock source is not usable: %s", tsclock_info.reason);
		if (tsclock_has_counter(&tsclock_info))
		{
			report_line(&rs, "TSC frequency source: %s", tsclock_info.freq_source);
			if (tsclock_info.khz > 0)
				report_line(&rs, "TSC frequency (not in use): %llu kHz",
							(unsigned long long) tsclock_info.khz);
			if (tsclock_info.cal.converged)
				report_line(&rs, "TSC frequency from calibration: %llu kHz",
							(unsigned long long) tsclock_info.cal.khz);
		}
		report_line(&rs, "TSC clock source will not be used by default, and timing_clock_source = 'tsc' is refused.");
	}

	/* as SHOW prints it: "auto (tsc)", "system", ... */
	setting = GetConfigOptionByName("timing_clock_source", NULL, true);
	if (setting)
		report_line(&rs, "timing_clock_source in this session: %s", setting);

	/*
	 * 15-18: the watchdog and the recovery after its trips, once there was
	 * a trip (19's clock and its trust are core's).
	 */
	if (!ts_core_owns_setting)
	{
		TsStats		stats;

		ts_stats_read(&stats);
		if (stats.watchdog_failures > 0)
			report_line(&rs, "Watchdog: %llu checks, %llu failures; after the trips: %llu re-calibrations, %llu agreeing, the TSC used again %llu time(s)",
						(unsigned long long) stats.watchdog_checks,
						(unsigned long long) stats.watchdog_failures,
						(unsigned long long) stats.recalibrations,
						(unsigned long long) stats.recalibrations_agreed,
						(unsigned long long) stats.recoveries);
	}

	/*
	 * On 19+ core times the plan nodes with its own TSC frequency, which
	 * may differ from the one detected here: say which one EXPLAIN uses.
	 */
	if (ts_core_owns_setting)
	{
		int64		core_khz = ts_core_tsc_khz();
		const char *core_source = ts_core_tsc_source();

		if (core_khz > 0)
			report_line(&rs, "PostgreSQL's own TSC frequency (EXPLAIN uses it): %lld kHz, from %s",
						(long long) core_khz,
						core_source && core_source[0] ? core_source : "(unknown)");
		else
			report_line(&rs, "PostgreSQL's own TSC: not usable, EXPLAIN times with the system clock");
	}

	return (Datum) 0;
}
