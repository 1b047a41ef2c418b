# scripts/track/overhead.sh -- what per-node tracking costs: the --track
# part of scripts/bench.sh.  Sourced by bench.sh, which provides psql_db,
# queries, reps, cpu, ncpu, pgver, pgnum, clocksrc, csvdir, stamp,
# min_median, ratio, parse_times, set_medians, pgbench_bin, do_pgbench,
# pgb, pgb_init, pin_start and pin_end.
#
# On ONE server, in interleaved rounds (the order rotating every round),
# timing_source.track_nodes = top against none:
#   pgbench -S, then pgbench's default TPC-B-like script, prepared, one
#   client, track_secs seconds a run, track_rounds rounds after a warm-up
#   run: tps
#   every bench query (bench.sh's list): psql's client-side time
# for each clock: on 15-18 the TSC (where usable) and the system clock
# (timing_clock_source), on 19 core's clock as core chose it.  The tracked
# runs use the server's timing_source.track_sample_every; on every clock
# (the wrappers sample with each) a sweep of track_sample_every over
# TRACK_SWEEP runs the bench queries too, and the smallest rate that keeps
# every query within the target is named.
#
# TRACK_EVERY=N (--track-every N): the tracked runs count the nodes of 1 in
# N executions (timing_source.track_every), the opt-in alternative to
# instrumenting every tracked execution.
#
# TRACK_PROXY=1 (--track-proxy): auto_explain (log_analyze and log_timing
# on, a log_min_duration no query reaches) with
# timing_source.sample_every stands in for tracking: the
# same instrumentation without the statistics (no plan id, no shared
# memory), so the two runs' difference is what the aggregation costs.
TRACK_SWEEP=${TRACK_SWEEP:-16 64 256 1024}
TRACK_TPS_TARGET=0.98
TRACK_TIME_TARGET=1.05

# "name=value" lines of one variant's settings: track_settings CLOCK MODE,
# MODE none, top (the server's rate) or a rate
track_settings() {
	local clock=$1 mode=$2 every
	[ "$clock" != core ] && echo "timing_clock_source=$clock"
	case $mode in
		none) every= ;;
		top) every=$track_default ;;
		*) every=$mode ;;
	esac
	if [ "${TRACK_PROXY:-0}" = 1 ]; then
		[ "$pgnum" -ge 190000 ] && echo "timing_source.node_wrappers=on"
		if [ -z "$every" ]; then
			echo "auto_explain.log_min_duration=-1"
		else
			echo "auto_explain.log_min_duration=3600000"
			echo "auto_explain.log_analyze=on"
			echo "auto_explain.log_timing=on"
			echo "timing_source.sample_every=$every"
		fi
	elif [ -z "$every" ]; then
		echo "timing_source.track_nodes=none"
	else
		echo "timing_source.track_nodes=top"
		echo "timing_source.track_sample_every=$every"
		echo "timing_source.track_every=${TRACK_EVERY:-1}"
	fi
}

# a figure as printed: tps whole, ms as measured
track_num() {
	if [ "$1" = tps ] && [ -n "$2" ]; then printf '%.0f' "$2"; else printf '%s' "$2"; fi
}

track_verdict() {
	awk -v r="$1" -v t="$2" -v dir="$3" 'BEGIN {
		if (r == "") print "-"
		else if ((dir == "min" && r >= t) || (dir == "max" && r <= t)) print "met"
		else print "MISSED" }'
}

