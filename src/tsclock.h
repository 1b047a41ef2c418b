/*-------------------------------------------------------------------------
 *
 * tsclock.h
 *	  Clock core of timing_source: CPU feature probe, TSC frequency
 *	  detection, calibration against the system clock, and tick to
 *	  nanosecond conversion.
 *
 * This file and tsclock.c know nothing about PostgreSQL's executor, GUCs
 * or SQL; they include only the C standard library and POSIX headers, so
 * that they can be compiled into a stand-alone unit test program.
 *
 * "TSC" stands for the CPU's counter: the Time-Stamp Counter on x86-64, the
 * generic timer's virtual counter CNTVCT_EL0 on arm64 (see the arm64 notes
 * in tsclock.c).  Building with TSCLOCK_NO_COUNTER defined, or on any
 * other architecture, compiles all counter code out; only the system
 * clock is offered.  TSCLOCK_NO_X86 is another name for TSCLOCK_NO_COUNTER
 * that builds and scripts pass; it too compiles out the arm64 counter.
 *
 * Everything that depends on the architecture is answered here: which
 * counter there is and what its reads are called, what a leader passes to
 * its parallel workers and how they adopt it, and how a verdict is
 * withdrawn.  The PostgreSQL-facing files ask; they do not rebuild a
 * TsClockInfo themselves.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSCLOCK_H
#define TSCLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#if defined(TSCLOCK_NO_X86) && !defined(TSCLOCK_NO_COUNTER)
#define TSCLOCK_NO_COUNTER 1
#endif

#if (defined(__x86_64__) || defined(_M_AMD64)) && !defined(TSCLOCK_NO_COUNTER)
#define TSCLOCK_HAVE_TSC 1
#define TSCLOCK_X86 1
#if defined(_MSC_VER)
#include <intrin.h>
#else
#include <x86intrin.h>
#endif
#elif defined(__aarch64__) && !defined(TSCLOCK_NO_COUNTER)
#define TSCLOCK_HAVE_TSC 1
#define TSCLOCK_ARM64 1
#endif

/* Sanity bounds for any TSC frequency we are willing to use (x86-64). */
#define TSCLOCK_MIN_KHZ		UINT64_C(100000)	/* 100 MHz */
#define TSCLOCK_MAX_KHZ		UINT64_C(20000000)	/* 20 GHz */

/*
 * The same for the arm64 generic timer: the architecture allows any
 * frequency; parts run it from 1 MHz (some embedded boards) through the
 * common 24-25 MHz and 50-200 MHz up to 1 GHz (mandatory from Armv8.6).
 */
#define TSCLOCK_ARM64_MIN_KHZ	UINT64_C(1000)	/* 1 MHz */
#define TSCLOCK_ARM64_MAX_KHZ	UINT64_C(5000000)	/* 5 GHz */

/*
 * A counter read counts as trapped (emulated by the kernel on arm64, by
 * the hypervisor on x86-64; see tsclock.c) when one read costs at least
 * this fraction of a system call.
 */
#define TSCLOCK_TRAP_FRACTION	0.5
#define TSCLOCK_ARM64_TRAP_FRACTION	TSCLOCK_TRAP_FRACTION

/* Calibration limits */
#define TSCLOCK_CAL_MAX_NS		(50 * 1000 * 1000)	/* never run longer */
#define TSCLOCK_CAL_TARGET_PPM	5.0 /* stop early once this good */
#define TSCLOCK_CAL_ACCEPT_PPM	100.0	/* converged if at least this good */

/* CPUID and calibration may disagree by at most this much (percent) */
#define TSCLOCK_CROSSCHECK_PCT	10.0

