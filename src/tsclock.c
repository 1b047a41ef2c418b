/*-------------------------------------------------------------------------
 *
 * tsclock.c
 *	  CPU feature probe, TSC frequency detection and calibration.
 *
 * Order of trust for the TSC frequency:
 *
 *	 - inside a hypervisor, only the hypervisor's timing leaf 0x40000010
 *	   (kHz in EAX), and only for KVM and VMware, which define it, and only
 *	   when the hypervisor's maximum leaf reaches it.  Leaves 0x15/0x16 are
 *	   never used inside a virtual machine: hypervisors pass them through
 *	   or fill them in ways known to be wildly wrong;
 *	 - on bare metal, leaf 0x15 (crystal clock and TSC/crystal ratio), then
 *	   leaf 0x16 (processor base frequency in MHz);
 *	 - otherwise calibration against CLOCK_MONOTONIC.
 *
 * A CPUID frequency is always checked against a converged calibration
 * (up to TSCLOCK_CAL_ATTEMPTS runs at detection): it is used only where the
 * two agree within the calibration's error bound plus
 * TSCLOCK_AGREE_MARGIN_PPM, otherwise the calibrated frequency is used;
 * when they disagree by more than TSCLOCK_CROSSCHECK_PCT, or calibration
 * never converged so the CPUID value cannot be checked, the TSC is not used
 * at all, because a wrong frequency silently scales every timing.
 *
 * Calibration brackets each system clock read between two RDTSCP reads
 * and keeps, at both ends of the measured interval, the tightest bracket
 * seen.  The frequency is the tick difference of the bracket midpoints
 * over the system clock difference; the half-widths of the two brackets
 * bound the error, so the run stops as soon as that bound is below
 * TSCLOCK_CAL_TARGET_PPM (normally long before the limit), or after
 * TSCLOCK_CAL_MAX_NS in any case.  A preempted read only produces a wide
 * bracket, which is never the tightest, so it cannot skew the result.
 *
 * arm64.  The counter is the generic timer's virtual count, CNTVCT_EL0,
 * read ordered (ISB first) for calibration and diagnostics and plain for
 * per-node timing, like RDTSCP and RDTSC.  Its frequency register,
 * CNTFRQ_EL0, is programmed by firmware, which some boards get wrong, so it
 * plays the part of the CPUID frequency: the same policy, cross-check and
 * bounds apply (within the arm64 frequency range, 1 MHz to 5 GHz).  Note
 * that Linux itself takes the counter's rate from CNTFRQ_EL0 unless the
 * device tree's "clock-frequency" overrides it, and CLOCK_MONOTONIC, which
 * calibration measures against, is computed from the same counter: where
 * the kernel and CNTFRQ_EL0 share a wrong value, calibration cannot see
 * it (and the whole system's clock is then off).  The architecture
 * requires one system counter for all CPUs, running at a constant rate, so
 * there is nothing like the invariant-TSC and TSC_ADJUST questions of
 * x86-64.  What can go wrong instead:
 *
 *	 - EL0 access disabled (CNTKCTL_EL1.EL0VCTEN clear): the read faults.
 *	   Linux enables it except on CPUs with a timer erratum whose
 *	   workaround needs the kernel to read the counter (Freescale A-008585,
 *	   HiSilicon 161010101, Arm Cortex-A73 858921, Allwinner A64); there it
 *	   traps and emulates every user-space read, which stays correct but
 *	   costs about a system call.  Detection reads the counter once with a
 *	   SIGILL handler in place (unusable if it faults), and measures an
 *	   ordered read against a trivial system call: at
 *	   TSCLOCK_ARM64_TRAP_FRACTION of a system call or more, the read is
 *	   taken as trapped, and 'auto' does not use the counter ('tsc' may:
 *	   the values are right, only slow);
 *	 - the kernel not using the counter at all: Linux's clocksource is then
 *	   something other than "arch_sys_counter", and 'auto' declines, as
 *	   on x86-64 for anything but "tsc".
 *
 * Resolution: at 24-25 MHz a tick is about 40 ns, so a single short node
 * interval is quantized to whole ticks.  The quantization does not bias
 * per-node totals: an interval of d ticks (d real) reads as floor(d) or
 * ceil(d) depending on where between two ticks it starts, and over many
 * intervals starting at unrelated phases the average reading is d.  The
 * conversion itself rounds to the nearest nanosecond (tsclock.h).
 *
 * No PostgreSQL headers here: see tsclock.h.
 *
 *-------------------------------------------------------------------------
 */
#include "tsclock.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifdef TSCLOCK_X86
#include <cpuid.h>
#endif
#ifdef TSCLOCK_HAVE_TSC
#include <sys/syscall.h>
#include <unistd.h>
#endif
#ifdef TSCLOCK_ARM64
#include <setjmp.h>
#include <signal.h>
#endif

TsClockInfo tsclock_info;

/* Known hypervisor signatures (CPUID 0x40000000 EBX:ECX:EDX) */
static const struct
{
	const char *signature;
	const char *name;
}			hv_names[] =
{
	{"KVMKVMKVM", "kvm"},
	{"VMwareVMware", "vmware"},
	{"Microsoft Hv", "hyperv"},
	{"XenVMMXenVMM", "xen"},
	{"TCGTCGTCGTCG", "tcg"},
	{"VBoxVBoxVBox", "virtualbox"},
	{"bhyve bhyve ", "bhyve"},
	{" lrpepyh  vr", "parallels"},
	{"ACRNACRNACRN", "acrn"},
	{"QNXQVMBSQG", "qnx"},
};

/*
 * Name a hypervisor from its raw 12-byte signature: a known short name, or
 * else the signature itself with non-printable bytes dropped.
 */
