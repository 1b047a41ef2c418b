/*-------------------------------------------------------------------------
 *
 * usage_snap.h
 *	  Snapshots of small structs of 64-bit counters (buffer and WAL usage)
 *	  with AVX2, for the node wrappers: a copy on entry, a comparison on
 *	  exit.
 *
 * A node wrapper that keeps buffer usage copies pgBufferUsage when a call
 * starts and, when it ends, adds the difference if anything changed.  For
 * the x86-64 baseline gcc makes both 16-byte moves; with AVX2 they take
 * half the instructions.  The wrappers that use these functions are
 * compiled for AVX2 (TS_WIDE_TARGET) and chosen only where
 * ts_snap_cpu_ok() says the CPU and the kernel support it.
 *
 * Plain C without PostgreSQL headers, so that test/unit can check it.
 * Compiled out, like the TSC, with TSCLOCK_NO_COUNTER (or its other name
 * TSCLOCK_NO_X86, see tsclock.h) and on other architectures.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_USAGE_SNAP_H
#define TS_USAGE_SNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && \
	!defined(TSCLOCK_NO_COUNTER) && !defined(TSCLOCK_NO_X86)
#define TS_HAVE_WIDE_USAGE 1

#include <immintrin.h>

#define TS_WIDE_TARGET __attribute__((target("avx2")))

/* 256-bit words for a snapshot of "size" bytes */
#define TS_SNAP_WORDS(size)	(((size) + 31) / 32)

/*
 * Copy "size" bytes (a multiple of 8) at "src" into "snap": 32 bytes at a
 * time, then 16, then 8.  Each 32-byte value passes through a register as
 * a whole: gcc would otherwise turn the copy into 16-byte moves, and
 * reading those back as 32 bytes on exit would stall on store forwarding.
 */
static inline TS_WIDE_TARGET void
ts_snap_take(__m256i *snap, const void *src, size_t size)
{
	const char *p = (const char *) src;
	char	   *q = (char *) snap;
	size_t		i = 0;

	for (; i + 32 <= size; i += 32)
	{
		__m256i		v = _mm256_loadu_si256((const __m256i *) (p + i));

		__asm__("" : "+x"(v));
		_mm256_store_si256((__m256i *) (q + i), v);
	}
	if (i + 16 <= size)
	{
		__m128i		v = _mm_loadu_si128((const __m128i *) (p + i));

		__asm__("" : "+x"(v));
		_mm_store_si128((__m128i *) (q + i), v);
		i += 16;
	}
	if (i < size)
		memcpy(q + i, p + i, sizeof(uint64_t));
}

/* Whether "size" bytes at "now" differ from the snapshot taken of them */
static inline TS_WIDE_TARGET bool
ts_snap_changed(const __m256i *snap, const void *now, size_t size)
{
	const char *p = (const char *) now;
	const char *q = (const char *) snap;
	__m256i		d = _mm256_setzero_si256();
	__m128i		e = _mm_setzero_si128();
	uint64_t	tail = 0;
	size_t		i = 0;

	for (; i + 32 <= size; i += 32)
		d = _mm256_or_si256(d,
							_mm256_xor_si256(_mm256_load_si256((const __m256i *) (q + i)),
											 _mm256_loadu_si256((const __m256i *) (p + i))));
	if (i + 16 <= size)
	{
		e = _mm_xor_si128(_mm_load_si128((const __m128i *) (q + i)),
						  _mm_loadu_si128((const __m128i *) (p + i)));
		i += 16;
	}
	if (i < size)
	{
		uint64_t	a,
					b;

		memcpy(&a, p + i, sizeof(uint64_t));
		memcpy(&b, q + i, sizeof(uint64_t));
		tail = a ^ b;
	}
	return !_mm256_testz_si256(d, d) || !_mm_testz_si128(e, e) || tail != 0;
}

/*
 * Whether this process may run AVX2 code: the CPU has it and the kernel
 * saves its registers, both of which __builtin_cpu_supports() checks.
 */
static inline bool
ts_snap_cpu_ok(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2");
}
#else
#define TS_WIDE_TARGET
#endif

#endif							/* TS_USAGE_SNAP_H */