/*
 * A CPUID frequency is used only when it agrees with a converged
 * calibration within the calibration's own error bound plus this margin;
 * otherwise the calibrated frequency is used.  Calibration measures the TSC
 * against CLOCK_MONOTONIC, which the kernel's NTP discipline slews to
 * correct the crystal's error: that correction is the realistic difference
 * between an exact CPUID value (leaf 0x15, a hypervisor's programmed rate)
 * and calibration, and it is well below 200 ppm on sane hardware (quartz
 * tolerance is typically 20-100 ppm).  A nominal frequency (leaf 0x16) is
 * typically 1,000-5,000 ppm off the real rate, far outside the margin.
 */
#define TSCLOCK_AGREE_MARGIN_PPM	200.0

/* Calibration attempts at detection before giving up */
#define TSCLOCK_CAL_ATTEMPTS	3

/* Where Linux shows its clocksource; TIMING_SOURCE_CLOCKSOURCE_FILE overrides */
#define TSCLOCK_CLOCKSOURCE_PATH \
	"/sys/devices/system/clocksource/clocksource0/current_clocksource"

/* Fixed shift of the tick to nanosecond conversion, see tsclock_ticks_to_ns */
#define TSCLOCK_SHIFT			30

/*
 * Result of one calibration run of the TSC against CLOCK_MONOTONIC.
 */
typedef struct TsCalibration
{
	bool		converged;		/* uncertainty within TSCLOCK_CAL_ACCEPT_PPM
								 * and frequency within sanity bounds */
	uint64_t	khz;			/* measured frequency, 0 if absurd */
	double		hz;				/* unrounded measured frequency */
	double		uncertainty_ppm;	/* bound from the bracket widths */
	uint32_t	iterations;		/* bracketed system clock reads taken */
	uint64_t	elapsed_ns;		/* wall time the run took */
} TsCalibration;

/*
 * Everything we know about the TSC of this machine.  Filled once per
 * process by tsclock_detect(); read-only afterwards.
 */
typedef struct TsClockInfo
{
	bool		detected;		/* tsclock_detect() has run */
	bool		x86_64;			/* x86-64 TSC code compiled in */
	bool		arm64;			/* arm64 counter code compiled in */

	/* CPU features */
	bool		rdtscp;			/* CPUID 0x80000001 EDX bit 27 */
	bool		invariant;		/* CPUID 0x80000007 EDX bit 8 */
	bool		tsc_adjust;		/* CPUID 7.0 EBX bit 1 */
	bool		hypervisor;		/* CPUID 1 ECX bit 31 */
	char		hv_signature[13];	/* raw vendor signature, leaf 0x40000000 */
	char		hv_name[32];	/* "kvm", "vmware", "hyperv", "xen", ... */
	uint32_t	hv_max_leaf;	/* EAX of leaf 0x40000000 */

	/* Frequency reported by CPUID (0 if none or not trusted) */
	uint64_t	cpuid_khz;
	char		cpuid_what[64]; /* e.g. "cpuid 0x15", "" if none */

	/* Calibration done at detection time */
	TsCalibration cal;

	/* Frequency in use, and where it came from */
	uint64_t	khz;			/* 0 if unknown */
	bool		cpuid_used;		/* khz is the CPUID value (else calibration) */
	char		freq_source[128];	/* "x86, hypervisor (kvm), cpuid
									 * 0x40000010" */
	bool		have_ppm;		/* both CPUID and calibration known */
	double		calibration_ppm;	/* (cpuid - calibrated) / calibrated, ppm */

	/* Operating system's clocksource (Linux), "" if unknown */
	char		os_clocksource[64];

	/*
	 * The cost of one ordered counter read and of one system call (best of
	 * several batches, ns; 0 where not measured), and whether the read
	 * looked trapped (by the kernel on arm64, the hypervisor on x86-64).
	 * arm64 only: whether the counter could be read from user space at all.
	 */
	bool		el0_readable;
	double		read_ns;
	double		syscall_ns;
	bool		read_trapped;

	/*
	 * usable: the TSC may be selected explicitly ('tsc').  auto_ok: 'auto'
	 * picks it.  reason/auto_reason say why not (empty when true).
	 */
	bool		usable;
	char		reason[256];
	bool		auto_ok;
	char		auto_reason[256];

	/* Conversion: ns = ticks * mult >> TSCLOCK_SHIFT (see below) */
	uint64_t	mult;
} TsClockInfo;

