#!/usr/bin/env bash
# scripts/deb.sh -- build the Debian package (debian/) and check it, for
# scripts/test.sh.  Prints TAP-style "ok N - ..." / "not ok N - ..." lines.
#
#   scripts/deb.sh build MAJOR DIR
#       As an unprivileged user, in a clean export of the tree (the current
#       directory): check that the committed debian/control is what
#       pg_buildext makes from debian/control.in, regenerate it for MAJOR
#       only (PG_SUPPORTED_VERSIONS=MAJOR), dpkg-buildpackage (which runs
#       pg_regress against the packaged files, see debian/rules), check
#       the .deb's contents; the packages are left in DIR.
#
#   scripts/deb.sh install-check DIR
#       As root inside a clean root (scripts/majors.sh run), from the source
#       tree: install DIR/*.deb with dpkg, check that every timing_source
#       file the server can see belongs to the package, run the package's
#       autopkgtests (debian/tests/control) -- the tests that need no root
#       as the user postgres; installcheck with the Perl tests of
#       $package_tap only --, then purge the package and check that
#       nothing is left.
set -uo pipefail

n=0 failed=0
tap() # tap OK DESCRIPTION [DIAGNOSTIC]
{
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		[ -n "${3:-}" ] && printf '%s\n' "$3" | sed 's/^/# /'
		failed=$((failed + 1))
	fi
}

finish()
{
	echo "1..$n"
	[ "$failed" -eq 0 ]
	exit
}

# timing_source files in the server directories of every installed major
server_files()
{
	find /usr/lib/postgresql/*/lib /usr/share/postgresql/*/extension \
		\( -name 'timing_source*' -o -path '*/bitcode/timing_source/*' \) \
		\( -type f -o -type l \) 2>/dev/null | sort
}

