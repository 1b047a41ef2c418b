/*-------------------------------------------------------------------------
 *
 * shared.c
 *	  State that outlives one query: the per-query watchdog's verdict, the
 *	  recovery after it (docs/internals.md, "Recovery after a watchdog
 *	  trip"), and the counters behind timing_source_tsc()'s watchdog_*,
 *	  recalibrations* and tsc_timed_calls.
 *
 * When the library is preloaded the state lives in shared memory, so a
 * watchdog failure in one backend stops the TSC in every backend, and the
 * counters cover the whole server (parallel workers included).  Loaded on
 * demand, there is no shared memory to ask for, and the same state is
 * kept per process.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "timing_source.h"

/*
 * The verdict and everything recovery keeps are changed together under
 * mutex; generation, bumped at every change of phase or frequency, is what
 * a backend compares at each query start to know whether to look at all.
 */
typedef struct TsSharedState
{
	pg_atomic_uint32 generation;
	slock_t		mutex;			/* protects the fields below it */
	uint32		freq_generation;	/* bumped only when khz changes */
	TsTscPhase	phase;
	uint64		khz;			/* frequency of a recovered or probation
								 * phase; 0: the one detected at startup */
	char		reason[256];	/* the trip that stopped the TSC */
	uint64		cand_khz;		/* a calibration awaiting a second, or 0 */
	double		cand_ppm;		/* its uncertainty */
	int			passes;			/* watchdog checks passed on probation */
	TimestampTz next_try;		/* no re-calibration before */
	int64		backoff_us;		/* wait before the next one after a failure */
	TimestampTz trusted_since;	/* the last return to the TSC, or 0 */
	pg_atomic_uint64 watchdog_checks;
	pg_atomic_uint64 watchdog_failures;
	pg_atomic_uint64 tsc_calls;
	pg_atomic_uint64 recalibrations;
	pg_atomic_uint64 recalibrations_agreed;
	pg_atomic_uint64 recoveries;
} TsSharedState;

/* shared memory when preloaded, else this process's own copy */
static TsSharedState local_state;
static TsSharedState *state = NULL;
static bool state_is_shared = false;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
init_state(TsSharedState *s)
{
	pg_atomic_init_u32(&s->generation, 0);
	SpinLockInit(&s->mutex);
	s->freq_generation = 0;
	s->phase = TS_TSC_TRUSTED;
	s->khz = 0;
	s->reason[0] = '\0';
	s->cand_khz = 0;
	s->cand_ppm = 0;
	s->passes = 0;
	s->next_try = 0;
	s->backoff_us = 0;
	s->trusted_since = 0;
	pg_atomic_init_u64(&s->watchdog_checks, 0);
	pg_atomic_init_u64(&s->watchdog_failures, 0);
	pg_atomic_init_u64(&s->tsc_calls, 0);
	pg_atomic_init_u64(&s->recalibrations, 0);
	pg_atomic_init_u64(&s->recalibrations_agreed, 0);
	pg_atomic_init_u64(&s->recoveries, 0);
}

static void
ts_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(TsSharedState)));
}

static void
ts_shmem_startup(void)
{
	bool		found;
	TsSharedState *s;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	s = ShmemInitStruct("timing_source", sizeof(TsSharedState), &found);
	if (!found)
		init_state(s);
	LWLockRelease(AddinShmemInitLock);

	state = s;
	state_is_shared = true;
}

void
ts_shared_init(void)
{
	init_state(&local_state);
	state = &local_state;

	if (process_shared_preload_libraries_in_progress)
	{
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = ts_shmem_request;
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = ts_shmem_startup;
	}
}

bool
ts_shared_is_shared(void)
{
	return state_is_shared;
}

void
ts_stats_add_calls(uint64 n)
{
	if (n > 0)
		pg_atomic_fetch_add_u64(&state->tsc_calls, (int64) n);
}

void
ts_stats_watchdog(bool failed)
{
	pg_atomic_fetch_add_u64(&state->watchdog_checks, 1);
	if (failed)
		pg_atomic_fetch_add_u64(&state->watchdog_failures, 1);
}

void
ts_stats_read(TsStats *stats)
{
	stats->watchdog_checks = pg_atomic_read_u64(&state->watchdog_checks);
	stats->watchdog_failures = pg_atomic_read_u64(&state->watchdog_failures);
	stats->tsc_calls = pg_atomic_read_u64(&state->tsc_calls);
	stats->recalibrations = pg_atomic_read_u64(&state->recalibrations);
	stats->recalibrations_agreed = pg_atomic_read_u64(&state->recalibrations_agreed);
	stats->recoveries = pg_atomic_read_u64(&state->recoveries);
	stats->shared = state_is_shared;
}

static void
bump_generation(void)
{
	pg_atomic_fetch_add_u32(&state->generation, 1);
}

uint32
ts_shared_generation(void)
{
	return pg_atomic_read_u32(&state->generation);
}

void
ts_shared_snapshot(TsTscShared *snap)
{
	SpinLockAcquire(&state->mutex);
	snap->generation = pg_atomic_read_u32(&state->generation);
	snap->freq_generation = state->freq_generation;
	snap->phase = state->phase;
	snap->khz = state->khz;
	snap->passes = state->passes;
	strlcpy(snap->reason, state->reason, sizeof(snap->reason));
	SpinLockRelease(&state->mutex);
}

uint32
ts_shared_freq_generation(void)
{
	uint32		g;

	SpinLockAcquire(&state->mutex);
	g = state->freq_generation;
	SpinLockRelease(&state->mutex);
	return g;
}