/*
 * Raw CPUID values the decision is made from (filled by
 * tsclock_probe_cpuid; unit tests fill it by hand).
 */
typedef struct TsCpuidRaw
{
	uint32_t	max_leaf;		/* EAX of leaf 0 */
	bool		rdtscp;
	bool		invariant;
	bool		tsc_adjust;
	bool		hypervisor;
	uint32_t	hv_max_leaf;	/* EAX of leaf 0x40000000 */
	char		hv_signature[12];	/* EBX:ECX:EDX of leaf 0x40000000 */
	uint32_t	hv_10_eax;		/* leaf 0x40000010 EAX: TSC kHz */
	uint32_t	l15_eax;		/* leaf 0x15: ratio denominator */
	uint32_t	l15_ebx;		/* leaf 0x15: ratio numerator */
	uint32_t	l15_ecx;		/* leaf 0x15: crystal Hz */
	uint32_t	l16_eax;		/* leaf 0x16: base MHz */
	double		read_ns;		/* one RDTSCP, ns (0: not measured) */
	double		syscall_ns;		/* one trivial system call, ns (0: unknown) */
} TsCpuidRaw;

/*
 * What the arm64 decision is made from (filled by tsclock_probe_arm64;
 * unit tests fill it by hand).
 */
typedef struct TsArm64Raw
{
	bool		el0_readable;	/* reading CNTVCT_EL0 did not fault */
	uint64_t	cntfrq_hz;		/* CNTFRQ_EL0, as firmware programmed it */
	double		read_ns;		/* one ordered counter read, ns (0: unknown) */
	double		syscall_ns;		/* one trivial system call, ns (0: unknown) */
} TsArm64Raw;

/*
 * The three ways of reading a clock that the diagnostics measure: the
 * system clock, the counter read ordered (waiting for earlier
 * instructions) and the counter read plain.  See tsclock_read_name().
 */
typedef enum TsClockRead
{
	TSCLOCK_READ_SYSTEM,
	TSCLOCK_READ_ORDERED,
	TSCLOCK_READ_FAST
} TsClockRead;

#define TSCLOCK_NUM_READS	3

/*
 * What a process that does not detect by itself (a parallel worker) is
 * told by the one that did (its leader), so that both time with the same
 * clock and frequency.  It travels as text, see tsclock_decision_encode().
 */
typedef struct TsClockDecision
{
	uint64_t	khz;			/* frequency in use, 0 if none */
	bool		usable;			/* 'tsc' may use the counter */
	bool		auto_ok;		/* 'auto' uses it */
} TsClockDecision;

/* room for the text form of any decision, terminator included */
#define TSCLOCK_DECISION_LEN	64

/* The process-wide result, valid once tsclock_detect() has run. */
extern TsClockInfo tsclock_info;

/*
 * Probe the CPU, determine the frequency, calibrate, decide usability.
 * Idempotent: does the work only on the first call in a process.
 * Honours TIMING_SOURCE_DISABLE_TSC, see tsclock_apply_env().
 */
extern void tsclock_detect(void);

/*
 * Honour TIMING_SOURCE_DISABLE_TSC and the test-only TIMING_SOURCE_TEST_KHZ
 * (done by tsclock_detect)
 */
extern void tsclock_apply_env(TsClockInfo *info);

/*
 * Re-read the operating system's clocksource and re-decide whether 'auto'
 * may use the TSC (nothing else changes).  Returns true if the clocksource
 * changed.
 */
extern bool tsclock_recheck_os(TsClockInfo *info);

