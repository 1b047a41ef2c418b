#!/usr/bin/env bash
# scripts/main.sh -- the main job: set up, build, install, start a
# throw-away cluster with timing_source preloaded, show the clock
# diagnostics, and compare EXPLAIN ANALYZE overhead with the system clock
# and with the TSC.  Run as root on Debian; the cluster is always stopped.
#
#   scripts/main.sh            diagnostics + short benchmark (3 rounds), what
#                              tracking costs (about 70 s), and the TPC-H-shaped
#                              accuracy run (4 rounds, under a minute)
#   scripts/main.sh --full     diagnostics + full benchmark (7 rounds, accuracy run 10)
set -euo pipefail

. "$(dirname "$0")/lib.sh"

bench_args=(--short --tpch)
case ${1:-} in
	--full) bench_args=(--tpch) ;;
	'') ;;
	*) ts_die "unknown argument: $1" ;;
esac

trap ts_cleanup EXIT
trap 'exit 130' INT TERM

ts_install_deps
exec 9>/tmp/timing_source-install.lock
flock 9
ts_build_install
ts_workdir
ts_cluster_start main </dev/null

ts_psql -d postgres -c 'CREATE EXTENSION timing_source'

ts_log "what was detected: timing_source_tsc()"
ts_psql -d postgres -x -c 'SELECT * FROM timing_source_tsc()'

ts_log "the session's clock source"
ts_psql -d postgres -c 'SHOW timing_clock_source'

if [ "$(ts_psql -d postgres -At -c "SELECT to_regproc('timing_source_report') IS NOT NULL")" = t ]; then
	ts_log "pg_test_timing-style report: timing_source_report(0.5)"
	ts_psql -d postgres -At -c 'SELECT * FROM timing_source_report(0.5)'

	src=$(ts_psql -d postgres -At -c "SELECT CASE WHEN available THEN 'rdtsc' ELSE 'system' END FROM timing_source_tsc()")
	ts_log "histogram of back-to-back reads: timing_source_histogram('$src', 0.5)"
	ts_psql -d postgres -c "SELECT * FROM timing_source_histogram('$src', 0.5)"

	# Calibration needs a TSC that can be read in order (RDTSCP on x86-64);
	# where there is none the function refuses with a reason, which is a
	# finding to show, not a failure of the job.
	ts_log "calibration runs: timing_source_calibrate(3)"
	if ! out=$(ts_psql -d postgres -c 'SELECT * FROM timing_source_calibrate(3)' 2>&1); then
		printf '%s\n' "$out"
		case $out in
			*"TSC calibration is not available"*)
				ts_log "calibration skipped: the TSC cannot be calibrated on this machine (the DETAIL above says why)" ;;
			*) ts_die "timing_source_calibrate failed" ;;
		esac
	else
		printf '%s\n' "$out"
	fi
fi

ts_log "EXPLAIN ANALYZE overhead: system clock vs TSC; accuracy on a TPC-H-shaped workload"
bash "$TS_ROOT/scripts/bench.sh" "${bench_args[@]}"
