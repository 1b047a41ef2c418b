#!/usr/bin/env bash
# scripts/pgxn.sh -- the PGXN distribution: META.json and the release zip.
#
#   scripts/pgxn.sh check
#       Validate META.json against the PGXN Meta Spec 1.0.0 (JSON parses,
#       required keys and their types, licence names, SemVer versions,
#       prerequisite phases and relations, tags, resources, no unknown
#       keys), and check that the versions agree: META.json's version, the
#       provides version of the extension, timing_source.control's
#       default_version (as SemVer: "1.1" is "1.1.0") and debian/changelog;
#       the provides file is the default version's install script, the
#       docfile exists.  Prints TAP.
#
#   scripts/pgxn.sh dist [DIR]
#       Write DIR/timing_source-VERSION.zip (default DIR: the top of the
#       tree) from `git archive` of HEAD, every file under the top-level
#       directory timing_source-VERSION/, as PGXN expects.  Prints its path.
#
#   scripts/pgxn.sh dist-check ZIP [FILELIST]
#       Check a release zip: its name and top-level directory carry
#       META.json's version, it has META.json, the control file, the
#       Makefile and every file named in FILELIST (default: what git tracks
#       at HEAD); unpacked, it builds with `make` (PG_CONFIG from the
#       environment, -Werror).  Prints TAP.
set -uo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)

# META.json's version (SemVer)
meta_version()
{
	perl -MJSON::PP -e '
		local $/; open my $f, "<", $ARGV[0] or die "$ARGV[0]: $!\n";
		print JSON::PP->new->decode(<$f>)->{version}' "${1:-$TOP/META.json}"
}

