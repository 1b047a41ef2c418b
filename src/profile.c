/*-------------------------------------------------------------------------
 *
 * profile.c
 *	  The timer and the tick of the plan node profile (profile.h): a POSIX
 *	  interval timer on CLOCK_MONOTONIC that sends SIGPROF, which
 *	  PostgreSQL does not use, and a handler that only adds to counters.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "profile.h"

#ifdef TS_HAVE_EXECUTOR_HOOK

#include <signal.h>
#include <time.h>

/* SIGEV_SIGNAL timers: Linux (glibc 2.34+ has them in libc itself) */
#if defined(__linux__)
#define TS_HAVE_PROFILE 1
#endif

#define TS_PROFILE_WATCHED	256

typedef struct TsProfileWatch
{
	TsNodeInstr *instr;
	uint64	   *hits;
} TsProfileWatch;

uint64	   *ts_profile_stack[TS_PROFILE_DEPTH];
volatile int ts_profile_depth = 0;

static TsProfileWatch ts_profile_watched[TS_PROFILE_WATCHED];
static volatile int ts_profile_nwatched = 0;
static volatile uint64 ts_profile_ticks = 0;
static bool ts_profile_active = false;

#ifdef TS_HAVE_PROFILE
static timer_t ts_profile_timer;
static struct sigaction ts_profile_old_action;

/*
 * The tick.  Only counters, in memory the run keeps until the timer is
 * gone; the stack's entries below the depth were stored before it.
 */
static void
ts_profile_tick(int signo)
{
	int			d = ts_profile_depth;
	int			n = ts_profile_nwatched;
	int			i;

	if (d > TS_PROFILE_DEPTH)
		d = TS_PROFILE_DEPTH;
	for (i = 0; i < d; i++)
		(*ts_profile_stack[i])++;
	/* a node core starts and stops itself: its start time is set meanwhile */
	for (i = 0; i < n; i++)
	{
		if (!INSTR_TIME_IS_ZERO(TS_INSTR_FLAGS(ts_profile_watched[i].instr)->starttime))
			(*ts_profile_watched[i].hits)++;
	}
	ts_profile_ticks = ts_profile_ticks + 1;
}
#endif

bool
ts_profile_supported(void)
{
#ifdef TS_HAVE_PROFILE
	return true;
#else
	return false;
#endif
}

bool
ts_profile_running(void)
{
	return ts_profile_active;
}

bool
ts_profile_watch(TsNodeInstr *instr, uint64 *hits)
{
	int			n = ts_profile_nwatched;

	if (n >= TS_PROFILE_WATCHED)
		return false;
	ts_profile_watched[n].instr = instr;
	ts_profile_watched[n].hits = hits;
	pg_compiler_barrier();
	ts_profile_nwatched = n + 1;
	return true;
}

void
ts_profile_start(int hz)
{
#ifdef TS_HAVE_PROFILE
	struct sigaction sa;
	struct sigevent sev;
	struct itimerspec its;
	long		ns = 1000000000L / hz;

	/* the caller refuses a second profile before it changes anything */
	if (ts_profile_active)
		elog(ERROR, "plan node profile started twice");

	ts_profile_depth = 0;
	ts_profile_nwatched = 0;
	ts_profile_ticks = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = ts_profile_tick;
	sigemptyset(&sa.sa_mask);
	/* a tick must not make a read or a wait fail */
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGPROF, &sa, &ts_profile_old_action) != 0)
		ereport(ERROR,
				(errmsg("could not install the profile's signal handler: %m")));

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = SIGPROF;
	if (timer_create(CLOCK_MONOTONIC, &sev, &ts_profile_timer) != 0)
	{
		int			save_errno = errno;

		sigaction(SIGPROF, &ts_profile_old_action, NULL);
		errno = save_errno;
		ereport(ERROR,
				(errmsg("could not create the profile's timer: %m")));
	}
	ts_profile_active = true;

	its.it_value.tv_sec = its.it_interval.tv_sec = ns / 1000000000L;
	its.it_value.tv_nsec = its.it_interval.tv_nsec = ns % 1000000000L;
	if (timer_settime(ts_profile_timer, 0, &its, NULL) != 0)
	{
		int			save_errno = errno;

		(void) ts_profile_stop();
		errno = save_errno;
		ereport(ERROR,
				(errmsg("could not start the profile's timer: %m")));
	}
#else
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("plan node profiles are not supported on this platform")));
#endif
}

/*
 * Stop ticking; safe to call when not started.  A tick still pending when
 * the timer is deleted would reach SIGPROF's old action, by default the
 * end of the process: ignoring the signal first discards it.
 */
uint64
ts_profile_stop(void)
{
	uint64		ticks = ts_profile_ticks;

#ifdef TS_HAVE_PROFILE
	if (ts_profile_active)
	{
		struct sigaction ign;

		timer_delete(ts_profile_timer);
		memset(&ign, 0, sizeof(ign));
		ign.sa_handler = SIG_IGN;
		sigemptyset(&ign.sa_mask);
		sigaction(SIGPROF, &ign, NULL);
		sigaction(SIGPROF, &ts_profile_old_action, NULL);
		ts_profile_active = false;
		ticks = ts_profile_ticks;
	}
#endif
	ts_profile_depth = 0;
	ts_profile_nwatched = 0;
	return ticks;
}

#endif							/* TS_HAVE_EXECUTOR_HOOK */