void
tsclock_hypervisor_name(const char *sig12, char *out, size_t len)
{
	char		sig[13];
	size_t		i,
				n = 0;

	memcpy(sig, sig12, 12);
	sig[12] = '\0';

	for (i = 0; i < sizeof(hv_names) / sizeof(hv_names[0]); i++)
	{
		if (strcmp(sig, hv_names[i].signature) == 0)
		{
			snprintf(out, len, "%s", hv_names[i].name);
			return;
		}
	}

	for (i = 0; i < 12 && sig[i] != '\0' && n + 1 < len; i++)
	{
		if (sig[i] > ' ' && sig[i] < 127)
			out[n++] = sig[i];
	}
	out[n] = '\0';
	if (n == 0)
		snprintf(out, len, "unknown");
}

uint64_t
tsclock_mult_for_khz(uint64_t khz)
{
	if (khz == 0)
		return 0;
	/* round(10^6 * 2^30 / khz); 10^6 * 2^30 < 2^50, no overflow */
	return ((UINT64_C(1000000) << TSCLOCK_SHIFT) + khz / 2) / khz;
}

bool
tsclock_read_os_clocksource(char *buf, size_t len)
{
	const char *path = getenv("TIMING_SOURCE_CLOCKSOURCE_FILE");
	FILE	   *f;
	size_t		n;

	buf[0] = '\0';
	if (path == NULL || path[0] == '\0')
		path = TSCLOCK_CLOCKSOURCE_PATH;
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	if (fgets(buf, (int) len, f) == NULL)
		buf[0] = '\0';
	fclose(f);

	n = strlen(buf);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return n > 0;
}

int
tsclock_cpu_quota_parse(const char *cpu_max)
{
	long long	quota;
	long long	period;

	if (cpu_max == NULL ||
		sscanf(cpu_max, "%lld %lld", &quota, &period) != 2 ||
		quota <= 0 || period <= 0)
		return 0;
	if (quota / period >= INT_MAX)
		return 0;
	return (int) ((quota + period - 1) / period);
}

/*
 * A container's CPU limit is a quota on its cgroup's time, not a narrower
 * affinity mask: its processes may run on every CPU of the host but get
 * only so many CPUs' worth of time.  The cgroup is the one /proc/self/cgroup
 * names (cgroup v2, "0::<path>"); inside a cgroup namespace that is "/",
 * the container's own.  cgroup v1 is not read.
 */
int
tsclock_cpu_quota(void)
{
	char		line[1024];
	char		path[1200];
	char		buf[128];
	FILE	   *f;
	int			cpus = 0;

	path[0] = '\0';
	f = fopen("/proc/self/cgroup", "r");
	if (f != NULL)
	{
		while (fgets(line, sizeof(line), f) != NULL)
		{
			size_t		n = strlen(line);

			if (strncmp(line, "0::", 3) != 0)
				continue;
			while (n > 0 && line[n - 1] == '\n')
				line[--n] = '\0';
			snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cpu.max",
					 strcmp(line + 3, "/") == 0 ? "" : line + 3);
			break;
		}
		fclose(f);
	}
	if (path[0] == '\0')
		return 0;
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	if (fgets(buf, sizeof(buf), f) != NULL)
		cpus = tsclock_cpu_quota_parse(buf);
	fclose(f);
	return cpus;
}

/*
 * Linux ranks its x86 clocksources (tsc 300, hpet 250, acpi_pm 200,
 * jiffies 1) and runs on the best one it trusts; its clocksource watchdog
 * demotes the TSC when it drifts against another clock ("Marking
 * clocksource 'tsc' as unstable") and the kernel then switches to hpet or
 * acpi_pm.  Paravirtual clocks (kvm-clock, Xen's and Hyper-V's TSC page)
 * are computed from the TSC, and the kernel may prefer them to a perfectly
 * good TSC, so they say nothing either way.  Any other clocksource on a
 * TSC machine means the kernel, or its administrator, does not trust the
 * TSC.
 */
TsOsClockVerdict
tsclock_os_clock_verdict(const char *clocksource)
{
	static const char *const tsc_based[] = {
		"kvm-clock", "xen", "hyperv_clocksource_tsc_page", "vmware-tsc"
	};
	size_t		i;

	if (clocksource == NULL || clocksource[0] == '\0')
		return TSCLOCK_OS_UNKNOWN;
	if (strcmp(clocksource, "tsc") == 0 || strcmp(clocksource, "tsc-early") == 0)
		return TSCLOCK_OS_TSC;
	for (i = 0; i < sizeof(tsc_based) / sizeof(tsc_based[0]); i++)
		if (strcmp(clocksource, tsc_based[i]) == 0)
			return TSCLOCK_OS_TSC_BASED;
	return TSCLOCK_OS_NOT_TSC;
}

/*
 * arm64: "arch_sys_counter" is the generic timer read through CNTVCT_EL0,
 * which is what Linux uses whenever it can; "arch_mem_counter" (the same
 * counter through memory-mapped registers, used only when the system
 * register one is not available) and anything else mean the kernel does
 * not use CNTVCT_EL0.
 */
TsOsClockVerdict
tsclock_os_clock_verdict_arm64(const char *clocksource)
{
	if (clocksource == NULL || clocksource[0] == '\0')
		return TSCLOCK_OS_UNKNOWN;
	if (strcmp(clocksource, "arch_sys_counter") == 0)
		return TSCLOCK_OS_TSC;
	return TSCLOCK_OS_NOT_TSC;
}

uint64_t
tsclock_min_khz(const TsClockInfo *info)
{
	return info->arm64 ? TSCLOCK_ARM64_MIN_KHZ : TSCLOCK_MIN_KHZ;
}

uint64_t
tsclock_max_khz(const TsClockInfo *info)
{
	return info->arm64 ? TSCLOCK_ARM64_MAX_KHZ : TSCLOCK_MAX_KHZ;
}

/*
 * arm64: 'auto' uses the counter when it is usable, the kernel uses it too
 * (or its clocksource cannot be read: the architecture guarantees one
 * counter for all CPUs, so there is no synchronization question), and the
 * reads are not trapped.
 */