/*
 * What Linux's current clocksource says about the TSC: the kernel uses it,
 * uses a clock computed from it, uses a clock that does not involve it
 * (which on x86 it only does once it has found the TSC unstable, or when
 * an administrator chose so), or unknown.
 */
typedef enum TsOsClockVerdict
{
	TSCLOCK_OS_UNKNOWN,
	TSCLOCK_OS_TSC,
	TSCLOCK_OS_TSC_BASED,
	TSCLOCK_OS_NOT_TSC
} TsOsClockVerdict;

extern TsOsClockVerdict tsclock_os_clock_verdict(const char *clocksource);

/* Same as tsclock_detect() but always re-runs, ignoring the environment */
extern void tsclock_detect_into(TsClockInfo *info);

/*
 * Derive frequency, source, cross-check, usability and multiplier from a
 * probe (NULL: TSC compiled out), a calibration and the OS clocksource.
 */
extern void tsclock_decide(TsClockInfo *info, const TsCpuidRaw *raw,
						   const TsCalibration *cal,
						   const char *os_clocksource);

/*
 * The same for arm64: the generic timer's frequency register, whether the
 * counter can be read and what a read costs.  The frequency policy,
 * cross-check and conversion are exactly those of x86-64.
 */
extern void tsclock_decide_arm64(TsClockInfo *info, const TsArm64Raw *raw,
								 const TsCalibration *cal,
								 const char *os_clocksource);

/* Verdict of Linux's clocksource for the arm64 counter */
extern TsOsClockVerdict tsclock_os_clock_verdict_arm64(const char *clocksource);

/*
 * Withdraw the counter: 'tsc' and 'auto' both refuse it from now on, with
 * reason as the reason for both.  The multiplier is kept, so intervals
 * measured before still convert.
 */
extern void tsclock_set_unusable(TsClockInfo *info, const char *reason);

/*
 * Trust the counter again, at khz, after a withdrawal: 'tsc' may use it,
 * 'auto' decides as at detection (operating system's clocksource, trapped
 * read), and the frequency's source says it was re-calibrated.  Only for a
 * counter that was usable when it was withdrawn.
 */
extern void tsclock_restore(TsClockInfo *info, uint64_t khz);

/*
 * Recovery after a watchdog trip, its pure arithmetic (the state is the
 * caller's): whether two re-calibrations agree (differ by at most the sum
 * of their own error bounds plus TSCLOCK_AGREE_MARGIN_PPM), the wait after
 * a failed attempt (doubled, from base to at most max_factor times base),
 * and the wait after a trip of a trusted TSC: base if it stayed trusted
 * at least the wait it had, else doubled, so that a TSC that keeps failing
 * right after each recovery is re-judged less and less often.
 */
extern bool tsclock_calibrations_agree(uint64_t khz1, double ppm1,
									   uint64_t khz2, double ppm2);
extern int64_t tsclock_longer_backoff(int64_t us, int64_t base,
									  int max_factor);
extern int64_t tsclock_trip_backoff(int64_t us, int64_t base, int max_factor,
									int64_t trusted_for_us);

/*
 * Test seam: replace a calibration's frequency (and, given, its bound,
 * converged) by the values in the file TIMING_SOURCE_TEST_CAL_KHZ_FILE
 * names, read at each call; true if it did
 */
extern bool tsclock_apply_test_calibration(const TsClockInfo *info,
										   TsCalibration *cal);

/*
 * A decision as text, "kHz/usable/auto" (at most TSCLOCK_DECISION_LEN
 * bytes with the terminator), and back; parsing returns false for text
 * not of that form.
 */
extern void tsclock_decision_encode(const TsClockInfo *info, char *buf,
									size_t len);
extern bool tsclock_decision_parse(const char *text, TsClockDecision *d);

/*
 * Take over another process's decision instead of detecting: info becomes
 * detected, with that frequency and those verdicts (none where this build
 * has no counter), the matching multiplier, and reasons that name the
 * leader as their source.
 */
