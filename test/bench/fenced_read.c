/*
 * test/bench/fenced_read.c -- what fencing a timed call's two counter
 * reads costs (src/instrument.c: sampled calls read LFENCE; RDTSC; LFENCE
 * before the call and LFENCE; RDTSC after it), against the plain RDTSC
 * pair exact timing uses, around a call that does a little memory work.
 * Prints ns per timed call for each and the difference, which is what
 * fencing adds to each sampled call (1 in N of a node's calls).
 *
 *   gcc -O2 -o /tmp/fenced_read test/bench/fenced_read.c && /tmp/fenced_read
 */
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

#define CALLS 20000000
#define ROUNDS 7

static uint64_t table[4096];
static volatile uint64_t sink;

/* a node's call: a few dependent loads and a store */
__attribute__((noinline)) static uint64_t
call(uint64_t i)
{
	uint64_t	x = table[i & 4095];

	x = table[(x + i) & 4095];
	table[(i * 7) & 4095] = x + 1;
	return x;
}

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double
run(int fenced)
{
	uint64_t	sum = 0;
	uint64_t	acc = 0;
	double		t0 = now_ns();

	for (uint64_t i = 0; i < CALLS; i++)
	{
		uint64_t	start,
					end;

		if (fenced)
		{
			_mm_lfence();
			start = __rdtsc();
			_mm_lfence();
		}
		else
			start = __rdtsc();
		acc += call(i);
		if (fenced)
			_mm_lfence();
		end = __rdtsc();
		sum += end - start;
	}
	sink = sum + acc;
	return (now_ns() - t0) / CALLS;
}

static int
cmp(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

int
main(void)
{
	double		plain[ROUNDS],
				fenced[ROUNDS];

	for (int i = 0; i < 4096; i++)
		table[i] = (uint64_t) i * 2654435761u;
	for (int r = 0; r < ROUNDS; r++)
	{
		plain[r] = run(0);
		fenced[r] = run(1);
	}
	qsort(plain, ROUNDS, sizeof(double), cmp);
	qsort(fenced, ROUNDS, sizeof(double), cmp);
	printf("ns per timed call (median of %d rounds of %d calls): plain reads %.2f, fenced %.2f, fencing adds %.2f\n",
		   ROUNDS, CALLS, plain[ROUNDS / 2], fenced[ROUNDS / 2],
		   fenced[ROUNDS / 2] - plain[ROUNDS / 2]);
	return 0;
}