/*
 * A counter read that costs a good part of a system call is not the
 * hardware's: the kernel (arm64 timer errata) or the hypervisor (an
 * emulated TSC, nested virtualisation) traps it and computes the value,
 * which is right but costs a kernel or VM exit.  A real read costs tens of
 * cycles.  The system call, not clock_gettime(), is the yardstick: the
 * vDSO's clock_gettime() reads the same counter, so it is trapped too and
 * would hide the trap; and on hardware whose reads cost about 10 ns it
 * takes about 25, too close to tell.  0 means not measured.
 */
static bool
read_looks_trapped(double read_ns, double syscall_ns)
{
	return read_ns > 0 && syscall_ns > 0 &&
		read_ns >= TSCLOCK_TRAP_FRACTION * syscall_ns;
}

static void
decide_auto_arm64(TsClockInfo *info)
{
	const char *cs = info->os_clocksource[0] ? info->os_clocksource : "unknown";

	info->auto_ok = false;
	if (!info->usable)
		snprintf(info->auto_reason, sizeof(info->auto_reason), "%s",
				 info->reason);
	else if (tsclock_os_clock_verdict_arm64(info->os_clocksource) == TSCLOCK_OS_NOT_TSC)
		snprintf(info->auto_reason, sizeof(info->auto_reason),
				 "The operating system's clocksource is \"%s\", not \"arch_sys_counter\": the kernel does not use the CPU's generic timer counter.",
				 cs);
	else if (info->read_trapped)
		snprintf(info->auto_reason, sizeof(info->auto_reason),
				 "Reading the counter costs %.0f ns, as much as a system call (%.0f ns): the kernel traps and emulates user-space counter reads (a timer erratum workaround), so the system clock is no slower.",
				 info->read_ns, info->syscall_ns);
	else
		info->auto_ok = true;
	if (info->auto_ok)
		info->auto_reason[0] = '\0';
}

/*
 * 'auto' uses the TSC only when it is usable, the kernel has not moved off
 * it, and there is evidence that it is synchronized across CPUs: the
 * kernel uses it directly (it checks synchronization at boot), or the CPU
 * has TSC_ADJUST, which lets the kernel keep the CPUs' counters in step.
 */
static void
decide_auto(TsClockInfo *info)
{
	const char *cs = info->os_clocksource[0] ? info->os_clocksource : "unknown";

	if (info->arm64)
	{
		decide_auto_arm64(info);
		return;
	}
	info->auto_ok = false;
	if (!info->usable)
		snprintf(info->auto_reason, sizeof(info->auto_reason), "%s",
				 info->reason);
	else if (info->read_trapped)
		snprintf(info->auto_reason, sizeof(info->auto_reason),
				 "Reading the TSC costs %.0f ns, as much as a system call (%.0f ns): the hypervisor traps and emulates RDTSC (an emulated TSC), so the system clock is no slower.",
				 info->read_ns, info->syscall_ns);
	else
	{
		switch (tsclock_os_clock_verdict(info->os_clocksource))
		{
			case TSCLOCK_OS_TSC:
				info->auto_ok = true;
				break;
			case TSCLOCK_OS_NOT_TSC:
				snprintf(info->auto_reason, sizeof(info->auto_reason),
						 "The operating system's clocksource is \"%s\", not \"tsc\": the kernel has stopped trusting the TSC (its clocksource watchdog found it unstable) or an administrator chose another clock.",
						 cs);
				break;
			case TSCLOCK_OS_TSC_BASED:
			case TSCLOCK_OS_UNKNOWN:
				if (info->tsc_adjust)
					info->auto_ok = true;
				else
					snprintf(info->auto_reason, sizeof(info->auto_reason),
							 "The CPU does not report TSC_ADJUST (CPUID 7 EBX bit 1) and the operating system's clocksource is \"%s\", not \"tsc\".",
							 cs);
				break;
		}
	}
	if (info->auto_ok)
		info->auto_reason[0] = '\0';
}

bool
tsclock_recheck_os(TsClockInfo *info)
{
	char		cs[sizeof(info->os_clocksource)];

	tsclock_read_os_clocksource(cs, sizeof(cs));
	if (strcmp(cs, info->os_clocksource) == 0)
		return false;
	memcpy(info->os_clocksource, cs, sizeof(cs));
	decide_auto(info);
	return true;
}

/*
 * Frequency claimed by CPUID, from raw register values: see the order of
 * trust at the top of the file.  Returns kHz, or 0 when CPUID says nothing
 * usable; *what names the leaf used.
 */
uint64_t
tsclock_cpuid_khz(const TsCpuidRaw *raw, const char **what)
{
	*what = "";

	if (raw->hypervisor)
	{
		char		name[32];

		tsclock_hypervisor_name(raw->hv_signature, name, sizeof(name));
		if ((strcmp(name, "kvm") == 0 || strcmp(name, "vmware") == 0) &&
			raw->hv_max_leaf >= 0x40000010 && raw->hv_10_eax != 0)
		{
			*what = "cpuid 0x40000010";
			return raw->hv_10_eax;
		}
		return 0;
	}

	/* Leaf 0x15: TSC = crystal * EBX / EAX, if all three are known */
	if (raw->max_leaf >= 0x15 && raw->l15_eax != 0 && raw->l15_ebx != 0 &&
		raw->l15_ecx != 0)
	{
		*what = "cpuid 0x15";
		return ((uint64_t) raw->l15_ecx * raw->l15_ebx / raw->l15_eax) / 1000;
	}

	/* Leaf 0x16: processor base frequency in MHz */
	if (raw->max_leaf >= 0x16 && (raw->l16_eax & 0xffff) != 0)
	{
		*what = "cpuid 0x16";
		return (uint64_t) (raw->l16_eax & 0xffff) * 1000;
	}

	return 0;
}

static void frequency_policy(TsClockInfo *info, const TsCalibration *cal,
							 const char *prefix, const char *what);