extern void tsclock_adopt_decision(TsClockInfo *info,
								   const TsClockDecision *d);

/*
 * Names of the reads: tsclock_read_name() is what the diagnostics accept
 * and print on every architecture ("system", "rdtscp", "rdtsc");
 * tsclock_read_alias() the architecture's own name that is accepted too
 * (arm64: "cntvct_isb", "cntvct"; NULL elsewhere); tsclock_read_insn()
 * what the read executes, for reports ("RDTSCP", "ISB + CNTVCT_EL0", ...).
 * tsclock_read_lookup() finds a read by either name, ignoring case.
 */
extern const char *tsclock_read_name(TsClockRead read);
extern const char *tsclock_read_alias(TsClockRead read);
extern const char *tsclock_read_insn(TsClockRead read);
extern bool tsclock_read_lookup(const char *name, TsClockRead *read);

/*
 * Whether info describes a counter this build has code for (x86-64's TSC
 * or arm64's generic timer), usable or not: without one, CPU features are
 * unknown rather than absent
 */
extern bool tsclock_has_counter(const TsClockInfo *info);

/*
 * Whether the counter can be calibrated here (an ordered read exists),
 * also when it is unusable for another reason
 */
extern bool tsclock_can_calibrate(const TsClockInfo *info);

/* Frequency bounds for the architecture info describes */
extern uint64_t tsclock_min_khz(const TsClockInfo *info);
extern uint64_t tsclock_max_khz(const TsClockInfo *info);

/* Frequency CPUID claims (kHz, 0 if none); *what names the leaf */
extern uint64_t tsclock_cpuid_khz(const TsCpuidRaw *raw, const char **what);

/* Short name of a hypervisor from its 12-byte signature */
extern void tsclock_hypervisor_name(const char *sig12, char *out, size_t len);

#ifdef TSCLOCK_X86
/* Read the CPUID leaves we need */
extern void tsclock_probe_cpuid(TsCpuidRaw *raw);
#endif
#ifdef TSCLOCK_ARM64
/* Read CNTFRQ_EL0, try a counter read, measure what reads cost */
extern void tsclock_probe_arm64(TsArm64Raw *raw);
#endif

/*
 * One calibration run (where a counter is compiled in; returns not
 * converged elsewhere)
 */
extern void tsclock_calibrate(TsCalibration *cal);

/*
 * The counter's smallest step between two reads, in ticks, observed over a
 * few thousand reads: 1 on most hardware, more where the counter is
 * incremented in steps (Armv8.6's 1 GHz counter may count in steps of the
 * underlying clock; an emulator may update it every microsecond).  Its
 * reads are that much coarser, which calibration's error bound includes.
 */
extern uint64_t tsclock_counter_step(void);

/*
 * Read Linux's current clocksource into buf (from the file named by
 * TIMING_SOURCE_CLOCKSOURCE_FILE if set, a test seam); false if unavailable
 */
extern bool tsclock_read_os_clocksource(char *buf, size_t len);

/*
 * The CPUs a cgroup v2 "cpu.max" line ("<quota> <period>" or "max
 * <period>") allows, rounded up; 0 for no limit or a line not understood
 */
extern int	tsclock_cpu_quota_parse(const char *cpu_max);

/* the same for this process's cgroup, 0 where none limits it */
extern int	tsclock_cpu_quota(void);

/* Multiplier for a frequency, for tsclock_ticks_to_ns_mult() */
extern uint64_t tsclock_mult_for_khz(uint64_t khz);

