/*
 * tap.h
 *	  The few helpers the unit tests share: ok(), skip() and the plan line
 *	  at the end (done_testing()), and a seeded pseudo-random source
 *	  (tap_random()) so that a failing run can be repeated exactly.  Each
 *	  test program includes it once.
 */
#ifndef TS_UNIT_TAP_H
#define TS_UNIT_TAP_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

static int	n_tests = 0;
static int	n_failed = 0;

static inline void
ok(int cond, const char *fmt,...)
{
	va_list		ap;

	n_tests++;
	if (!cond)
		n_failed++;
	printf("%s %d - ", cond ? "ok" : "not ok", n_tests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static inline void
skip(const char *why)
{
	n_tests++;
	printf("ok %d # skip %s\n", n_tests, why);
}

/* print the plan; the exit status: 0 when every test passed */
static inline int
done_testing(void)
{
	printf("1..%d\n", n_tests);
	return n_failed == 0 ? 0 : 1;
}

/* xorshift64, fixed seed: the same sequence on every run */
static uint64_t tap_rng = 0x9E3779B97F4A7C15u;

static inline uint64_t
tap_random(void)
{
	tap_rng ^= tap_rng << 13;
	tap_rng ^= tap_rng >> 7;
	tap_rng ^= tap_rng << 17;
	return tap_rng;
}

#endif							/* TS_UNIT_TAP_H */