static void frequency_usable(TsClockInfo *info, const TsCalibration *cal,
							 const char *counter, const char *reporter,
							 const char *claim);

/*
 * Decide everything derived from the raw probe, the calibration and the
 * operating system's clocksource: frequency in use and its source string,
 * cross-check, usability for 'tsc' and for 'auto', and the conversion
 * multiplier.  Pure function of its inputs, so that it can be unit tested
 * with the values of machines we do not have.
 */
void
tsclock_decide(TsClockInfo *info, const TsCpuidRaw *raw,
			   const TsCalibration *cal, const char *os_clocksource)
{
	const char *what;
	char		prefix[64];

	memset(info, 0, sizeof(*info));
	info->detected = true;
	info->cal = *cal;
	snprintf(info->os_clocksource, sizeof(info->os_clocksource), "%s",
			 os_clocksource ? os_clocksource : "");

	if (raw == NULL)
	{
		/* TSC code compiled out */
		snprintf(info->freq_source, sizeof(info->freq_source), "none");
		tsclock_set_unusable(info,
							 "This build of timing_source is not for x86-64 or arm64, so only the system clock is available.");
		return;
	}

	info->x86_64 = true;
	info->read_ns = raw->read_ns;
	info->syscall_ns = raw->syscall_ns;
	info->read_trapped = raw->rdtscp &&
		read_looks_trapped(raw->read_ns, raw->syscall_ns);
	info->rdtscp = raw->rdtscp;
	info->invariant = raw->invariant;
	info->tsc_adjust = raw->tsc_adjust;
	info->hypervisor = raw->hypervisor;
	if (raw->hypervisor)
	{
		memcpy(info->hv_signature, raw->hv_signature, 12);
		info->hv_signature[12] = '\0';
		tsclock_hypervisor_name(raw->hv_signature, info->hv_name,
								sizeof(info->hv_name));
		info->hv_max_leaf = raw->hv_max_leaf;
		snprintf(prefix, sizeof(prefix), "x86, hypervisor (%s), ",
				 info->hv_name);
	}
	else
		snprintf(prefix, sizeof(prefix), "x86, ");

	info->cpuid_khz = tsclock_cpuid_khz(raw, &what);
	snprintf(info->cpuid_what, sizeof(info->cpuid_what), "%s", what);
	frequency_policy(info, cal, prefix, what);

	/* Usability for an explicit 'tsc', most fundamental reason first */
	if (!raw->rdtscp)
		snprintf(info->reason, sizeof(info->reason),
				 "The CPU does not support the RDTSCP instruction (CPUID 0x80000001 EDX bit 27).");
	else if (!raw->invariant)
		snprintf(info->reason, sizeof(info->reason),
				 "The TSC is not invariant (CPUID 0x80000007 EDX bit 8 is clear), so its rate may change with CPU power states.");
	else
	{
		char		claim[96];

		snprintf(claim, sizeof(claim), "CPUID (%s)", what);
		frequency_usable(info, cal, "TSC", "CPUID", claim);
	}

	decide_auto(info);

	if (info->usable)
		info->mult = tsclock_mult_for_khz(info->khz);
}

/*
 * The frequency policy, shared by the architectures: info->cpuid_khz (what
 * the hardware claims, 0 if nothing) against the calibration.
 */
static void
frequency_policy(TsClockInfo *info, const TsCalibration *cal,
				 const char *prefix, const char *what)
{
	if (info->cpuid_khz != 0 && cal->converged)
	{
		double		cal_khz = cal->hz / 1000.0;

		info->have_ppm = true;
		info->calibration_ppm =
			((double) info->cpuid_khz - cal_khz) / cal_khz * 1e6;
		if (fabs(info->calibration_ppm) <=
			cal->uncertainty_ppm + TSCLOCK_AGREE_MARGIN_PPM)
		{
			/* confirmed: an exact CPUID value beats any measurement */
			info->khz = info->cpuid_khz;
			info->cpuid_used = true;
			snprintf(info->freq_source, sizeof(info->freq_source), "%s%s",
					 prefix, what);
		}
		else
		{
			/* CPUID is nominal or wrong: the measurement is better */
			info->khz = cal->khz;
			snprintf(info->freq_source, sizeof(info->freq_source),
					 "%scalibration (%s reports %llu kHz, %+.0f ppm off)",
					 prefix, what, (unsigned long long) info->cpuid_khz,
					 info->calibration_ppm);
		}
	}
	else if (info->cpuid_khz != 0)
	{
		/* reported, but unchecked: not usable, see below */
		info->khz = info->cpuid_khz;
		info->cpuid_used = true;
		snprintf(info->freq_source, sizeof(info->freq_source), "%s%s",
				 prefix, what);
	}
	else if (cal->converged)
	{
		info->khz = cal->khz;
		snprintf(info->freq_source, sizeof(info->freq_source),
				 "%scalibration", prefix);
	}
	else
		snprintf(info->freq_source, sizeof(info->freq_source),
				 "%sunknown", prefix);
}

/*
 * Usability as far as the frequency goes: known, checked by a converged
 * calibration, the cross-check passed, within the architecture's bounds.
 * counter names the counter ("TSC"), reporter what reports a frequency
 * ("CPUID"), claim the exact source ("CPUID (cpuid 0x15)").
 */