/*
 * Tick to nanosecond conversion, rounded to the nearest nanosecond:
 *
 *	 ns = (ticks * mult + 2^29) >> 30,	 mult = round(10^6 * 2^30 / khz)
 *
 * computed with a 64 x 64 -> 128-bit product, so it is exact for any
 * 64-bit tick count whose result fits in 64 bits, at any frequency.
 * Splitting ticks at bit 30 and multiplying the low part in 64 bits would
 * need mult < 2^34, i.e. khz > 62.5 MHz, which the arm64 generic timer's
 * common 24 MHz is not.  One widening multiply (MUL on x86-64, MUL + UMULH
 * on arm64), no branch.
 *
 * Rounding rather than truncating matters for per-node timing: intervals
 * are often a few dozen ticks, and truncation would bias every one by half
 * a nanosecond, milliseconds over millions of rows.  The only other error
 * is the rounding of mult, below 1 part in mult (< 5e-9 at 5 GHz, < 3e-11
 * at 24 MHz).
 *
 * Without a 128-bit type (not any compiler this is built with on Linux),
 * the split version is used; it is exact for mult < 2^34 only.
 */
static inline uint64_t
tsclock_ticks_to_ns_mult(uint64_t ticks, uint64_t mult)
{
#ifdef __SIZEOF_INT128__
	return (uint64_t) (((unsigned __int128) ticks * mult +
						(UINT64_C(1) << (TSCLOCK_SHIFT - 1))) >> TSCLOCK_SHIFT);
#else
	uint64_t	hi = ticks >> TSCLOCK_SHIFT;
	uint64_t	lo = ticks & ((UINT64_C(1) << TSCLOCK_SHIFT) - 1);

	return hi * mult +
		((lo * mult + (UINT64_C(1) << (TSCLOCK_SHIFT - 1))) >> TSCLOCK_SHIFT);
#endif
}

static inline uint64_t
tsclock_ticks_to_ns(uint64_t ticks)
{
	return tsclock_ticks_to_ns_mult(ticks, tsclock_info.mult);
}

/* System clock (CLOCK_MONOTONIC) in nanoseconds */
static inline uint64_t
tsclock_system_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec;
}

/*
 * Counter reads, two kinds:
 *
 * tsclock_read_fast(): not ordered against surrounding instructions; for
 * per-node timing, where a few instructions of skew cancel out over many
 * intervals.  x86-64: RDTSC.  arm64: MRS CNTVCT_EL0.
 *
 * tsclock_read_ordered(): waits for every earlier instruction to complete
 * first; for calibration, the watchdog and the diagnostics.  x86-64:
 * RDTSCP.  arm64: ISB, then MRS CNTVCT_EL0 (the ISB is what Linux's vDSO
 * puts before its own read).
 *
 * tsclock_order_after(): keeps later instructions from starting before the
 * preceding read (x86-64: LFENCE; arm64: ISB).
 */
#if defined(TSCLOCK_X86)
static inline uint64_t
tsclock_read_fast(void)
{
	return __rdtsc();
}

static inline uint64_t
tsclock_read_ordered(void)
{
	unsigned int aux;

	return __rdtscp(&aux);
}

static inline void
tsclock_order_after(void)
{
	_mm_lfence();
}
#elif defined(TSCLOCK_ARM64)
static inline uint64_t
tsclock_read_fast(void)
{
	uint64_t	v;

	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	return v;
}

static inline uint64_t
tsclock_read_ordered(void)
{
	uint64_t	v;

	__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
}

static inline void
tsclock_order_after(void)
{
	__asm__ __volatile__("isb" : : : "memory");
}
#endif

/*
 * One read of the given kind; the system clock where no counter is built.
 * Always inlined, so that a measuring loop with a constant kind reads
 * directly.
 */
#if defined(__GNUC__)
#define TSCLOCK_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define TSCLOCK_ALWAYS_INLINE inline
#endif

static TSCLOCK_ALWAYS_INLINE uint64_t
tsclock_read_kind(TsClockRead read)
{
#ifdef TSCLOCK_HAVE_TSC
	if (read == TSCLOCK_READ_ORDERED)
		return tsclock_read_ordered();
	if (read == TSCLOCK_READ_FAST)
		return tsclock_read_fast();
#endif
	return tsclock_system_ns();
}

#endif							/* TSCLOCK_H */