track_section() {
	local clock clocks entry name settings query script v r k n mode tps opts kv val log times rt
	local -a variants=() sweep=() table=()
	local raw_csv="$csvdir/bench-$stamp-track.csv" sum_csv="$csvdir/bench-$stamp-track-summary.csv"
	local proxy=${TRACK_PROXY:-0} what="timing_source.track_nodes = top against none"

	# the settings (and, for the proxy, auto_explain) must be there
	if [ "$proxy" = 1 ]; then
		what="proxy: auto_explain (log_analyze) with timing_source.sample_every against none"
		psql_db -At -c "LOAD 'auto_explain'" >/dev/null 2>&1 ||
			{ echo "tracking benchmark (proxy): auto_explain cannot be loaded" >&2; return 1; }
		track_default=64
	else
		if [ "$(psql_db -At -c "SELECT count(*) FROM pg_settings WHERE name = 'timing_source.track_nodes'")" != 1 ]; then
			echo "tracking benchmark: the server has no setting timing_source.track_nodes (timing_source preloaded, version 1.5 or later?); not run" >&2
			return 1
		fi
		track_default=$(psql_db -At -c 'SHOW timing_source.track_sample_every')
		[ "${TRACK_EVERY:-1}" != 1 ] &&
			what="timing_source.track_nodes = top, nodes of 1 in ${TRACK_EVERY} executions (track_every), against none"
	fi

	# the clocks: 19's own, or the TSC (if usable) and the system clock
	if [ "$pgnum" -ge 190000 ]; then
		clocks=(core)
	elif psql_db -At -c "SET timing_clock_source = 'tsc'" >/dev/null 2>&1; then
		clocks=(tsc system)
	else
		clocks=(system)
		echo "note: the TSC is not usable on this machine; tracking measured under the system clock only" >&2
	fi
	for v in $TRACK_SWEEP; do
		[ "$v" = "$track_default" ] || sweep+=("$v")
	done
	for clock in "${clocks[@]}"; do
		variants+=("$clock:none" "$clock:top")
		for v in "${sweep[@]}"; do variants+=("$clock:$v"); done
	done

	mkdir -p "$csvdir"
	echo "cpu,postgresql,clock,workload,mode,round,value" >"$raw_csv"
	echo "cpu,postgresql,clock,workload,unit,none,top,ratio,target,verdict,best_none,best_top,best_ratio" >"$sum_csv"
	local extra_load=
	[ "$proxy" = 1 ] && extra_load="LOAD 'auto_explain';"

	# ---- pgbench, -S and TPC-B-like: tps, runs interleaved ----
	# One block per script, -S first: a run after a TPC-B-like one would
	# pay for the writes it left (autovacuum, dirty buffers).  Within a
	# block the order rotates every round and reverses every other round,
	# so no mode always follows the same one; a first run warms up.
	local -A tps_all=()
	local -a runs=()
	local have_pgbench=
	if [ -n "${pgbench_bin:-}" ] && [ "${do_pgbench:-1}" = 1 ]; then
		have_pgbench=1
		pgb_init
		pin_start
		for v in select tpcb; do
			runs=()
			for clock in "${clocks[@]}"; do
				runs+=("$clock:none" "$clock:top")
			done
			n=${#runs[@]}
			for ((r = 0; r <= track_rounds; r++)); do
				for ((k = 0; k < n; k++)); do
					if ((r % 2)); then
						IFS=: read -r clock mode <<<"${runs[$(((n - 1 - k + r) % n))]}"
					else
						IFS=: read -r clock mode <<<"${runs[$(((k + r) % n))]}"
					fi
					opts=
					[ "$proxy" = 1 ] && opts="-c session_preload_libraries=auto_explain"
					while read -r kv; do opts+=" -c $kv"; done < <(track_settings "$clock" "$mode")
					local -a args=(-n -M prepared -c 1 -j 1 -T "$track_secs")
					[ "$v" = select ] && args+=(-S)
					tps=$(pgb "${args[@]}" "dbname=ts_bench options='$opts'" 2>/dev/null |
						sed -nE 's/^tps = ([0-9.]+).*/\1/p' | head -1)
					# round 0: the warm-up, one run, not counted
					if ((r == 0)); then
						break
					fi
					echo "\"$cpu\",\"$pgver\",$clock,$v,$mode,$r,$tps" >>"$raw_csv"
					tps_all[$v:$clock:$mode]+="$tps "
				done
			done
		done
		pin_end
	else
		echo "note: no pgbench (or --no-pgbench); the tracking benchmark measures the queries only" >&2
	fi

	# ---- the bench queries: time, every variant interleaved ----
	# medians, and the best (fastest) run: on a shared machine others'
	# load only ever adds time, so the best runs' ratio is the steadier one
	local -A qmd=() qbest=()
	for entry in "${queries[@]}"; do
		IFS='|' read -r name settings query <<<"$entry"
		script=$(
			echo "SET jit = off;"
			echo "$extra_load"
			echo "$settings"
			echo "\\o /dev/null"
			echo "$query;"
			echo "\\timing on"
			n=${#variants[@]}
			for ((r = 1; r <= reps; r++)); do
				for ((k = 0; k < n; k++)); do
					v=${variants[$(((k + r) % n))]}
					while IFS='=' read -r kv val; do
						echo "SET $kv = '$val';"
					done < <(track_settings "${v%%:*}" "${v#*:}")
					echo "\\echo @@ $v $r"
					echo "$query;"
				done
			done
			echo "\\o"
		)
		log=$(psql_db -A <<<"$script" 2>&1)
		times=$(parse_times <<<"$log")
		while read -r v r ms; do
			[ -n "$v" ] || continue
			echo "\"$cpu\",\"$pgver\",${v%%:*},\"$name\",${v#*:},$r,$ms" >>"$raw_csv"
		done <<<"$times"
		local -A md=()
		set_medians "$times" "${variants[@]}"
		for v in "${variants[@]}"; do
			qmd[$name@$v]=${md[$v]}
			qbest[$name@$v]=$(awk -v v="$v" '$1 == v { print $3 }' <<<"$times" | sort -g | head -1)
		done
		unset md
	done

	# ---- the tables ----
	local row_fmt='%-7s %-24s %12s %12s %7s %8s %-7s %6s'
	row() {	# clock workload unit none top target dir best-none best-top
		local rt vd rb
		rt=$(ratio "$5" "$4")
		rb=$(ratio "$9" "$8")
		vd=$(track_verdict "$rt" "$6" "$7")
		table+=("$(printf "$row_fmt" "$1" "$2 ($3)" "$(track_num "$3" "$4")" "$(track_num "$3" "$5")" "$rt" "$([ "$7" = min ] && echo '>=' || echo '<=') $6" "$vd" "$rb")")
		echo "\"$cpu\",\"$pgver\",$1,\"$2\",$3,$4,$5,$rt,$6,$vd,$8,$9,$rb" >>"$sum_csv"
	}
	for clock in "${clocks[@]}"; do
		if [ -n "$have_pgbench" ]; then
			for v in select tpcb; do
				for mode in none top; do
					tps_all[med:$mode]=$(tr ' ' '\n' <<<"${tps_all[$v:$clock:$mode]}" | grep . | min_median | awk '{ print $2 }')
					tps_all[best:$mode]=$(tr ' ' '\n' <<<"${tps_all[$v:$clock:$mode]}" | grep . | sort -gr | head -1)
				done
				row "$clock" "$([ $v = select ] && echo 'pgbench -S' || echo 'pgbench TPC-B')" tps \
					"${tps_all[med:none]}" "${tps_all[med:top]}" "$TRACK_TPS_TARGET" min \
					"${tps_all[best:none]}" "${tps_all[best:top]}"
			done
		fi
		for entry in "${queries[@]}"; do
			IFS='|' read -r name _ <<<"$entry"
			row "$clock" "$name" ms "${qmd[$name@$clock:none]}" "${qmd[$name@$clock:top]}" "$TRACK_TIME_TARGET" max \
				"${qbest[$name@$clock:none]}" "${qbest[$name@$clock:top]}"
		done
	done

	echo
	echo "Tracking ($what), one server, interleaved rounds"
	echo "CPU: $cpu ($ncpu CPUs), clocksource $clocksrc; PostgreSQL $pgver; track_sample_every $track_default"
	[ -n "$have_pgbench" ] && echo "pgbench: prepared, 1 client, $track_secs s x $track_rounds rounds, medians of tps${pinned:+ (server and client on one CPU)}"
	echo "queries: client-side time, medians in ms of $reps rounds; ratio = top/none, its verdict; best = the"
	echo "ratio of the best runs (highest tps, lowest time), less moved by other load on the machine"
	printf "$row_fmt\n" clock workload none top ratio target verdict best
	printf '%s\n' "${table[@]}"

	# ---- the sweep: top/none at each rate, per sampling clock ----
	local rates rate best q
	rates=$(tr ' ' '\n' <<<"$TRACK_SWEEP $track_default" | grep . | sort -n -u | tr '\n' ' ')
	local stat
	for clock in "${clocks[@]}"; do
		for stat in median best; do
			if [ "$stat" = median ]; then local -n qstat=qmd; else local -n qstat=qbest; fi
			echo
			echo "track_sample_every sweep, clock $clock: time ratio top/none per rate ($stat of $reps rounds)"
			printf '%-24s' query
			for rate in $rates; do printf ' %7s' "$rate"; done
			echo
			local -A worst_of=()
			for entry in "${queries[@]}"; do
				IFS='|' read -r name _ <<<"$entry"
				printf '%-24s' "$name"
				for rate in $rates; do
					q=top
					[ "$rate" = "$track_default" ] || q=$rate
					rt=$(ratio "${qstat[$name@$clock:$q]}" "${qstat[$name@$clock:none]}")
					printf ' %7s' "$rt"
					worst_of[$rate]=$(awk -v a="${worst_of[$rate]:-}" -v b="$rt" 'BEGIN { if (b == "") print a; else if (a == "" || b > a) print b; else print a }')
				done
				echo
			done
			printf '%-24s' worst
			best=
			for rate in $rates; do
				printf ' %7s' "${worst_of[$rate]}"
				[ -z "$best" ] && [ "$(track_verdict "${worst_of[$rate]}" "$TRACK_TIME_TARGET" max)" = met ] && best=$rate
			done
			echo
			echo "smallest rate with every query <= $TRACK_TIME_TARGET ($stat): ${best:-none}"
			echo "\"$cpu\",\"$pgver\",$clock,sweep-$stat,rate,,,${best:-},$TRACK_TIME_TARGET,,,," >>"$sum_csv"
			unset worst_of
		done
	done
	echo
	echo "CSV: $raw_csv"
	echo "     $sum_csv"
}