check()
{
	cd "$TOP" || exit 2
	perl -MJSON::PP -e '
use strict;
use warnings;

my ($n, $failed) = (0, 0);
sub tap {
	my ($ok, $what, @diag) = @_;
	$n++;
	print(($ok ? "ok" : "not ok"), " $n - $what\n");
	unless ($ok) { $failed++; print "# $_\n" for @diag; }
}

my $semver = qr/^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;
my $one_range = qr/(?:(?:[=!]=|[<>]=?)\s*)?(?:(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?|0)/;
my $term = qr/^[^\/\\\s\p{Cntrl}]{2,}$/;
my %licences = map { $_ => 1 } qw(agpl_3 apache_1_1 apache_2_0 artistic_1
	artistic_2 bsd freebsd gfdl_1_2 gfdl_1_3 gpl_1 gpl_2 gpl_3 lgpl_2_1
	lgpl_3_0 mit mozilla_1_0 mozilla_1_1 openssl perl_5 postgresql qpl_1_0
	ssleay sun zlib open_source restricted unrestricted unknown);
my %known = map { $_ => 1 } qw(name version abstract maintainer license
	provides meta-spec description generated_by tags no_index prereqs
	release_status resources);
sub str { defined $_[0] && !ref $_[0] && length $_[0] }

# 1. it parses
my $meta = eval {
	local $/;
	open my $f, "<", "META.json" or die "META.json: $!\n";
	JSON::PP->new->decode(<$f>);
};
tap(ref $meta eq "HASH", "META.json parses as a JSON object", $@ || "not an object");
unless (ref $meta eq "HASH") { print "1..$n\n"; exit 1; }

# 2. the spec: required keys and their shapes
my @missing = grep { !exists $meta->{$_} } qw(name version abstract maintainer license provides meta-spec);
tap(!@missing, "META.json has every key Meta Spec 1.0.0 requires", "missing: @missing");
my @unknown = grep { !$known{$_} && !/^[xX]_./ } sort keys %$meta;
tap(!@unknown, "META.json has no keys the spec does not define (custom keys start with x_)", "unknown: @unknown");
tap(ref $meta->{"meta-spec"} eq "HASH" && ($meta->{"meta-spec"}{version} // "") eq "1.0.0",
	"meta-spec version is 1.0.0");
tap(!!(str($meta->{name}) && $meta->{name} =~ $term), "name is a term (2+ characters, no slash, backslash or blank)");
tap(!!(str($meta->{version}) && $meta->{version} =~ $semver), "version is SemVer", "version: " . ($meta->{version} // "none"));
tap(str($meta->{abstract}), "abstract is a non-empty string");
my $m = $meta->{maintainer};
tap(str($m) || (ref $m eq "ARRAY" && @$m && !grep { !str($_) } @$m),
	"maintainer is a string or a non-empty list of strings");
my $l = $meta->{license};
tap((str($l) && $licences{$l})
	|| (ref $l eq "ARRAY" && @$l && !grep { !str($_) || !$licences{$_} } @$l)
	|| (ref $l eq "HASH" && %$l && !grep { !str($_) || !m{^[a-z][a-z0-9+.-]*:}i } values %$l),
	"license is a known licence name, a list of them, or names mapped to URIs",
	"license: " . JSON::PP->new->canonical->allow_nonref->encode($l));
my $p = $meta->{provides};
my @bad;
if (ref $p eq "HASH" && %$p) {
	for my $ext (sort keys %$p) {
		my $e = $p->{$ext};
		push(@bad, "$ext: not an object"), next unless ref $e eq "HASH";
		push @bad, "$ext: name is not a term" unless $ext =~ $term;
		push @bad, "$ext: file missing" unless str($e->{file});
		push @bad, "$ext: version not SemVer" unless str($e->{version}) && $e->{version} =~ $semver;
		push @bad, "$ext: unknown key $_" for grep { !/^(file|version|abstract|docfile)$/ && !/^[xX]_./ } sort keys %$e;
		for my $k (qw(file docfile)) {
			push @bad, "$ext: $k $e->{$k} is not in the tree" if str($e->{$k}) && !-f $e->{$k};
		}
	}
} else {
	push @bad, "provides is not a non-empty object";
}
tap(!@bad, "provides: each extension has an existing file and a SemVer version (docfile, if given, exists)", @bad);
@bad = ();
if (exists $meta->{prereqs}) {
	my $pr = $meta->{prereqs};
	if (ref $pr ne "HASH") { push @bad, "prereqs is not an object" }
	else {
		for my $phase (sort keys %$pr) {
			push(@bad, "unknown phase $phase"), next unless $phase =~ /^(configure|build|test|runtime|develop)$/;
			for my $rel (sort keys %{$pr->{$phase}}) {
				push(@bad, "$phase: unknown relation $rel"), next unless $rel =~ /^(requires|recommends|suggests|conflicts)$/;
				while (my ($what, $v) = each %{$pr->{$phase}{$rel}}) {
					push @bad, "$phase $rel $what: bad version range $v"
						unless defined $v && !ref $v && $v =~ /^$one_range(?:,\s*$one_range)*$/;
				}
			}
		}
	}
}
tap(!@bad, "prereqs: known phases and relations, valid version ranges", @bad);
@bad = ();
if (exists $meta->{tags}) {
	my $t = $meta->{tags};
	if (ref $t ne "ARRAY" || !@$t) { push @bad, "tags is not a non-empty list" }
	else { push @bad, grep { !str($_) || length($_) > 255 || length($_) < 2 || m{[/\\\p{Cntrl}]} } @$t }
}
push @bad, "release_status $meta->{release_status}"
	if exists $meta->{release_status} && ($meta->{release_status} // "") !~ /^(stable|testing|unstable)$/;
if (exists $meta->{resources}) {
	my $r = $meta->{resources};
	if (ref $r ne "HASH") { push @bad, "resources is not an object" }
	else {
		push @bad, "resources: unknown key $_" for grep { !/^(homepage|bugtracker|repository)$/ && !/^[xX]_./ } sort keys %$r;
		push @bad, "resources.homepage is not a URI" if exists $r->{homepage} && !(str($r->{homepage}) && $r->{homepage} =~ m{^[a-z][a-z0-9+.-]*:}i);
		for my $k (qw(bugtracker repository)) {
			next unless exists $r->{$k};
			push(@bad, "resources.$k is not an object"), next unless ref $r->{$k} eq "HASH";
		}
	}
}
tap(!@bad, "tags, release_status and resources (where given) have the shapes the spec says", @bad);

# 3. the versions agree
my $control = do { local $/; open my $f, "<", "timing_source.control" or die "timing_source.control: $!\n"; <$f> };
my ($default) = $control =~ /^\s*default_version\s*=\s*\x27([^\x27]+)\x27/m;
tap(defined $default, "timing_source.control has a default_version");
$default //= "";
(my $default_semver = $default) =~ s/^(\d+\.\d+)$/$1.0/;
my $ext = $p->{timing_source} // {};
tap(exists $p->{timing_source}, "provides names the extension timing_source, the control file'"'"'s name");
tap(($ext->{version} // "") eq $default_semver,
	"provides version equals the control file'"'"'s default_version ($default as SemVer: $default_semver)",
	"provides: " . ($ext->{version} // "none"));
tap(($meta->{version} // "") eq ($ext->{version} // "-"),
	"the distribution version equals the extension'"'"'s provides version");
tap(($ext->{file} // "") eq "sql/timing_source--$default.sql",
	"the provides file is the default version'"'"'s install script, sql/timing_source--$default.sql",
	"file: " . ($ext->{file} // "none"));
if (-f "debian/changelog") {
	open my $f, "<", "debian/changelog" or die;
	my ($deb) = <$f> =~ /^\S+ \(([^)]+)\)/;
	$deb //= "";
	(my $upstream = $deb) =~ s/^\d+://; $upstream =~ s/-[^-]*$//;
	tap($upstream eq ($meta->{version} // ""),
		"debian/changelog'"'"'s version ($deb) is the distribution version");
}

print "1..$n\n";
exit($failed ? 1 : 0);
'
}

dist()
{
	local dir=${1:-$TOP} version name
	version=$(meta_version) || exit 2
	name=timing_source-$version
	git -C "$TOP" rev-parse --verify -q HEAD >/dev/null ||
		{ echo "scripts/pgxn.sh dist: $TOP is not a git checkout with a commit" >&2; exit 2; }
	mkdir -p "$dir"
	git -C "$TOP" archive --format=zip --prefix="$name/" -o "$(cd "$dir" && pwd)/$name.zip" HEAD || exit 2
	echo "$(cd "$dir" && pwd)/$name.zip"
}

dist_check()
{
	local zip=$1 filelist=${2:-} n=0 failed=0 version name list work f missing= out
	tap() # tap STATUS DESCRIPTION [DIAGNOSTIC]
	{
		n=$((n + 1))
		if [ "$1" = 0 ]; then echo "ok $n - $2"; else
			echo "not ok $n - $2"; [ -n "${3:-}" ] && printf '%s\n' "$3" | sed 's/^/# /'
			failed=$((failed + 1))
		fi
	}
	version=$(meta_version) || exit 2
	name=timing_source-$version
	[ "$(basename "$zip")" = "$name.zip" ]
	tap $? "the release is named $name.zip after META.json's version" "$(basename "$zip")"
	list=$(unzip -Z1 "$zip" 2>&1)
	tap $? "it is a zip file" "$list"
	out=$(grep -v "^$name/" <<<"$list")
	[ -z "$out" ]
	tap $? "every entry is under the top-level directory $name/" "$out"
	[ -n "$filelist" ] || { filelist=$(mktemp) && git -C "$TOP" ls-tree -r --name-only HEAD >"$filelist"; }
	for f in META.json timing_source.control Makefile $(cat "$filelist"); do
		grep -qxF "$name/$f" <<<"$list" || missing="$missing $f"
	done
	[ -z "$missing" ]
	tap $? "it has META.json, timing_source.control, the Makefile and every file git tracks at HEAD" "missing:$missing"

	work=$(mktemp -d /tmp/timing_source-dist.XXXXXX)
	unzip -q "$zip" -d "$work"
	[ "$(meta_version "$work/$name/META.json")" = "$version" ]
	tap $? "the META.json inside has version $version"
	out=$(make -C "$work/$name" -s PG_CONFIG="${PG_CONFIG:-pg_config}" EXTRA_CFLAGS=-Werror 2>&1) &&
		[ -f "$work/$name/timing_source.so" ]
	tap $? "unpacked, it builds with make (-Werror) against $("${PG_CONFIG:-pg_config}" --version)" "$out"
	rm -rf "$work"
	echo "1..$n"
	[ "$failed" -eq 0 ]
}

case ${1:-} in
	check) check; exit ;;
	dist) dist "${2:-}"; exit ;;
	dist-check) [ $# -ge 2 ] && { dist_check "$2" "${3:-}"; exit; } ;;
esac
sed -n '2,25p' "$0" >&2
exit 2
