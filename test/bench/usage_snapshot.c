/*
 * test/bench/usage_snapshot.c -- per-call cost of buffer-usage accounting
 * in a node wrapper: the copy and XOR-compare the plain wrappers use, the
 * same with explicit vector XOR, the AVX2 copy and compare of the wide
 * wrappers (x86-64 CPUs with AVX2), and a stack of snapshots recognised by
 * the sum of their words (an alternative the wrappers do not use; see
 * docs/benchmark.md).
 * Each scheme must add the same totals, which the program checks.
 *
 *   gcc -O2 -o /tmp/usage_snapshot test/bench/usage_snapshot.c && /tmp/usage_snapshot
 */
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define NW 16
typedef struct { uint64_t w[NW]; } Usage;
typedef uint64_t v2 __attribute__((vector_size(16), aligned(8)));

Usage g;                        /* pgBufferUsage */
Usage acc[4][64];               /* per scheme and node depth */
volatile unsigned change_every = 64;
static unsigned ctr;

__attribute__((noinline)) void work(void)
{
	if (++ctr >= change_every) { ctr = 0; g.w[0]++; g.w[3] += 2; }
	__asm__ volatile("" ::: "memory");
}

static inline void accum(Usage *a, const Usage *now, const Usage *start)
{ for (int i = 0; i < NW; i++) a->w[i] += now->w[i] - start->w[i]; }

/* scheme A: copy on entry, xor-compare on exit */
__attribute__((noinline)) void node_a(int depth)
{
	Usage start = g;
	if (depth > 0) node_a(depth - 1); else work();
	uint64_t d = 0;
	for (int i = 0; i < NW; i++) d |= g.w[i] ^ start.w[i];
	if (__builtin_expect(d != 0, 0)) accum(&acc[0][depth], &g, &start);
}

/* scheme B: slot stack with witness, cache slot above top */
typedef struct { Usage u; uint64_t w; uint64_t pad[7]; } Slot;
#define CAP 64
static Slot slots[CAP + 1];
static int top;                 /* live slots */
static inline uint64_t wit(const Usage *u)
{
	const v2 *p = (const v2 *) u->w;
	v2 a = p[0] + p[1], b = p[2] + p[3], c = p[4] + p[5], d = p[6] + p[7];
	a = (a + b) + (c + d);
	return a[0] + a[1];
}

__attribute__((noinline)) void node_b(int depth)
{
	int s = top, idx;
	uint64_t w = wit(&g);
	Usage local;
	Usage *snap;
	uint64_t sw;
	if (s > 0 && w == slots[s - 1].w) { idx = s - 1; snap = &slots[idx].u; sw = w; }
	else if (__builtin_expect(s < CAP, 1)) {
		if (w != slots[s].w) { slots[s].u = g; slots[s].w = w; }
		idx = s; top = s + 1; snap = &slots[s].u; sw = w;
	} else { local = g; snap = &local; sw = w; idx = -1; }
	if (depth > 0) node_b(depth - 1); else work();
	uint64_t w2 = wit(&g);
	if (__builtin_expect(w2 != sw, 0)) {
		accum(&acc[1][depth], &g, snap);
		if (s < CAP) { slots[s].u = g; slots[s].w = w2; }
	}
	top = s;
	(void) idx;
}

/* scheme A with explicit vector xor */
__attribute__((noinline)) void node_c(int depth)
{
	Usage start = g;
	if (depth > 0) node_c(depth - 1); else work();
	const v2 *p = (const v2 *) g.w, *q = (const v2 *) start.w;
	v2 d = (p[0] ^ q[0]) | (p[1] ^ q[1]) | (p[2] ^ q[2]) | (p[3] ^ q[3]) |
		(p[4] ^ q[4]) | (p[5] ^ q[5]) | (p[6] ^ q[6]) | (p[7] ^ q[7]);
	if (__builtin_expect((d[0] | d[1]) != 0, 0)) accum(&acc[2][depth], &g, &start);
}

#if defined(__x86_64__)
#include <immintrin.h>
/*
 * scheme D: as the wide wrappers (src/instrument.c): 32-byte copies kept
 * whole through a register, 32-byte XOR-compare, one VPTEST
 */
typedef union { __m256i y[(sizeof(Usage) + 31) / 32]; Usage u; } WideSnap;
__attribute__((noinline, target("avx2"))) void node_d(int depth)
{
	WideSnap s;
	__m256i d = _mm256_setzero_si256();
	for (size_t i = 0; i < sizeof(Usage) / 32; i++)
	{
		__m256i v = _mm256_loadu_si256((const __m256i *) ((const char *) &g + 32 * i));
		__asm__("" : "+x"(v));
		s.y[i] = v;
	}
	if (depth > 0) node_d(depth - 1); else work();
	for (size_t i = 0; i < sizeof(Usage) / 32; i++)
		d = _mm256_or_si256(d, _mm256_xor_si256(s.y[i],
			_mm256_loadu_si256((const __m256i *) ((const char *) &g + 32 * i))));
	if (__builtin_expect(!_mm256_testz_si256(d, d), 0)) accum(&acc[3][depth], &g, &s.u);
}
#endif

/* baseline: no usage tracking */
__attribute__((noinline)) void node_n(int depth)
{ if (depth > 0) node_n(depth - 1); else work(); }

static int have_avx2;

static double now_ns(void)
{ struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }

int main(int argc, char **argv)
{
	long n = 20000000; int depth = 1;
	if (argc > 1) depth = atoi(argv[1]);
	if (argc > 2) change_every = atoi(argv[2]);
	if (depth < 0 || depth >= 63) return 2;
#if defined(__x86_64__)
	have_avx2 = __builtin_cpu_supports("avx2");
#endif
	for (int r = 0; r < 5; r++) {
		double t0 = now_ns(); for (long i = 0; i < n; i++) node_n(depth);
		double t1 = now_ns(); for (long i = 0; i < n; i++) node_a(depth);
		double t2 = now_ns(); for (long i = 0; i < n; i++) node_b(depth);
		double t3 = now_ns(); for (long i = 0; i < n; i++) node_c(depth);
		double t4 = now_ns();
		double t5 = t4;
#if defined(__x86_64__)
		if (have_avx2)
		{
			for (long i = 0; i < n; i++) node_d(depth);
			t5 = now_ns();
		}
#endif
		double calls = (double) n * (depth + 1);
		printf("depth %d change 1/%u: none %.2f  copy %.2f  witness %.2f ns/call (extra: copy %.2f, witness %.2f, copy+vxor %.2f",
			   depth, change_every, (t1 - t0) / calls, (t2 - t1) / calls, (t3 - t2) / calls,
			   (t2 - t1 - (t1 - t0)) / calls, (t3 - t2 - (t1 - t0)) / calls, (t4 - t3 - (t1 - t0)) / calls);
		if (have_avx2)
			printf(", copy+avx2 %.2f", (t5 - t4 - (t1 - t0)) / calls);
		printf(")\n");
	}
	if (memcmp(acc[0], acc[1], sizeof(acc[0])) != 0 ||
		memcmp(acc[0], acc[2], sizeof(acc[0])) != 0 ||
		(have_avx2 && memcmp(acc[0], acc[3], sizeof(acc[0])) != 0))
	{
		printf("MISMATCH: the schemes added different totals\n");
		return 1;
	}
	printf("totals agree (node 0 counter 0: %llu)\n", (unsigned long long) acc[0][0].w[0]);
	return 0;
}
