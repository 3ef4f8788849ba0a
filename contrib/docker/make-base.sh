#!/usr/bin/env bash
# contrib/docker/make-base.sh — makes the base image `debian:bookworm-slim` locally, from
# Debian's archive, for machines that reach Debian's mirror but no image registry (the
# Dockerfile starts FROM it). Does nothing when the image exists already (--force remakes it).
#
#   contrib/docker/make-base.sh [--force] [--mirror URL] [--tag NAME] [--engine docker|podman]
#
# --engine podman imports it into Podman's (rootful) store instead, for CODEMCP_ISOLATION=docker
# against Podman's Docker-compatible service.
# The mirror defaults to the one apt uses on this machine (/etc/apt/sources.list*), else
# http://deb.debian.org/debian. Needs root (or a docker group member with root for
# mmdebstrap's chroot: mmdebstrap runs in --mode=auto), mmdebstrap and a running Docker.
# Takes ~20-40 s and makes a ~80 MB image (Debian's minbase variant: what `-slim` holds).
set -euo pipefail

tag=debian:bookworm-slim
engine=docker
mirror=
force=0
while [ $# -gt 0 ]; do
    case "$1" in
    --force) force=1 ;;
    --mirror) mirror="${2:?--mirror needs a URL}"; shift ;;
    --tag) tag="${2:?--tag needs an image name}"; shift ;;
    --engine) engine="${2:?--engine needs docker or podman}"; shift ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "make-base.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

die() { echo "make-base.sh: $*" >&2; exit 1; }
case "$engine" in
docker)
    command -v docker >/dev/null || die "docker not found (Debian: apt-get install docker.io)"
    docker info >/dev/null 2>&1 || die "the Docker daemon is not reachable (start dockerd)" ;;
podman) command -v podman >/dev/null || die "podman not found (Debian: apt-get install podman)" ;;
*) die "--engine must be docker or podman" ;;
esac
if [ "$force" = 0 ] && "$engine" image inspect "$tag" >/dev/null 2>&1; then
    echo "make-base.sh: $tag exists; nothing to do (--force remakes it)"
    exit 0
fi
command -v mmdebstrap >/dev/null || die "mmdebstrap not found (Debian: apt-get install mmdebstrap)"

# The first Debian (not -security, not -updates) mirror apt is configured with here: deb822
# "URIs:" lines next to a bookworm suite, or one-line "deb URL bookworm main" entries.
apt_mirror() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk '/^URIs:/ { u = $2 } /^Suites:/ && / bookworm( |$)/ && u !~ /security/ { print u; exit }' "$f"
    done
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
        awk '$1 == "deb" && $3 == "bookworm" && $2 !~ /security/ { print $2; exit }' || true
}
[ -n "$mirror" ] || mirror="$(apt_mirror | sed -n 1p)"
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian

echo "make-base.sh: mmdebstrap --variant=minbase bookworm from $mirror -> $tag" >&2
# As the registry's -slim image: bookworm-updates too; merged /usr without the usrmerge package
# (which would pull in perl); no documentation, manual pages or translations, now and for every
# package installed later (the dpkg options stay in the image); no apt lists.
slim=()
for p in /usr/share/doc/ /usr/share/man/ /usr/share/groff/ /usr/share/info/ /usr/share/lintian/ \
    /usr/share/locale/; do
    slim+=(--dpkgopt="path-exclude=$p*")
done
slim+=(--dpkgopt='path-include=/usr/share/doc/*/copyright')
mmdebstrap --variant=minbase --quiet "${slim[@]}" \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --aptopt='Acquire::Retries "3"' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    bookworm - "deb $mirror bookworm main" "deb $mirror bookworm-updates main" |
    "$engine" import --change 'CMD ["bash"]' - "$tag" >/dev/null
"$engine" image inspect "$tag" --format 'make-base.sh: made {{.RepoTags}} ({{.Size}} bytes)'
