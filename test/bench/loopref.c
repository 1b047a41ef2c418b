/*
 * loopref.c
 *	  Reference loops for the loop-overhead comparison of the diagnostics
 *	  (test/bench/loop_overhead.sh).  Plain C, no server.
 *
 * For each counter (system = clock_gettime(CLOCK_MONOTONIC), rdtscp,
 * rdtsc) it runs two loops for a given time and prints the average loop
 * time:
 *
 *	 bare	 the counter read, the subtraction and the end test only: the
 *			 floor any measuring loop can reach;
 *	 full	 what pg_test_timing 19 does per loop: convert the difference
 *			 to ns, bump a log2 bucket and an exact count below 10,000 ns,
 *			 track the largest difference.
 *
 * Usage: loopref SECONDS
 * Output: one line per loop, "source kind avg_loop_ns loops"
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsclock.h"

#define NUM_DIRECT 10000

static uint64_t buckets[65];
static uint64_t direct[NUM_DIRECT];
volatile uint64_t sink;

enum src
{
	SYS = TSCLOCK_READ_SYSTEM,
	TSCP = TSCLOCK_READ_ORDERED,
	TSC = TSCLOCK_READ_FAST
};

/* the diagnostics' own read, so that both loops read the same way */
#define rd(s) tsclock_read_kind((TsClockRead) (s))

static inline __attribute__((always_inline)) uint64_t
end_for(enum src s, uint64_t start, double seconds)
{
	if (s == SYS)
		return start + (uint64_t) (seconds * 1e9);
	return start + (uint64_t) (seconds * 1e9 * (double) tsclock_info.khz / 1e6);
}

static inline __attribute__((always_inline)) void
bare(enum src s, double seconds, const char *name)
{
	uint64_t	t0 = tsclock_system_ns();
	uint64_t	cur = rd(s),
				end = end_for(s, cur, seconds),
				loops = 0,
				acc = 0;

	do
	{
		uint64_t	prev = cur;

		cur = rd(s);
		acc += cur - prev;
		loops++;
	} while ((int64_t) (end - cur) > 0);
	sink = acc;
	printf("%s bare %.2f %llu\n", name,
		   (double) (tsclock_system_ns() - t0) / (double) loops,
		   (unsigned long long) loops);
}

static inline __attribute__((always_inline)) void
full(enum src s, double seconds, const char *name)
{
	uint64_t	mult = tsclock_info.mult;
	uint64_t	t0 = tsclock_system_ns();
	uint64_t	cur = rd(s),
				end = end_for(s, cur, seconds),
				loops = 0,
				largest = 0,
				largest_count = 0;

	memset(buckets, 0, sizeof(buckets));
	memset(direct, 0, sizeof(direct));
	do
	{
		uint64_t	prev = cur;
		int64_t		diff;
		uint64_t	ns;

		cur = rd(s);
		diff = (int64_t) (cur - prev);
		if (diff < 0)
		{
			fprintf(stderr, "clock went backwards\n");
			exit(1);
		}
		ns = (s == SYS) ? (uint64_t) diff : tsclock_ticks_to_ns_mult((uint64_t) diff, mult);
		buckets[ns ? 64 - __builtin_clzll(ns) : 0]++;
		if (ns < NUM_DIRECT)
			direct[ns]++;
		if (ns > largest)
		{
			largest = ns;
			largest_count = 1;
		}
		else if (ns == largest)
			largest_count++;
		loops++;
	} while ((int64_t) (end - cur) > 0);
	sink = largest + largest_count;
	printf("%s full %.2f %llu\n", name,
		   (double) (tsclock_system_ns() - t0) / (double) loops,
		   (unsigned long long) loops);
}

static __attribute__((noinline)) void
run(enum src s, double seconds, const char *name)
{
	if (s == SYS)
	{
		bare(SYS, seconds, name);
		full(SYS, seconds, name);
	}
	else if (s == TSCP)
	{
		bare(TSCP, seconds, name);
		full(TSCP, seconds, name);
	}
	else
	{
		bare(TSC, seconds, name);
		full(TSC, seconds, name);
	}
}

int
main(int argc, char **argv)
{
	double		seconds = argc > 1 ? atof(argv[1]) : 1.0;

	tsclock_detect();
	run(SYS, seconds, "system");
	if (tsclock_info.usable)
	{
		run(TSCP, seconds, "rdtscp");
		run(TSC, seconds, "rdtsc");
	}
	return 0;
}
