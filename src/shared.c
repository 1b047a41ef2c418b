/*-------------------------------------------------------------------------
 *
 * shared.c
 *	  State that outlives one query: the per-query watchdog's verdict and
 *	  the counters behind timing_source_tsc()'s watchdog_checks,
 *	  watchdog_failures and tsc_timed_calls.
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

#include "timing_source.h"

typedef struct TsSharedState
{
	pg_atomic_uint32 distrusted;	/* the watchdog stopped the TSC */
	slock_t		mutex;			/* protects reason */
	char		reason[256];
	pg_atomic_uint64 watchdog_checks;
	pg_atomic_uint64 watchdog_failures;
	pg_atomic_uint64 tsc_calls;
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
	pg_atomic_init_u32(&s->distrusted, 0);
	SpinLockInit(&s->mutex);
	s->reason[0] = '\0';
	pg_atomic_init_u64(&s->watchdog_checks, 0);
	pg_atomic_init_u64(&s->watchdog_failures, 0);
	pg_atomic_init_u64(&s->tsc_calls, 0);
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
	stats->shared = state_is_shared;
}

void
ts_shared_distrust(const char *reason)
{
	SpinLockAcquire(&state->mutex);
	if (state->reason[0] == '\0')
		strlcpy(state->reason, reason, sizeof(state->reason));
	SpinLockRelease(&state->mutex);
	pg_atomic_write_u32(&state->distrusted, 1);
}

bool
ts_shared_distrusted(char *reason, size_t len)
{
	if (likely(pg_atomic_read_u32(&state->distrusted) == 0))
		return false;
	SpinLockAcquire(&state->mutex);
	strlcpy(reason, state->reason, len);
	SpinLockRelease(&state->mutex);
	return true;
}