static void
frequency_usable(TsClockInfo *info, const TsCalibration *cal,
				 const char *counter, const char *reporter, const char *claim)
{
	if (info->khz == 0)
		snprintf(info->reason, sizeof(info->reason),
				 "The %s frequency is not reported by %s and calibration against the system clock did not converge.",
				 counter, reporter);
	else if (!cal->converged)
		snprintf(info->reason, sizeof(info->reason),
				 "%s reports a %s frequency of %llu kHz, but calibration against the system clock did not converge, so it cannot be checked.",
				 claim, counter, (unsigned long long) info->cpuid_khz);
	else if (info->have_ppm &&
			 fabs(info->calibration_ppm) > TSCLOCK_CROSSCHECK_PCT * 1e4)
		snprintf(info->reason, sizeof(info->reason),
				 "%s reports a %s frequency of %llu kHz but calibration measured %llu kHz; they disagree by %.0f%%.",
				 claim, counter, (unsigned long long) info->cpuid_khz,
				 (unsigned long long) cal->khz,
				 fabs(info->calibration_ppm) / 1e4);
	else if (info->khz < tsclock_min_khz(info) || info->khz > tsclock_max_khz(info))
		snprintf(info->reason, sizeof(info->reason),
				 "The %s frequency of %llu kHz is outside the plausible range of %llu to %llu kHz.",
				 counter, (unsigned long long) info->khz,
				 (unsigned long long) tsclock_min_khz(info),
				 (unsigned long long) tsclock_max_khz(info));
	else
		info->usable = true;
}

/*
 * arm64: the same decision from the generic timer's registers, see the
 * notes at the top of the file.
 */
void
tsclock_decide_arm64(TsClockInfo *info, const TsArm64Raw *raw,
					 const TsCalibration *cal, const char *os_clocksource)
{
	const char *what = "cntfrq_el0";

	memset(info, 0, sizeof(*info));
	info->detected = true;
	info->arm64 = true;
	info->cal = *cal;
	snprintf(info->os_clocksource, sizeof(info->os_clocksource), "%s",
			 os_clocksource ? os_clocksource : "");
	/* the architecture requires a constant-rate counter */
	info->invariant = true;
	info->el0_readable = raw->el0_readable;
	info->read_ns = raw->read_ns;
	info->syscall_ns = raw->syscall_ns;
	info->read_trapped = raw->el0_readable &&
		read_looks_trapped(raw->read_ns, raw->syscall_ns);

	/* CNTFRQ_EL0 is 32 bits wide; round to kHz, 0 stays 0 */
	info->cpuid_khz = raw->el0_readable ? (raw->cntfrq_hz + 500) / 1000 : 0;
	if (info->cpuid_khz != 0)
		snprintf(info->cpuid_what, sizeof(info->cpuid_what), "%s", what);
	frequency_policy(info, cal, "arm64, ", what);

	if (!raw->el0_readable)
		snprintf(info->reason, sizeof(info->reason),
				 "Reading the counter (CNTVCT_EL0) from user space faults: the kernel has not enabled user-space access (CNTKCTL_EL1.EL0VCTEN).");
	else
		frequency_usable(info, cal, "counter", "CNTFRQ_EL0", "CNTFRQ_EL0");

	decide_auto(info);

	if (info->usable)
		info->mult = tsclock_mult_for_khz(info->khz);
}

#ifdef TSCLOCK_X86

static void
cpuid_leaf(uint32_t leaf, uint32_t subleaf, uint32_t r[4])
{
	__cpuid_count(leaf, subleaf, r[0], r[1], r[2], r[3]);
}

#endif							/* TSCLOCK_X86 */

#ifdef TSCLOCK_HAVE_TSC

/* Best of 8 batches: ns per ordered counter read, and per getppid() */
static void
measure_read_costs(double *read_ns, double *syscall_ns)
{
	int			b,
				i;

	*read_ns = INFINITY;
	*syscall_ns = INFINITY;
	for (b = 0; b < 8; b++)
	{
		uint64_t	t0,
					t1;
		volatile uint64_t sink = 0;

		t0 = tsclock_system_ns();
		for (i = 0; i < 64; i++)
			sink += tsclock_read_ordered();
		t1 = tsclock_system_ns();
		if ((double) (t1 - t0) / 64.0 < *read_ns)
			*read_ns = (double) (t1 - t0) / 64.0;

		t0 = tsclock_system_ns();
		for (i = 0; i < 16; i++)
			sink += (uint64_t) syscall(SYS_getppid);
		t1 = tsclock_system_ns();
		if ((double) (t1 - t0) / 16.0 < *syscall_ns)
			*syscall_ns = (double) (t1 - t0) / 16.0;
		(void) sink;
	}
}

#endif							/* TSCLOCK_HAVE_TSC */

#ifdef TSCLOCK_X86

void
tsclock_probe_cpuid(TsCpuidRaw *raw)
{
	uint32_t	r[4];
	uint32_t	max_ext;

	memset(raw, 0, sizeof(*raw));

	cpuid_leaf(0, 0, r);
	raw->max_leaf = r[0];

	if (raw->max_leaf >= 1)
	{
		cpuid_leaf(1, 0, r);
		raw->hypervisor = (r[2] >> 31) & 1;
	}
	if (raw->max_leaf >= 7)
	{
		cpuid_leaf(7, 0, r);
		raw->tsc_adjust = (r[1] >> 1) & 1;
	}

	cpuid_leaf(0x80000000, 0, r);
	max_ext = r[0];
	if (max_ext >= 0x80000001)
	{
		cpuid_leaf(0x80000001, 0, r);
		raw->rdtscp = (r[3] >> 27) & 1;
	}
	if (max_ext >= 0x80000007)
	{
		cpuid_leaf(0x80000007, 0, r);
		raw->invariant = (r[3] >> 8) & 1;
	}

	if (raw->hypervisor)
	{
		cpuid_leaf(0x40000000, 0, r);
		raw->hv_max_leaf = r[0];
		memcpy(raw->hv_signature + 0, &r[1], 4);
		memcpy(raw->hv_signature + 4, &r[2], 4);
		memcpy(raw->hv_signature + 8, &r[3], 4);
		if (raw->hv_max_leaf >= 0x40000010 && raw->hv_max_leaf < 0x40010000)
		{
			cpuid_leaf(0x40000010, 0, r);
			raw->hv_10_eax = r[0];
		}
	}
	else
	{
		if (raw->max_leaf >= 0x15)
		{
			cpuid_leaf(0x15, 0, r);
			raw->l15_eax = r[0];
			raw->l15_ebx = r[1];
			raw->l15_ecx = r[2];
		}
		if (raw->max_leaf >= 0x16)
		{
			cpuid_leaf(0x16, 0, r);
			raw->l16_eax = r[0];
		}
	}

	/* the ordered read is RDTSCP: only where the CPU has it */
	if (raw->rdtscp)
		measure_read_costs(&raw->read_ns, &raw->syscall_ns);
}

