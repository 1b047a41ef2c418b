/*-------------------------------------------------------------------------
 *
 * profile.h
 *	  A statistical profile of one run's plan nodes: the reference for
 *	  how a plan's time divides among its nodes, for benchmarks and tests
 *	  (timing_source_explain_nodes_profile, plan_nodes.c).
 *
 * Timing a call moves its reads into the work around them, and a sampled
 * call is not an ordinary call (docs/internals.md, "Fenced reads"); a
 * profile reads no clock at node boundaries at all.  While a query runs,
 * its nodes keep a stack of the calls in progress (two stores a call), and
 * a timer interrupts the backend at a fixed rate: each tick counts once
 * for every node on the stack, and for every node core runs itself
 * (MultiExecProcNode: Hash, bitmap index scans) whose own start/stop pair
 * is open.  A node's ticks over the run's are then its share of the run,
 * holding its children's as its timed total does, measured where the
 * processor retires instructions rather than where a read lands.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_PROFILE_H
#define TS_PROFILE_H

#include "instrument.h"
#include "port/atomics.h"

#ifdef TS_HAVE_EXECUTOR_HOOK

/* deeper calls than this still count for the nodes below the cut */
#define TS_PROFILE_DEPTH	256

extern uint64 *ts_profile_stack[TS_PROFILE_DEPTH];
extern volatile int ts_profile_depth;

/*
 * Around a node's call: the entry is stored before the depth that makes
 * it visible, so a tick between the two never counts a stale one.
 */
static pg_attribute_always_inline void
ts_profile_push(uint64 *hits)
{
	int			d = ts_profile_depth;

	if (likely(d < TS_PROFILE_DEPTH))
		ts_profile_stack[d] = hits;
	pg_compiler_barrier();
	ts_profile_depth = d + 1;
}

static pg_attribute_always_inline void
ts_profile_pop(void)
{
	ts_profile_depth = ts_profile_depth - 1;
}

/* whether profiling is built for this platform (a POSIX interval timer) */
extern bool ts_profile_supported(void);

/*
 * A node core runs itself, counted while its start/stop pair is open;
 * false if the list of them is full (the node then gets no ticks)
 */
extern bool ts_profile_watch(TsNodeInstr *instr, uint64 *hits);

/* whether a profile is running in this process */
extern bool ts_profile_running(void);

/* start ticking at hz per second; stop, returning the ticks counted */
extern void ts_profile_start(int hz);
extern uint64 ts_profile_stop(void);

#endif							/* TS_HAVE_EXECUTOR_HOOK */

#endif							/* TS_PROFILE_H */
