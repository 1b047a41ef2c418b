#!/bin/sh
# Loop overhead of the diagnostics against reference loops, same run.
#
#   test/bench/loop_overhead.sh [ROUNDS [SECONDS]]
#
# Needs a running server with timing_source installed in the database that
# psql connects to (PGHOST, PGPORT, PGDATABASE, PGUSER as usual), and a C
# compiler.  Each round runs, back to back for SECONDS per source:
#   - timing_source_test(SECONDS)          the extension's loop, in a backend
#   - loopref: bare and full reference loops (test/bench/loopref.c)
#   - pg_test_timing of the installed server (system clock only before 19)
# and the script prints the median over the rounds of each average loop
# time, and the ratio of the extension's loop to the full reference loop
# (the same bookkeeping as pg_test_timing 19's loop).
set -eu
rounds=${1:-5}
secs=${2:-1}
here=$(cd "$(dirname "$0")" && pwd)
src=$here/../../src
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

${CC:-cc} -O2 -std=gnu99 -I"$src" -o "$tmp/loopref" "$here/loopref.c" "$src/tsclock.c" -lm
ptt="$(pg_config --bindir)/pg_test_timing"

i=0
while [ "$i" -lt "$rounds" ]; do
	i=$((i + 1))
	psql -X -At -F ' ' -c "SELECT source, 'ext', round(avg_loop_ns::numeric, 2), loops FROM timing_source_test($secs)" >> "$tmp/all"
	"$tmp/loopref" "$secs" >> "$tmp/all"
	if [ -x "$ptt" ]; then
		"$ptt" -d "$secs" | sed -n 's/^\(Per loop time\|Average loop time\) including overhead: \([0-9.]*\) ns$/system pg_test_timing \2 0/p' >> "$tmp/all"
	fi
done

awk -v rounds="$rounds" -v secs="$secs" '
{ v[$1 " " $2, ++n[$1 " " $2]] = $3 }
function median(k,    m, i, j, t, a) {
	m = n[k]
	for (i = 1; i <= m; i++) a[i] = v[k, i]
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
END {
	printf "average loop time, ns (median of %d rounds of %s s per source)\n", rounds, secs
	printf "%-8s %10s %10s %10s %15s %12s\n", "source", "extension", "ref full", "ref bare", "pg_test_timing", "ext/full"
	split("system rdtscp rdtsc", s, " ")
	for (i = 1; i <= 3; i++) {
		if (!((s[i] " ext") in n)) continue
		e = median(s[i] " ext"); f = median(s[i] " full"); b = median(s[i] " bare")
		p = ((s[i] " pg_test_timing") in n) ? sprintf("%.2f", median(s[i] " pg_test_timing")) : "-"
		printf "%-8s %10.2f %10.2f %10.2f %15s %12.3f\n", s[i], e, f, b, p, e / f
	}
}' "$tmp/all"
