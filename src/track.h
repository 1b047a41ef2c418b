/*-------------------------------------------------------------------------
 *
 * track.h
 *	  Per-node statistics across executions (track.c): what the executor
 *	  glue needs to know of a statement tracking instrumented.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_TRACK_H
#define TS_TRACK_H

#include "executor/execdesc.h"

/*
 * A bit of QueryDesc.instrument_options (and so of EState.es_instrument,
 * which core passes to parallel workers) set only on statements whose
 * instrumentation tracking asked for.  Core tests the options bit by bit,
 * so a bit it does not define changes nothing there; the wrappers see it
 * in the leader and in every worker, and time such a statement at the
 * tracking's own sampling rate instead of timing_source.sample_every.  A
 * statement EXPLAIN ANALYZE or auto_explain instrumented never has it.
 */
#define TS_INSTRUMENT_TRACKED	(1 << 30)

/* whether tracking, not EXPLAIN or auto_explain, instrumented queryDesc */
static inline bool
ts_tracked_statement(const QueryDesc *queryDesc)
{
	return (queryDesc->instrument_options & TS_INSTRUMENT_TRACKED) != 0;
}

/* timing_source.track_sample_every */
extern int	ts_track_sample_every;

/* settings and shared memory, then the executor hooks, from _PG_init */
extern void ts_track_init(void);
extern void ts_track_hooks(void);

#endif							/* TS_TRACK_H */
