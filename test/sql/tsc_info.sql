--
-- timing_source_tsc(): shape and consistency (host-independent output).
--
SELECT count(*) AS rows FROM timing_source_tsc();

SELECT a.name, a.type
  FROM pg_proc p,
       unnest(p.proargnames, p.proallargtypes::regtype[]) WITH ORDINALITY AS a(name, type, n)
 WHERE p.oid = 'timing_source_tsc()'::regprocedure
 ORDER BY a.n;

SELECT
    (reason_unusable IS NULL) = available AS reason_null_iff_available,
    -- x86-64: 100 MHz to 20 GHz; arm64's generic timer: 1 MHz to 5 GHz
    NOT available OR
        CASE WHEN frequency_source ~ '^arm64' THEN frequency_khz BETWEEN 1000 AND 5000000
             ELSE frequency_khz BETWEEN 100000 AND 20000000 END AS frequency_plausible,
    -- RDTSCP is an x86 concept: NULL on arm64, whose counter is invariant
    -- by architecture
    NOT available OR (coalesce(rdtscp, frequency_source ~ '^arm64') AND invariant)
        AS usable_needs_rdtscp_and_invariant,
    (rdtscp IS NULL) = (tsc_adjust IS NULL) AND
        (rdtscp IS NULL) = (frequency_source ~ '^(arm64|none)') AS x86_features_null_off_x86,
    frequency_source ~ '^(x86, (hypervisor \([^)]+\), )?(cpuid 0x(15|16|40000010)|calibration( \(cpuid 0x(15|16|40000010) reports [0-9]+ kHz, [+-][0-9]+ ppm off\))?|unknown)|arm64, (cntfrq_el0|calibration( \(cntfrq_el0 reports [0-9]+ kHz, [+-][0-9]+ ppm off\))?|unknown)|none)$'
        AS source_well_formed,
    (frequency_source ~ 'calibration') <= (calibrated_khz IS NOT NULL) AS calibrated_source_has_value,
    (calibration_ppm IS NOT NULL) = (frequency_source ~ '(cpuid|cntfrq)' AND calibrated_khz IS NOT NULL)
        AS ppm_iff_cpuid_and_calibration,
    NOT available OR calibration_ppm IS NULL OR abs(calibration_ppm) <= 100000 AS crosscheck_holds,
    (frequency_source ~ 'calibration') <= coalesce(frequency_khz = calibrated_khz, false) AS calibrated_frequency_in_use,
    (hypervisor IS NOT NULL) = (frequency_source ~ 'hypervisor') AS hypervisor_named_in_source,
    NOT in_use OR available AS in_use_needs_available
  FROM timing_source_tsc();

-- the frequency policy: CPUID is used only where calibration confirms it
-- (within the calibration's bound of at most 100 ppm plus the 200 ppm
-- margin), otherwise calibration is used and the source says by how much
-- CPUID was off
SELECT
    NOT (available AND frequency_source ~ '(cpuid 0x[0-9a-f]+|cntfrq_el0)$')
        OR abs(calibration_ppm) <= 300 AS cpuid_in_use_is_confirmed,
    NOT (frequency_source ~ 'calibration \(')
        OR (abs(calibration_ppm) > 200
            AND frequency_source ~ ('reports ' || round(calibrated_khz * (1 + calibration_ppm / 1e6)) || ' kHz'))
        AS rejected_cpuid_named_with_its_value
  FROM timing_source_tsc();

-- 1.1 columns: why auto declines, the watchdog's and the timed calls' counts
SELECT
    -- (arm64: or because the kernel traps every counter read)
    NOT available OR auto_reason IS NULL OR auto_reason ~ '(clocksource|traps and emulates)'
        AS auto_declines_a_usable_tsc_only_for_the_os,
    available OR auto_reason = reason_unusable AS unusable_is_why_auto_declines,
    watchdog_checks >= 0 AND watchdog_failures BETWEEN 0 AND watchdog_checks AS watchdog_counts_sane,
    available OR watchdog_checks = 0 AS no_watchdog_without_tsc
  FROM timing_source_tsc();
SET timing_clock_source = 'auto';
SELECT in_use = (auto_reason IS NULL) AS auto_reason_null_iff_auto_uses_tsc
  FROM timing_source_tsc();
RESET timing_clock_source;

-- 1.3 columns: what a counter read and a system call cost at detection;
-- 'auto' declines a read of half a system call or more (trapped)
SELECT
    frequency_source <> 'none' OR (read_ns IS NULL AND syscall_ns IS NULL) AS no_costs_without_counter,
    rdtscp IS NOT TRUE OR (read_ns > 0 AND syscall_ns > 0) AS costs_measured_with_rdtscp,
    NOT available OR read_ns IS NULL OR
        CASE WHEN rdtscp IS NOT NULL
             THEN (read_ns >= syscall_ns / 2) = coalesce(auto_reason ~ '^Reading the TSC costs', false)
             ELSE coalesce(auto_reason ~ '^Reading the counter costs', false) <= (read_ns >= syscall_ns / 2) END
        AS auto_declines_a_trapped_read
  FROM timing_source_tsc();

-- 1.4 columns: the recovery after a watchdog trip (t/064 drives it); a
-- re-calibration agrees only with the one before it, and a recovery needs
-- an agreement
SELECT
    2 * recalibrations_agreed <= recalibrations AS agreed_consumes_two_calibrations,
    watchdog_recoveries BETWEEN 0 AND recalibrations_agreed AS recoveries_within_agreed,
    watchdog_failures > 0 OR recalibrations = 0 AS no_recalibration_without_a_failure
  FROM timing_source_tsc();

-- in_use follows the setting
SET timing_clock_source = 'system';
SELECT in_use FROM timing_source_tsc();
RESET timing_clock_source;
SELECT in_use = (current_setting('timing_clock_source') = 'auto (tsc)') AS in_use_follows_auto
  FROM timing_source_tsc();

-- repeated calls give the same answer: detection is done once per process
SELECT count(DISTINCT (available, frequency_khz, frequency_source, calibrated_khz)) AS distinct_answers
  FROM generate_series(1, 5), LATERAL timing_source_tsc();
