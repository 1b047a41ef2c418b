/*
 * tap.h
 *	  The few TAP helpers the unit tests share: ok(), skip() and the plan
 *	  line at the end (done_testing()).  Each test program includes it once.
 */
#ifndef TS_UNIT_TAP_H
#define TS_UNIT_TAP_H

#include <stdarg.h>
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

#endif							/* TS_UNIT_TAP_H */
