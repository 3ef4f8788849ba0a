#!/usr/bin/env bash
# tests/e2e/docker_isolation.sh — CODEMCP_ISOLATION=docker against a real Docker daemon: gets
# Docker and debian:bookworm-slim ready (docker_ready.sh: skips with 77 where Docker cannot
# run), then runs a test file (argument 2; default docker_isolation.test.mjs, the escape suite
# is sandbox_docker.test.mjs) against this build's codemcp. The worker image is built by
# codemcp itself on first use, as users get it. Argument 1: a scratch directory.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SCRATCH="${1:-$ROOT/build/docker-isolation}"
mkdir -p "$SCRATCH"
cd "$ROOT" || exit 2

# shellcheck source=docker_ready.sh
. "$ROOT/tests/e2e/docker_ready.sh"

if ! docker image inspect debian:bookworm-slim >/dev/null 2>&1; then
    contrib/docker/make-base.sh >"$SCRATCH/base.log" 2>&1 || { show "$SCRATCH/base.log"; fail "make-base.sh"; }
fi
node --test --test-reporter=spec "tests/e2e/${2:-docker_isolation.test.mjs}"