build()
{
	local major=$1 dir=$2 committed out rc debs deb f missing=

	committed=$(sed -n 's/^Package: postgresql-\([0-9][0-9]*\)-timing-source$/\1/p' debian/control | tr '\n' ' ' | sed 's/ $//')
	out=$(PG_SUPPORTED_VERSIONS="$committed" pg_buildext checkcontrol 2>&1)
	tap $? "the committed debian/control is what 'pg_buildext updatecontrol' makes from control.in (for: $committed)" "$out"

	out=$(PG_SUPPORTED_VERSIONS=$major pg_buildext updatecontrol 2>&1)
	rc=$?
	[ $rc = 0 ] && [ "$(grep -c '^Package: ' debian/control)" = 1 ] &&
		grep -qx "Package: postgresql-$major-timing-source" debian/control || rc=1
	tap $rc "debian/control regenerated for PostgreSQL $major only" "$out$(grep '^Package:' debian/control)"

	# the build log goes to the output, indented so that the TAP lines of
	# its build-time pg_regress are not taken for this suite's (their
	# verdict is dpkg-buildpackage's exit status)
	echo "# PG_SUPPORTED_VERSIONS=$major dpkg-buildpackage -us -uc"
	PG_SUPPORTED_VERSIONS=$major dpkg-buildpackage -us -uc 2>&1 | sed 's/^/    /'
	rc=${PIPESTATUS[0]}
	tap $rc "dpkg-buildpackage builds the source and binary packages, build-time installcheck included"
	[ $rc = 0 ] || finish

	debs=$(ls ../*.deb 2>/dev/null | grep -v -- '-dbgsym_' || true)
	deb=$(ls ../postgresql-"$major"-timing-source_*.deb 2>/dev/null | head -n1)
	[ -n "$deb" ] && [ "$debs" = "$deb" ]
	tap $? "one binary package, for PostgreSQL $major only" "$debs"
	[ -n "$deb" ] || finish

	local list
	list=$(dpkg-deb -c "$deb" | awk '{ print $NF }' | sed 's|^\./|/|')
	for f in "/usr/lib/postgresql/$major/lib/timing_source.so" \
		"/usr/share/postgresql/$major/extension/timing_source.control" \
		$(ls sql/timing_source--*.sql | sed "s|^sql/|/usr/share/postgresql/$major/extension/|"); do
		grep -qx -- "$f" <<<"$list" || missing="$missing $f"
	done
	[ -z "$missing" ]
	tap $? "the package has the library, the control file and every install and update script" "missing:$missing"

	dpkg-deb -f "$deb" Depends | grep -qE "(^|, )postgresql-$major( |,|$)"
	tap $? "the package depends on postgresql-$major" "$(dpkg-deb -f "$deb" Depends)"

	[ "$(dpkg-deb -f "$deb" Version)" = "$(dpkg-parsechangelog -S Version)" ]
	tap $? "the package's version is debian/changelog's"

	cp ../*.deb "$dir"/ && ls ../*.dsc >/dev/null
	tap $? "source package (.dsc) and binary packages written"
	finish
}

# the Perl tests install-check runs against the installed package
package_tap="t/001_server_default.pl t/030_instrument_auto_explain.pl t/062_load_on_demand.pl t/070_standby.pl"

install_check()
{
	local dir=$1 before out rc debs pkg f t user work stray

	before=$(server_files)
	[ -z "$before" ]
	tap $? "a clean root: no timing_source files in the server directories before installing" "$before"

	debs=$(ls "$dir"/*.deb 2>/dev/null | grep -v -- '-dbgsym_')
	# shellcheck disable=SC2086
	out=$(dpkg -i $debs 2>&1)
	tap $? "dpkg -i installs $(basename -a $debs | tr '\n' ' ')(dependencies met by the root)" "$out"
	pkg=$(dpkg-deb -f $debs Package 2>/dev/null | head -n1)

	stray=
	for f in $(server_files); do
		[ "$(dpkg-query -S "$f" 2>/dev/null | cut -d: -f1)" = "$pkg" ] || stray="$stray $f"
	done
	[ -n "$(server_files)" ] && [ -z "$stray" ]
	tap $? "every timing_source file the server can see belongs to $pkg" "not from the package:$stray"

	# the autopkgtests, as debian/tests/control lists them.  Their
	# installcheck runs pg_regress and, here, only the Perl tests that
	# depend on how the server finds the library (preloaded, loaded on
	# demand, beside auto_explain, on a standby): every t/*.pl ran against
	# the same major's source build in the target's own suites, and the
	# whole set again here took minutes per major for no new finding.  A
	# Debian autopkgtest run, which sets no PROVE_TESTS, runs them all.
	work=$(mktemp -d /tmp/timing_source-autopkgtest.XXXXXX)
	cp -a . "$work/src"
	chown -R postgres "$work"
	while read -r t restrictions; do
		user=postgres
		grep -qw needs-root <<<"$restrictions" && user=root
		echo "# autopkgtest $t (as $user)"
		(cd "$work/src" && runuser -u "$user" -- env HOME="$work" PROVE_TESTS="$package_tap" \
			"debian/tests/$t") 2>&1 | sed 's/^/    /'
		tap "${PIPESTATUS[0]}" "autopkgtest $t passes against the installed package"
	done < <(awk '
		/^Tests:/ { if (t != "") print t, r; t = $2; r = "" }
		/^Restrictions:/ { $1 = ""; r = $0 }
		END { if (t != "") print t, r }' debian/tests/control)
	rm -rf "$work"

	out=$(dpkg --purge "$pkg" 2>&1)
	rc=$?
	[ $rc = 0 ] && [ -z "$(server_files)" ]
	tap $? "dpkg --purge removes the package and all of its files" "$out$(server_files)"
	finish
}

case ${1:-} in
	build) [ $# = 3 ] && build "$2" "$3" ;;
	install-check) [ $# = 2 ] && install_check "$2" ;;
esac
sed -n '2,20p' "$0" >&2
exit 2
