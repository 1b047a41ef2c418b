/*-------------------------------------------------------------------------
 *
 * watchdog.c
 *	  Per-query watchdog of the extension's own TSC (15-18; on 19 the
 *	  clock is core's, and so is the decision to trust it).
 *
 * A query timed with the TSC also measures its whole execution,
 * ExecutorStart to ExecutorEnd, on both clocks.  Each end reads the system
 * clock between two ordered counter reads, several times, and keeps the
 * tightest bracket: a preemption between the reads only widens a bracket,
 * and the widths enter the comparison as its uncertainty, so it cannot
 * fake a mismatch.  Intervals of at least TS_WATCHDOG_MIN_NS whose clocks
 * disagree by more than TS_WATCHDOG_MAX_PCT beyond that uncertainty stop
 * the TSC (ts_distrust_tsc), in every session when the library is
 * preloaded.
 *
 * After a trip the TSC is re-calibrated later (timing_source.c), and once
 * two calibrations agree it is on probation: timed queries, whose nodes
 * keep the system clock, are watched at the new frequency all the same,
 * and TS_RECOVER_PASSES passes in a row trust it again (shared.c).  Every
 * watch remembers the generation of the state it started in, the counter
 * of its frequency, and that frequency's multiplier: a query that started
 * before a change cannot pass the state after it, nor fail a frequency
 * other than its own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "instrument.h"

#ifdef TS_HAVE_WATCHDOG

#include <math.h>

#include "access/parallel.h"
#include "nodes/execnodes.h"

#define TS_WATCHDOG_MIN_NS		(10 * 1000 * 1000)	/* 10 ms */
#define TS_WATCHDOG_MAX_PCT		1.0
#define TS_WATCHDOG_BRACKETS	4

/* both clocks at one instant */
typedef struct TsBracket
{
	uint64		tsc;			/* bracket midpoint */
	uint64		width;			/* bracket width, ticks */
	uint64		ns;				/* system clock inside the bracket */
} TsBracket;

typedef struct TsWatch
{
	TsQueryEntry entry;			/* must be first */
	bool		probation;		/* nodes on the system clock, TSC on trial */
	uint32		generation;		/* of the shared state at the start */
	uint32		freq_generation;	/* of its frequency */
	uint64		khz;			/* the frequency and multiplier at the start: */
	uint64		mult;			/* a new one taken up meanwhile is not this
								 * watch's */
	TsBracket	start;
} TsWatch;

static TsQueryList ts_watches;

/*
 * Ordered counter reads around a system clock read, the tightest kept.  An
 * unpreempted bracket is far below 1 us, so one is normally enough; up to
 * TS_WATCHDOG_BRACKETS are tried when a preemption widened the first.
 */
static void
ts_watch_read(TsBracket *b)
{
	int			i;
	uint64		good = Max(tsclock_info.khz / 1000, 1);	/* 1 us of ticks */

	b->width = PG_UINT64_MAX;
	for (i = 0; i < TS_WATCHDOG_BRACKETS && b->width > good; i++)
	{
		uint64		t0,
					t1,
					ns;

		t0 = tsclock_read_ordered();
		ns = tsclock_system_ns();
		t1 = tsclock_read_ordered();
		if (t1 >= t0 && t1 - t0 < b->width)
		{
			b->width = t1 - t0;
			b->tsc = t0 + (t1 - t0) / 2;
			b->ns = ns;
		}
	}
}

/*
 * Start watching a query: the state and the frequency it starts under, so
 * that its verdict is judged against them, and both clocks now.
 */
static void
ts_watch_begin(QueryDesc *queryDesc, bool probation)
{
	TsWatch    *w = ts_query_add(&ts_watches, queryDesc, sizeof(TsWatch));

	w->probation = probation;
	w->generation = ts_tsc_generation;
	w->freq_generation = ts_tsc_freq_generation;
	w->khz = tsclock_info.khz;
	w->mult = tsclock_info.mult;
	ts_watch_read(&w->start);
}

/*
 * A parallel worker's part of the query is covered by its leader's
 * interval, so only the leader watches.
 */
void
ts_clock_query_start(QueryDesc *queryDesc, List *timed)
{
	if (IsParallelWorker())
		return;
	ts_watch_begin(queryDesc, false);
}

/*
 * A timed query whose nodes are not on the TSC: watched when the TSC is on
 * probation, at the frequency on trial.
 */
void
ts_clock_probation_start(QueryDesc *queryDesc)
{
	if (likely(ts_tsc_phase != TS_TSC_PROBATION) || IsParallelWorker())
		return;
	ts_watch_begin(queryDesc, true);
}

bool
ts_clock_tsc_queries_running(void)
{
	TsQueryEntry *e;

	for (e = ts_watches.head; e != NULL; e = e->next)
	{
		if (!((TsWatch *) e)->probation)
			return true;
	}
	return false;
}

/*
 * A check on probation: a pass counts towards trusting the TSC again, a
 * failure ends the probation.  The nodes ran on the system clock, so the
 * client is not warned; the server log has each event once.
 */
