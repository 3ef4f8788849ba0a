#!/usr/bin/env bash
# contrib/debian/build.sh — builds the Debian package codemcp_<version>_<arch>.deb from this
# checkout: copies the tree (without build directories, .git and node_modules) to a scratch
# directory, puts contrib/debian/ there as debian/ with a changelog entry for the version in
# meson.build (the one place the version is set), runs `dpkg-buildpackage -b`, then lintian.
#
#   contrib/debian/build.sh [--out DIR] [--no-lintian]
#
# --out: where the .deb, .buildinfo and .changes go (default build-deb/ in the checkout).
# Needs dpkg-dev, debhelper and the Build-Depends of contrib/debian/control
# (`apt-get build-dep` cannot read them from here: `dpkg-checkbuilddeps` names what is missing);
# lintian when present (its remaining tags are explained in contrib/debian/README.lintian).
# Install the result with `apt-get install ./codemcp_<version>_<arch>.deb`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$ROOT/build-deb"
run_lintian=1
while [ $# -gt 0 ]; do
    case "$1" in
    --out) out="${2:?--out needs a directory}"; shift ;;
    --no-lintian) run_lintian=0 ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
die() { echo "build.sh: $*" >&2; exit 1; }
for tool in dpkg-buildpackage dh; do
    command -v "$tool" >/dev/null || die "$tool not found (Debian: apt-get install dpkg-dev debhelper)"
done

version="$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" "$ROOT/meson.build" | sed -n 1p)"
[ -n "$version" ] || die "no version in $ROOT/meson.build"
arch="$(dpkg-architecture -qDEB_HOST_ARCH)"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
src="$scratch/codemcp-$version"
mkdir -p "$src"
tar -C "$ROOT" --exclude=./.git --exclude='./build*' --exclude=node_modules \
    --exclude=__pycache__ -cf - . | tar -C "$src" -xf -
rm -rf "$src/debian"
cp -r "$ROOT/contrib/debian" "$src/debian"
rm -f "$src/debian/build.sh" "$src/debian/README.lintian"

# The changelog names the version meson.build sets and where this build came from.
from="this checkout"
if rev="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"; then
    from="git $rev"
    [ -z "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ] || from="$from with local changes"
fi
cat >"$src/debian/changelog" <<CHANGELOG
codemcp ($version) unstable; urgency=medium

  * Built from the codemcp repository ($from).

 -- $(sed -n 's/^Maintainer: //p' "$src/debian/control")  $(date -R)
CHANGELOG

echo "build.sh: dpkg-buildpackage -b for codemcp $version ($arch)" >&2
(cd "$src" && dpkg-checkbuilddeps && dpkg-buildpackage -b -us -uc) >&2
deb="codemcp_${version}_${arch}.deb"
[ -f "$scratch/$deb" ] || die "dpkg-buildpackage made no $deb"

if [ "$run_lintian" = 1 ]; then
    if command -v lintian >/dev/null; then
        # Errors and warnings fail the build; the info-level tags left are in README.lintian.
        (cd "$scratch" && lintian --fail-on error,warning --info "$deb") >&2
    else
        echo "build.sh: lintian not found; the package was not checked (apt-get install lintian)" >&2
    fi
fi

mkdir -p "$out"
mv "$scratch/$deb" "$scratch"/codemcp_"${version}"_"${arch}".{buildinfo,changes} "$out"/
echo "$out/$deb"