/*
 * A watchdog trip.  True when this one stopped a trusted TSC or ended a
 * probation (the event to log).  A trip at a frequency that is no longer
 * the current one (a query that started before a change) changes nothing;
 * one at the current frequency counts even if the phase moved on since
 * the query started: a probation check that started before the last pass
 * and failed after it failed the frequency now trusted.
 */
bool
ts_shared_distrust(const char *reason, uint32 generation,
				   uint32 freq_generation)
{
	bool		changed = false;

	/* no system call under the spinlock */
	TimestampTz now = GetCurrentTimestamp();
	int64		base = ts_recover_interval_us();

	SpinLockAcquire(&state->mutex);
	if (state->phase != TS_TSC_DISTRUSTED &&
		(pg_atomic_read_u32(&state->generation) == generation ||
		 state->freq_generation == freq_generation))
	{
		/*
		 * The wait grows after a failed probation, and after a trip soon
		 * after a return: a TSC that keeps failing is re-judged less and
		 * less often, each attempt costing a query wrong times.
		 */
		if (state->phase == TS_TSC_PROBATION)
			state->backoff_us = tsclock_longer_backoff(state->backoff_us, base,
													   TS_RECOVER_MAX_BACKOFF);
		else
			state->backoff_us = tsclock_trip_backoff(state->backoff_us, base,
													 TS_RECOVER_MAX_BACKOFF,
													 now - state->trusted_since);
		state->next_try = now + state->backoff_us;
		state->phase = TS_TSC_DISTRUSTED;
		state->cand_khz = 0;
		state->passes = 0;
		strlcpy(state->reason, reason, sizeof(state->reason));
		bump_generation();
		changed = true;
	}
	SpinLockRelease(&state->mutex);
	return changed;
}

/*
 * Claim the next re-calibration: true, with the generation it belongs to,
 * when the TSC is distrusted and its wait is over.  The claim moves the
 * wait on, so that one backend calibrates and the others do not.
 */
bool
ts_shared_claim_recalibration(uint32 *generation)
{
	bool		claimed = false;
	TimestampTz now = GetCurrentTimestamp();

	SpinLockAcquire(&state->mutex);
	if (state->phase == TS_TSC_DISTRUSTED &&
		(now >= state->next_try || now < state->next_try - state->backoff_us))
	{
		state->next_try = now + state->backoff_us;
		*generation = pg_atomic_read_u32(&state->generation);
		claimed = true;
	}
	SpinLockRelease(&state->mutex);
	return claimed;
}

/*
 * A re-calibration's result (converged or not).  The first converged one
 * becomes the candidate; the next one, an interval later, must agree with
 * it, and then the TSC goes on probation at their mean frequency.  A
 * calibration that did not converge, or disagrees, lengthens the wait; the
 * one that disagreed is the new candidate.
 */
TsRecalResult
ts_shared_recalibrated(uint32 generation, bool converged, uint64 khz,
					   double ppm, uint64 *cand_khz)
{
	TsRecalResult res = TS_RECAL_STALE;
	TimestampTz now = GetCurrentTimestamp();
	int64		base = ts_recover_interval_us();

	SpinLockAcquire(&state->mutex);
	if (pg_atomic_read_u32(&state->generation) == generation &&
		state->phase == TS_TSC_DISTRUSTED)
	{
		*cand_khz = state->cand_khz;
		if (!converged)
		{
			state->cand_khz = 0;
			res = TS_RECAL_NOT_CONVERGED;
		}
		else if (state->cand_khz == 0)
		{
			state->cand_khz = khz;
			state->cand_ppm = ppm;
			res = TS_RECAL_FIRST;
		}
		else if (tsclock_calibrations_agree(state->cand_khz, state->cand_ppm,
											khz, ppm))
		{
			state->khz = (state->cand_khz + khz + 1) / 2;
			state->freq_generation++;
			state->cand_khz = 0;
			state->passes = 0;
			state->phase = TS_TSC_PROBATION;
			bump_generation();
			res = TS_RECAL_AGREED;
		}
		else
		{
			state->cand_khz = khz;
			state->cand_ppm = ppm;
			res = TS_RECAL_DISAGREED;
		}
		if (res == TS_RECAL_NOT_CONVERGED || res == TS_RECAL_DISAGREED)
		{
			state->backoff_us = tsclock_longer_backoff(state->backoff_us, base,
													   TS_RECOVER_MAX_BACKOFF);
			state->next_try = now + state->backoff_us;
		}
	}
	SpinLockRelease(&state->mutex);

	if (res != TS_RECAL_STALE)
		pg_atomic_fetch_add_u64(&state->recalibrations, 1);
	if (res == TS_RECAL_AGREED)
		pg_atomic_fetch_add_u64(&state->recalibrations_agreed, 1);
	return res;
}

/*
 * A watchdog check passed on probation.  True when it was the
 * TS_RECOVER_PASSES-th: the TSC is trusted again, at the probation's
 * frequency.
 */
bool
ts_shared_probation_passed(uint32 generation)
{
	bool		restored = false;
	TimestampTz now = GetCurrentTimestamp();

	SpinLockAcquire(&state->mutex);
	if (pg_atomic_read_u32(&state->generation) == generation &&
		state->phase == TS_TSC_PROBATION &&
		++state->passes >= TS_RECOVER_PASSES)
	{
		state->phase = TS_TSC_TRUSTED;
		state->reason[0] = '\0';
		state->trusted_since = now;
		bump_generation();
		restored = true;
	}
	SpinLockRelease(&state->mutex);

	if (restored)
		pg_atomic_fetch_add_u64(&state->recoveries, 1);
	return restored;
}