static void
ts_probation_verdict(TsWatch *w, bool failed, double diff_pct, int64 sys_ns)
{
	uint64		khz = w->khz;

	if (failed)
	{
		char		reason[256];

		snprintf(reason, sizeof(reason),
				 "On probation after a watchdog trip, the per-query watchdog found the TSC, at %llu kHz, %+.1f%% off the system clock over a query of %.1f ms.",
				 (unsigned long long) khz, diff_pct, sys_ns / 1e6);
		if (ts_distrust_tsc(reason, w->generation, w->freq_generation))
			ereport(LOG_SERVER_ONLY,
					(errmsg("timing_source: the TSC failed the watchdog on probation and stays off"),
					 errdetail("%s", reason),
					 errhint("timing_source re-calibrates it again later, waiting longer each time.")));
	}
	else if (ts_shared_probation_passed(w->generation))
		ereport(LOG_SERVER_ONLY,
				(errmsg("timing_source: the TSC is used again, at %llu kHz",
						(unsigned long long) khz),
				 errdetail("Two calibrations agreed on that frequency after the watchdog trip, and %d timed queries in a row passed the watchdog at it.",
						   TS_RECOVER_PASSES)));
}

/* Compare the clocks over the query; stop the TSC if they disagree */
static void
ts_watch_end(TsWatch *w)
{
	TsBracket  *start = &w->start;
	TsBracket	end;
	int64		sys_ns;
	double		tsc_ns,
				slack_ns,
				diff_pct;
	bool		failed,
				changed,
				stale;
	char		reason[256];

	/*
	 * A query much shorter than TS_WATCHDOG_MIN_NS is not judged: skip the
	 * end brackets then, which most of a short query's watchdog cost is.
	 * Measured on the TSC, so "much shorter" is half: a TSC running at half
	 * its assumed rate still gets every query of twice the minimum or more
	 * checked.
	 */
	if (tsclock_read_fast() - start->tsc <
		w->khz * (TS_WATCHDOG_MIN_NS / 2) / 1000000)
	{
		ts_query_remove(&w->entry);
		return;
	}

	ts_watch_read(&end);
	ts_query_remove(&w->entry);

	sys_ns = (int64) (end.ns - start->ns);
	if (end.ns < start->ns || sys_ns < TS_WATCHDOG_MIN_NS)
		return;

	/*
	 * Each midpoint is within half its bracket of the counter at its clock
	 * read, and each clock read is good to 1 ns.  An interval whose
	 * brackets are too wide to judge TS_WATCHDOG_MAX_PCT is not a check at
	 * all.
	 */
	slack_ns = (double) tsclock_ticks_to_ns_mult((start->width + end.width) / 2,
												 w->mult) + 2.0;
	if (slack_ns > sys_ns * (TS_WATCHDOG_MAX_PCT / 100.0) / 2)
		return;

	tsc_ns = end.tsc >= start->tsc ?
		(double) tsclock_ticks_to_ns_mult(end.tsc - start->tsc, w->mult) : -1.0;
	diff_pct = (tsc_ns - (double) sys_ns) / (double) sys_ns * 100.0;
	failed = tsc_ns < 0 ||
		fabs(tsc_ns - (double) sys_ns) - slack_ns >
		(double) sys_ns * (TS_WATCHDOG_MAX_PCT / 100.0);

	if (w->probation)
	{
		/*
		 * A watch at a frequency that is no longer the one on trial or in
		 * use checked nothing that still matters.
		 */
		if (w->freq_generation != ts_shared_freq_generation())
			return;
		ts_stats_watchdog(failed);
		ts_probation_verdict(w, failed, diff_pct, sys_ns);
		return;
	}
	ts_stats_watchdog(failed);
	if (!failed)
		return;

	snprintf(reason, sizeof(reason),
			 "The per-query watchdog found the TSC, at %llu kHz, %+.1f%% off the system clock over a query of %.1f ms.",
			 (unsigned long long) w->khz, diff_pct, sys_ns / 1e6);
	changed = ts_distrust_tsc(reason, w->generation, w->freq_generation);
	stale = !changed && w->freq_generation != ts_shared_freq_generation();
	if (changed)
		ereport(LOG_SERVER_ONLY,
				(errmsg("timing_source: the per-query watchdog stopped the TSC"),
				 errdetail("%s", reason),
				 errhint("timing_source re-calibrates the TSC later and uses it again once two calibrations agree and %d timed queries in a row pass the watchdog.",
						 TS_RECOVER_PASSES)));

	/* the server log has the event once, above; the client its query's */
	ereport(WARNING_CLIENT_ONLY,
			(errcode(ERRCODE_WARNING),
			 errmsg("timing_source: the TSC and the system clock disagree by %.1f%% over this query",
					fabs(diff_pct)),
			 errdetail("The system clock measured %.3f ms and the TSC, at %llu kHz, %.3f ms. "
					   "This query's per-node times are suspect. %s",
					   sys_ns / 1e6, (unsigned long long) w->khz,
					   tsc_ns / 1e6,
					   stale ? "The query started before the TSC's frequency changed, and the new one is not affected." :
					   ts_shared_is_shared() ?
					   "timing_source has stopped using the TSC in every session." :
					   "timing_source has stopped using the TSC in this session."),
			 errhint("The TSC frequency in use is wrong, or the TSC's rate changed (for example after a virtual machine moved to another host). "
					 "timing_source re-calibrates the TSC later and uses it again once it proves stable; timing_source_tsc() shows the watchdog's counts.")));
}

void
ts_clock_query_end(QueryDesc *queryDesc)
{
	TsWatch    *w = ts_query_find(&ts_watches, queryDesc);

	if (w != NULL)
		ts_watch_end(w);
}

/* nothing to install: the watchdog runs from the wrappers' own hooks */
void
ts_clock_init(void)
{
}

#else							/* !TS_HAVE_WATCHDOG */

bool
ts_clock_tsc_queries_running(void)
{
	return false;
}

#endif							/* TS_HAVE_WATCHDOG */
