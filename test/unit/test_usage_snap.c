/*
 * test_usage_snap.c
 *	  Unit tests of the AVX2 usage snapshots (src/usage_snap.h), TAP
 *	  output for prove.
 *
 * For every size a usage struct can have (multiples of 8 bytes, up to
 * 160; PostgreSQL 15-19 have 24 and 32 for WalUsage, 112, 128 and 144 for
 * BufferUsage), with the source at every 8-byte offset from a 32-byte
 * boundary: the snapshot is an exact copy of the bytes, an unchanged
 * source compares unchanged, and a change to any one 64-bit word, by one
 * or in the top bit, compares changed, while the bytes around the struct
 * are never read as part of it.  Where the build has no wide snapshots
 * (TSCLOCK_NO_COUNTER, other architectures) or the CPU has no AVX2, says so
 * and skips.
 */
#include "usage_snap.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>

#ifdef TS_HAVE_WIDE_USAGE
#define MAX_WORDS 20

/* a source struct of "words" 64-bit words inside guard words */
typedef union Arena
{
	__m256i		align;
	uint64_t	w[MAX_WORDS + 8];
} Arena;

static void
check_size(size_t words, size_t offset)
{
	Arena		arena;
	uint64_t   *src = arena.w + offset;
	size_t		size = words * sizeof(uint64_t);
	union
	{
		__m256i		y[TS_SNAP_WORDS(MAX_WORDS * 8)];
		uint64_t	w[MAX_WORDS + 4];
	}			snap;
	int			copy_exact,
				unchanged,
				all_changes = 1,
				guards_ignored = 1;

	for (size_t i = 0; i < MAX_WORDS + 8; i++)
		arena.w[i] = tap_random();
	for (size_t i = 0; i < MAX_WORDS + 4; i++)
		snap.w[i] = 0;

	ts_snap_take(snap.y, src, size);
	copy_exact = memcmp(snap.w, src, size) == 0;
	unchanged = !ts_snap_changed(snap.y, src, size);

	for (size_t i = 0; i < words; i++)
	{
		uint64_t	saved = src[i];

		src[i] = saved + 1;
		if (!ts_snap_changed(snap.y, src, size))
			all_changes = 0;
		src[i] = saved ^ UINT64_C(0x8000000000000000);
		if (!ts_snap_changed(snap.y, src, size))
			all_changes = 0;
		src[i] = saved;
	}

	/* the words just before and after the struct are not part of it */
	if (offset > 0)
	{
		arena.w[offset - 1]++;
		if (ts_snap_changed(snap.y, src, size))
			guards_ignored = 0;
	}
	src[words]++;
	if (ts_snap_changed(snap.y, src, size))
		guards_ignored = 0;

	ok(copy_exact && unchanged && all_changes && guards_ignored,
	   "%zu bytes at offset %zu: exact copy (%s), unchanged (%s), each word's change seen (%s), neighbours ignored (%s)",
	   size, offset * 8, copy_exact ? "yes" : "NO", unchanged ? "yes" : "NO",
	   all_changes ? "yes" : "NO", guards_ignored ? "yes" : "NO");
}
#endif

int
main(void)
{
#ifdef TS_HAVE_WIDE_USAGE
	if (!ts_snap_cpu_ok())
	{
		printf("1..0 # SKIP this CPU (or its kernel) has no AVX2, so the wide snapshots are never used here\n");
		return 0;
	}
	for (size_t words = 1; words <= MAX_WORDS; words++)
		for (size_t offset = 0; offset < 4; offset++)
			check_size(words, offset);
	return done_testing();
#else
	printf("1..0 # SKIP wide snapshots are compiled out of this build (not x86-64, or TSCLOCK_NO_COUNTER)\n");
	return 0;
#endif
}
