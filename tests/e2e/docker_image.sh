#!/usr/bin/env bash
# tests/e2e/docker_image.sh — the OCI image and the Debian package, built and then driven by
# docker_image.test.mjs as users run them. This script gets Docker ready and builds:
#   1. a Docker daemon: the running one, else dockerd started here (as root) and stopped at the
#      end; none possible -> exit 77 (meson: SKIP) with the reason, never a failure;
#   2. debian:bookworm-slim: kept when present, else made by contrib/docker/make-base.sh;
#   3. the image codemcp:e2e-<checkout> from contrib/docker/Dockerfile, and the .deb its build
#      stage made (contrib/debian/build.sh), copied out and checked with lintian where installed;
#   4. the source tarball with `meson dist` from the build directory (argument 2) and its
#      checksum checked;
# then runs the node test file against them. Build logs go to $SCRATCH (argument 1).
# Under CODEMCP_WRAPPER (tests/run.sh --valgrind) it skips: the image's binaries are not the
# build's, so there is nothing to wrap.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SCRATCH="${1:-$ROOT/build/docker-e2e}"
BUILD_ROOT="${2:-}" # the meson build directory, for `meson dist`
# One tag per checkout: worktrees sharing a daemon do not replace each other's image.
IMAGE="codemcp:e2e-$(printf %s "$ROOT" | md5sum | cut -c1-8)"
mkdir -p "$SCRATCH"
cd "$ROOT" || exit 2

# shellcheck source=docker_ready.sh
. "$ROOT/tests/e2e/docker_ready.sh"

step "base image debian:bookworm-slim" "$SCRATCH/base.log" contrib/docker/make-base.sh
step "docker build $IMAGE" "$SCRATCH/image.log" \
    docker build -f contrib/docker/Dockerfile -t "$IMAGE" .
# The build stage is cached from the build above: tagging it costs nothing.
step "the build stage (the .deb)" "$SCRATCH/stage.log" \
    docker build -f contrib/docker/Dockerfile --target build -t "$IMAGE-build" .
rm -rf "$SCRATCH/deb" && mkdir -p "$SCRATCH/deb"
cid=$(docker create "$IMAGE-build" true) || fail "docker create $IMAGE-build"
docker cp "$cid:/out/." "$SCRATCH/deb/" >/dev/null || fail "docker cp the .deb out of $IMAGE-build"
docker rm "$cid" >/dev/null
ls "$SCRATCH"/deb/codemcp_*_*.deb >/dev/null 2>&1 || fail "the build stage made no codemcp_<version>_<arch>.deb"
if command -v lintian >/dev/null; then
    # The flags contrib/debian/build.sh uses; README.lintian explains the info tags left.
    step "lintian" "$SCRATCH/lintian.log" lintian --fail-on error,warning "$SCRATCH"/deb/codemcp_*.deb
else
    echo "note: lintian is not installed; the package was not linted"
fi
# The source tarball (README, "Install"): from git, so only in a checkout.
if [ -n "${BUILD_ROOT:-}" ] && git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
    rm -rf "$BUILD_ROOT/meson-dist"
    step "meson dist" "$SCRATCH/dist.log" meson dist -C "$BUILD_ROOT" --no-tests --formats xztar --allow-dirty
    (cd "$BUILD_ROOT/meson-dist" && sha256sum -c ./*.tar.xz.sha256sum) || fail "the tarball's checksum"
    tar -tJf "$BUILD_ROOT"/meson-dist/*.tar.xz >"$SCRATCH/dist.list" || fail "tar -t on the tarball"
    grep -q '/contrib/debian/build.sh$' "$SCRATCH/dist.list" ||
        fail "the tarball lacks contrib/debian/build.sh"
fi
docker image prune -f >/dev/null 2>&1 # earlier builds' layers, now untagged
docker image inspect "$IMAGE" --format "image $IMAGE: {{.Size}} bytes"

CODEMCP_TEST_IMAGE="$IMAGE" CODEMCP_TEST_DEB_DIR="$SCRATCH/deb" \
    node --test --test-reporter=spec tests/e2e/docker_image.test.mjs
