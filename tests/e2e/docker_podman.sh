#!/usr/bin/env bash
# tests/e2e/docker_podman.sh — CODEMCP_ISOLATION=docker against Podman's Docker-compatible API:
# starts a rootful `podman system service` on a socket in the scratch directory (stopped at
# exit), gets debian:bookworm-slim into Podman's store without a registry (copied from Docker
# when it has it, else contrib/docker/make-base.sh --engine podman), then runs the escape suite
# (sandbox_docker.test.mjs) and docker_isolation.test.mjs with DOCKER_HOST on that socket. The
# worker image is built by codemcp itself, through the service's /build. Skips (77) only when
# podman is not installed or this is not root (rootless Podman is not covered).
# Argument 1: a scratch directory.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SCRATCH="${1:-$ROOT/build/docker-podman}"
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"
cd "$ROOT" || exit 2

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
show() { echo "--- last lines of $1"; tail -n 40 "$1"; }

[ -z "${CODEMCP_WRAPPER:-}" ] || skip "CODEMCP_WRAPPER is set: what runs inside a container is not wrapped"
command -v podman >/dev/null || skip "podman is not installed (Debian: apt-get install podman)"
[ "$(id -u)" = 0 ] || skip "rootful Podman needs root (rootless Podman is not covered)"

if ! podman image exists debian:bookworm-slim; then
    if command -v docker >/dev/null && docker image inspect debian:bookworm-slim >/dev/null 2>&1; then
        docker save debian:bookworm-slim | podman load >"$SCRATCH/base.log" 2>&1 ||
            { show "$SCRATCH/base.log"; fail "docker save | podman load"; }
    else
        command -v mmdebstrap >/dev/null ||
            skip "no debian:bookworm-slim for Podman and no mmdebstrap to make it (apt-get install mmdebstrap)"
        contrib/docker/make-base.sh --engine podman >"$SCRATCH/base.log" 2>&1 ||
            { show "$SCRATCH/base.log"; fail "make-base.sh --engine podman"; }
    fi
fi

# Podman's default OCI runtime, crun, refuses a host whose cgroup v2 hierarchy has controllers
# beside the v1 ones ("cgroups in hybrid mode not supported"): there the service runs runc
# (Docker's own runtime, which takes such a host). Probed with what codemcp asks of a worker
# container: a memory cap, a pids cap and explicit rlimits.
runtime=()
probe() {
    podman "$@" run --rm --network=none --memory=64m --pids-limit=32 \
        --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 debian:bookworm-slim true
}
if ! probe >"$SCRATCH/probe.log" 2>&1; then
    if grep -q "hybrid mode" "$SCRATCH/probe.log" && command -v runc >/dev/null &&
        probe --runtime runc >>"$SCRATCH/probe.log" 2>&1; then
        echo "note: crun refuses this host's hybrid cgroups; the Podman service runs runc"
        runtime=(--runtime runc)
    else
        show "$SCRATCH/probe.log"
        fail "Podman cannot start a container with a memory cap on this host"
    fi
fi

SOCK="$SCRATCH/podman.sock"
# From the scratch directory: conmon writes a file named oom into its working directory when
# a container is OOM-killed (the memory cap test does that).
(cd "$SCRATCH" && exec podman "${runtime[@]}" system service --time=0 "unix://$SOCK") >"$SCRATCH/service.log" 2>&1 &
service=$!
stop_service() {
    kill "$service" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$service" 2>/dev/null || return 0; sleep 0.1; done
}
trap stop_service EXIT
answers() {
    python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
s.sendall(b"GET /_ping HTTP/1.0\r\n\r\n")
sys.exit(0 if b" 200 " in s.recv(100) else 1)' "$SOCK" 2>/dev/null
}
for _ in $(seq 1 60); do answers && break; kill -0 "$service" 2>/dev/null || break; sleep 0.5; done
answers || { show "$SCRATCH/service.log"; fail "podman system service did not answer on $SOCK"; }

DOCKER_HOST="unix://$SOCK" node --test --test-reporter=spec tests/e2e/sandbox_docker.test.mjs \
    tests/e2e/docker_isolation.test.mjs
