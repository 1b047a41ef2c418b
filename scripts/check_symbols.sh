#!/usr/bin/env bash
# scripts/check_symbols.sh SO... -- TAP: each shared library exports
# exactly what PostgreSQL needs: _PG_init, Pg_magic_func, and every C
# function the current install script names (and the unlisted ones below)
# with its pg_finfo_ function.
# Anything more (the clock core's tsclock_*, the glue's ts_*) could clash
# with another library loaded with RTLD_GLOBAL.
set -uo pipefail
cd "$(dirname "$0")/.."

version=$(sed -nE "s/^default_version *= *'([^']+)'.*/\1/p" timing_source.control)
script=sql/timing_source--$version.sql
# and the C functions for benchmarks and tests that no install script
# names: their callers declare them (docs/internals.md)
unlisted="timing_source_explain_nodes_check timing_source_explain_nodes_profile"
want=$( { echo _PG_init; echo Pg_magic_func
	{ sed -nE "s/.*'MODULE_PATHNAME', *'([A-Za-z0-9_]+)'.*/\1/p" "$script"
	  printf '%s\n' $unlisted; } |
		sed -E 'p; s/^/pg_finfo_/'; } | sort -u)

n=0 failed=0
if [ "$(grep -c . <<<"$want")" -lt 4 ]; then
	echo "not ok 1 - $script names its C functions"; echo "1..1"; exit 1
fi
for so in "$@"; do
	n=$((n + 1))
	if [ ! -f "$so" ]; then
		echo "not ok $n - $so exists"; failed=1; continue
	fi
	got=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ { print $3 }' | sort -u)
	extra=$(comm -13 <(echo "$want") <(echo "$got") | tr '\n' ' ')
	missing=$(comm -23 <(echo "$want") <(echo "$got") | tr '\n' ' ')
	if [ -z "$extra$missing" ]; then
		echo "ok $n - $so exports exactly $(grep -c . <<<"$want") symbols"
	else
		echo "not ok $n - $so exports exactly what PostgreSQL needs"
		[ -n "$extra" ] && echo "# not expected: $extra"
		[ -n "$missing" ] && echo "# missing: $missing"
		failed=1
	fi
done
echo "1..$n"
exit $failed