#endif							/* TSCLOCK_X86 */

#ifdef TSCLOCK_ARM64

static sigjmp_buf probe_jmp;

static void
probe_sigill(int signo)
{
	siglongjmp(probe_jmp, 1);
}

static inline uint64_t
read_cntfrq(void)
{
	uint64_t	v;

	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(v));
	return v;
}

/*
 * The counter and its frequency register are read once with a SIGILL
 * handler in place, which is restored afterwards: where user-space access
 * is disabled and the kernel does not emulate the read, the probe says so
 * instead of killing the process.
 */
void
tsclock_probe_arm64(TsArm64Raw *raw)
{
	struct sigaction sa,
				old;

	memset(raw, 0, sizeof(*raw));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = probe_sigill;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGILL, &sa, &old) != 0)
		return;
	if (sigsetjmp(probe_jmp, 1) == 0)
	{
		(void) tsclock_read_ordered();
		raw->cntfrq_hz = read_cntfrq() & UINT64_C(0xffffffff);
		raw->el0_readable = true;
	}
	sigaction(SIGILL, &old, NULL);

	if (raw->el0_readable)
		measure_read_costs(&raw->read_ns, &raw->syscall_ns);
}

#endif							/* TSCLOCK_ARM64 */

#ifdef TSCLOCK_HAVE_TSC

uint64_t
tsclock_counter_step(void)
{
	uint64_t	step = UINT64_MAX,
				prev = tsclock_read_ordered();
	int			i;

	for (i = 0; i < 4000; i++)
	{
		uint64_t	now = tsclock_read_ordered();

		if (now > prev && now - prev < step)
			step = now - prev;
		prev = now;
	}
	return step == UINT64_MAX ? 1 : step;
}

/* One bracketed read of the system clock */
typedef struct Bracket
{
	uint64_t	tsc;			/* midpoint of the two counter reads */
	uint64_t	width;			/* ticks between them */
	uint64_t	ns;				/* system clock */
} Bracket;

static inline void
take_bracket(Bracket *b)
{
	uint64_t	t0,
				t1,
				ns;

	t0 = tsclock_read_ordered();
	tsclock_order_after();		/* keep the clock read after t0 */
	ns = tsclock_system_ns();
	t1 = tsclock_read_ordered();
	tsclock_order_after();

	b->width = t1 - t0;
	b->tsc = t0 + b->width / 2;
	b->ns = ns;
}

/* Tightest of n brackets */
static void
best_bracket(Bracket *best, int n)
{
	Bracket		b;

	take_bracket(best);
	while (--n > 0)
	{
		take_bracket(&b);
		if (b.width < best->width)
			*best = b;
	}
}

void
tsclock_calibrate(TsCalibration *cal)
{
	Bracket		start,
				window;
	uint64_t	t_begin = tsclock_system_ns();
	uint32_t	iterations = 0;
	double		hz = 0,
				ppm = INFINITY;
	uint64_t	step;
#ifdef TSCLOCK_ARM64
	const double min_hz = (double) TSCLOCK_ARM64_MIN_KHZ * 1000.0;
	const double max_hz = (double) TSCLOCK_ARM64_MAX_KHZ * 1000.0;
#else
	const double min_hz = (double) TSCLOCK_MIN_KHZ * 1000.0;
	const double max_hz = (double) TSCLOCK_MAX_KHZ * 1000.0;
#endif

	memset(cal, 0, sizeof(*cal));
	step = tsclock_counter_step();

	best_bracket(&start, 16);
	iterations += 16;

	/*
	 * Take brackets in windows of 64; after each window, estimate from the
	 * tightest bracket of that window and stop once the error bound is good
	 * enough, or the time is up.
	 */
	for (;;)
	{
		best_bracket(&window, 64);
		iterations += 64;

		if (window.ns > start.ns && window.tsc > start.tsc)
		{
			double		dticks = (double) (window.tsc - start.tsc);
			double		dns = (double) (window.ns - start.ns);

			hz = dticks * 1e9 / dns;

			/*
			 * Error bound: each midpoint is within half its bracket, plus
			 * half the counter's step (its resolution: a bracket of width
			 * 0 is still a step wide), of the true counter value at the
			 * clock read, and each clock read has 1 ns resolution.
			 */
			ppm = (((double) (start.width + window.width) / 2.0 +
					(double) step) / dticks +
				   2.0 / dns) * 1e6;
			if (ppm <= TSCLOCK_CAL_TARGET_PPM)
				break;
		}

		if (tsclock_system_ns() - t_begin >= TSCLOCK_CAL_MAX_NS)
			break;
	}

	cal->iterations = iterations;
	cal->elapsed_ns = tsclock_system_ns() - t_begin;
	cal->hz = hz;
	cal->uncertainty_ppm = ppm;
	if (hz >= min_hz && hz <= max_hz)
	{
		cal->khz = (uint64_t) llround(hz / 1000.0);
		cal->converged = (ppm <= TSCLOCK_CAL_ACCEPT_PPM);
	}
}

#endif							/* TSCLOCK_HAVE_TSC */

#if defined(TSCLOCK_X86)

void
tsclock_detect_into(TsClockInfo *info)
{
	TsCpuidRaw	raw;
	TsCalibration cal;
	char		clocksource[64];
	int			attempt;

	tsclock_probe_cpuid(&raw);
	memset(&cal, 0, sizeof(cal));
	for (attempt = 0; raw.rdtscp && attempt < TSCLOCK_CAL_ATTEMPTS; attempt++)
	{
		tsclock_calibrate(&cal);
		if (cal.converged)
			break;
	}
	tsclock_read_os_clocksource(clocksource, sizeof(clocksource));
	tsclock_decide(info, &raw, &cal, clocksource);
}

