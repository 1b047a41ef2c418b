/*
 * instrument.c
 *	  Executor glue: placeholder until the TSC-timed instrumentation of
 *	  issue 3 is merged.
 */
#include "postgres.h"

#include "timing_source.h"

void
ts_instrument_init(void)
{
}