#elif defined(TSCLOCK_ARM64)

void
tsclock_detect_into(TsClockInfo *info)
{
	TsArm64Raw	raw;
	TsCalibration cal;
	char		clocksource[64];
	int			attempt;

	tsclock_probe_arm64(&raw);
	memset(&cal, 0, sizeof(cal));
	for (attempt = 0; raw.el0_readable && attempt < TSCLOCK_CAL_ATTEMPTS; attempt++)
	{
		tsclock_calibrate(&cal);
		if (cal.converged)
			break;
	}
	tsclock_read_os_clocksource(clocksource, sizeof(clocksource));
	tsclock_decide_arm64(info, &raw, &cal, clocksource);
}

#else							/* no counter compiled in */

void
tsclock_calibrate(TsCalibration *cal)
{
	memset(cal, 0, sizeof(*cal));
}

uint64_t
tsclock_counter_step(void)
{
	return 0;
}

void
tsclock_detect_into(TsClockInfo *info)
{
	TsCalibration cal;
	char		clocksource[64];

	memset(&cal, 0, sizeof(cal));
	tsclock_read_os_clocksource(clocksource, sizeof(clocksource));
	tsclock_decide(info, NULL, &cal, clocksource);
}

#endif

/*
 * Administrator's switch: TIMING_SOURCE_DISABLE_TSC set to a non-empty
 * value in the server's environment makes the TSC unusable (everything
 * else is still detected and reported).  For a machine whose TSC is known
 * to misbehave in ways CPUID cannot tell, and for testing the fallback.
 *
 * Test seam, not for production: TIMING_SOURCE_TEST_KHZ replaces the
 * frequency in use (kHz, within the sanity bounds), so that tests can make
 * the TSC run "wrong" and watch the per-query watchdog catch it.
 */
void
tsclock_apply_env(TsClockInfo *info)
{
	const char *v = getenv("TIMING_SOURCE_DISABLE_TSC");
	const char *test_khz = getenv("TIMING_SOURCE_TEST_KHZ");
	const char *test_read = getenv("TIMING_SOURCE_TEST_READ_NS");

	if (v != NULL && v[0] != '\0' && info->usable)
	{
		tsclock_set_unusable(info,
							 "The TSC was disabled by the environment variable TIMING_SOURCE_DISABLE_TSC.");
		info->mult = 0;
	}

	/*
	 * Test seam: TIMING_SOURCE_TEST_READ_NS replaces the measured cost of a
	 * counter read (ns), so that tests can make the read look trapped (or
	 * not) and see what 'auto' decides.
	 */
	if (test_read != NULL && test_read[0] != '\0' && tsclock_has_counter(info) &&
		info->syscall_ns > 0)
	{
		double		ns = strtod(test_read, NULL);

		if (ns > 0 && ns < 1e9)
		{
			info->read_ns = ns;
			info->read_trapped = read_looks_trapped(info->read_ns, info->syscall_ns);
			decide_auto(info);
		}
	}

	if (test_khz != NULL && test_khz[0] != '\0' && info->usable)
	{
		unsigned long long khz = strtoull(test_khz, NULL, 10);

		if (khz >= tsclock_min_khz(info) && khz <= tsclock_max_khz(info))
		{
			size_t		n = strlen(info->freq_source);

			info->khz = khz;
			info->cpuid_used = false;
			info->mult = tsclock_mult_for_khz(khz);
			snprintf(info->freq_source + n, sizeof(info->freq_source) - n,
					 ", overridden by TIMING_SOURCE_TEST_KHZ");
		}
	}
}

/*
 * Test seam, not for production: TIMING_SOURCE_TEST_CAL_KHZ_FILE names a
 * file whose first number (kHz, within the sanity bounds) replaces the
 * frequency a calibration measured, read afresh at each calibration, so
 * that a test can make the re-calibrations after a watchdog trip agree, or
 * not, on a rate of its choosing while the server runs.  The measured
 * error bound and convergence are kept, unless a second number follows:
 * then the calibration converged with that bound (ppm, at most
 * TSCLOCK_CAL_ACCEPT_PPM), so that a test does not depend on a real
 * calibration converging on a loaded machine.  A missing file or another
 * value changes nothing.
 */
bool
tsclock_apply_test_calibration(const TsClockInfo *info, TsCalibration *cal)
{
	const char *path = getenv("TIMING_SOURCE_TEST_CAL_KHZ_FILE");
	FILE	   *f;
	unsigned long long khz;
	double		ppm = -1;
	int			n;
	bool		ok;

	if (path == NULL || path[0] == '\0')
		return false;
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	n = fscanf(f, "%llu %lf", &khz, &ppm);
	ok = n >= 1 &&
		khz >= tsclock_min_khz(info) && khz <= tsclock_max_khz(info) &&
		(n == 1 || (ppm >= 0 && ppm <= TSCLOCK_CAL_ACCEPT_PPM));
	fclose(f);
	if (!ok)
		return false;
	cal->khz = khz;
	cal->hz = (double) khz * 1000.0;
	if (n == 2)
	{
		cal->converged = true;
		cal->uncertainty_ppm = ppm;
	}
	return true;
}

void
tsclock_restore(TsClockInfo *info, uint64_t khz)
{
	char		prefix[64];

	if (info->arm64)
		snprintf(prefix, sizeof(prefix), "arm64, ");
	else if (info->hypervisor)
		snprintf(prefix, sizeof(prefix), "x86, hypervisor (%s), ",
				 info->hv_name);
	else
		snprintf(prefix, sizeof(prefix), "x86, ");
	snprintf(info->freq_source, sizeof(info->freq_source),
			 "%sre-calibration after a watchdog trip", prefix);
	info->khz = khz;
	info->cpuid_used = false;
	info->mult = tsclock_mult_for_khz(khz);
	info->usable = true;
	info->reason[0] = '\0';
	decide_auto(info);
}

/*
 * Even the widest bound this allows (two calibrations at
 * TSCLOCK_CAL_ACCEPT_PPM) is far inside the watchdog's own tolerance; the
 * margin covers a change of the NTP slew of CLOCK_MONOTONIC between the
 * two, which are an interval apart.
 */
bool
tsclock_calibrations_agree(uint64_t khz1, double ppm1, uint64_t khz2,
						   double ppm2)
{
	double		mean = ((double) khz1 + (double) khz2) / 2.0;
	double		diff_ppm;

	if (mean <= 0)
		return false;
	diff_ppm = fabs((double) khz1 - (double) khz2) / mean * 1e6;
	return diff_ppm <= ppm1 + ppm2 + TSCLOCK_AGREE_MARGIN_PPM;
}

int64_t
tsclock_longer_backoff(int64_t us, int64_t base, int max_factor)
{
	if (us < base)
		return base;
	if (us >= base * max_factor / 2)
		return base * max_factor;
	return us * 2;
}

int64_t
tsclock_trip_backoff(int64_t us, int64_t base, int max_factor,
					 int64_t trusted_for_us)
{
	if (trusted_for_us >= us)
		return base;
	return tsclock_longer_backoff(us, base, max_factor);
}

void
tsclock_set_unusable(TsClockInfo *info, const char *reason)
{
	info->usable = false;
	info->auto_ok = false;
	snprintf(info->reason, sizeof(info->reason), "%s", reason);
	snprintf(info->auto_reason, sizeof(info->auto_reason), "%s", reason);
}

void
tsclock_decision_encode(const TsClockInfo *info, char *buf, size_t len)
{
	snprintf(buf, len, "%llu/%d/%d", (unsigned long long) info->khz,
			 (int) info->usable, (int) info->auto_ok);
}

bool
tsclock_decision_parse(const char *text, TsClockDecision *d)
{
	unsigned long long khz;
	int			usable,
				auto_ok,
				end = -1;

	/*
	 * Exactly what tsclock_decision_encode() writes: no sign (strtoull
	 * would wrap "-1"), verdicts 0 or 1, nothing after them.
	 */
	if (text == NULL || strchr(text, '-') != NULL ||
		sscanf(text, "%llu/%d/%d%n", &khz, &usable, &auto_ok, &end) != 3 ||
		end < 0 || text[end] != '\0' ||
		(usable != 0 && usable != 1) || (auto_ok != 0 && auto_ok != 1))
		return false;
	d->khz = khz;
	d->usable = (usable != 0);
	d->auto_ok = (auto_ok != 0);
	return true;
}

void
tsclock_adopt_decision(TsClockInfo *info, const TsClockDecision *d)
{
	info->detected = true;
	info->khz = d->khz;
#if defined(TSCLOCK_X86)
	info->x86_64 = true;
#elif defined(TSCLOCK_ARM64)
	info->arm64 = true;
#endif
#ifdef TSCLOCK_HAVE_TSC
	/* a frequency outside this architecture's bounds is no usable one */
	info->usable = d->usable && d->khz >= tsclock_min_khz(info) &&
		d->khz <= tsclock_max_khz(info);
	info->auto_ok = info->usable && d->auto_ok;
#else
	info->usable = info->auto_ok = false;
#endif
	info->mult = tsclock_mult_for_khz(info->usable ? d->khz : 0);
	if (!info->usable)
		snprintf(info->reason, sizeof(info->reason),
				 "The leader of this parallel worker does not use the TSC.");
	else
		info->reason[0] = '\0';
	if (!info->auto_ok)
		snprintf(info->auto_reason, sizeof(info->auto_reason),
				 "The leader of this parallel worker does not use the TSC by default.");
	else
		info->auto_reason[0] = '\0';
}

/*
 * The diagnostics keep pg_test_timing's x86 names on every architecture,
 * so that scripts work anywhere; arm64's instruction names are accepted
 * as well.
 */
static const char *const read_names[TSCLOCK_NUM_READS] = {"system", "rdtscp", "rdtsc"};

#ifdef TSCLOCK_ARM64
static const char *const read_aliases[TSCLOCK_NUM_READS] = {NULL, "cntvct_isb", "cntvct"};
static const char *const read_insns[TSCLOCK_NUM_READS] = {
	"clock_gettime (CLOCK_MONOTONIC)", "ISB + CNTVCT_EL0", "CNTVCT_EL0"
};
#else
static const char *const read_aliases[TSCLOCK_NUM_READS] = {NULL, NULL, NULL};
static const char *const read_insns[TSCLOCK_NUM_READS] = {
	"clock_gettime (CLOCK_MONOTONIC)", "RDTSCP", "RDTSC"
};
#endif

const char *
tsclock_read_name(TsClockRead read)
{
	return read_names[read];
}

const char *
tsclock_read_alias(TsClockRead read)
{
	return read_aliases[read];
}

const char *
tsclock_read_insn(TsClockRead read)
{
	return read_insns[read];
}

bool
tsclock_read_lookup(const char *name, TsClockRead *read)
{
	int			i;

	for (i = 0; i < TSCLOCK_NUM_READS; i++)
	{
		if (strcasecmp(name, read_names[i]) == 0 ||
			(read_aliases[i] != NULL && strcasecmp(name, read_aliases[i]) == 0))
		{
			*read = (TsClockRead) i;
			return true;
		}
	}
	return false;
}

bool
tsclock_has_counter(const TsClockInfo *info)
{
	return info->x86_64 || info->arm64;
}

bool
tsclock_can_calibrate(const TsClockInfo *info)
{
	return (info->x86_64 && info->rdtscp) ||
		(info->arm64 && info->el0_readable);
}

void
tsclock_detect(void)
{
	if (!tsclock_info.detected)
	{
		tsclock_detect_into(&tsclock_info);
		tsclock_apply_env(&tsclock_info);
	}
}
