# tests/e2e/docker_ready.sh — sourced by the Docker tests (docker_image.sh, docker_isolation.sh)
# from the repository root with SCRATCH set: defines skip/fail/show/step, then gets a Docker daemon
# ready (the running one, else dockerd started here as root and stopped at the script's exit;
# none possible -> exit 77, meson's SKIP, with the reason, never a failure) and checks that
# debian:bookworm-slim exists or can be made by contrib/docker/make-base.sh.
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
# Prints the last lines of a log after a failed step.
show() { echo "--- last lines of $1"; tail -n 40 "$1"; }
# Runs one build step with its output in a log: its time on success, else the log's tail and FAIL.
step() { # name, log, command...
    local name="$1" log="$2" t0=$SECONDS
    shift 2
    echo "== $name"
    if ! "$@" >"$log" 2>&1; then
        show "$log"
        fail "$name failed (log: $log)"
    fi
    echo "   $((SECONDS - t0)) s"
}

[ -z "${CODEMCP_WRAPPER:-}" ] || skip "CODEMCP_WRAPPER is set: what runs inside Docker is not wrapped"
command -v docker >/dev/null || skip "docker is not installed (Debian: apt-get install docker.io)"

started_dockerd=
stop_dockerd() {
    [ -n "$started_dockerd" ] || return 0
    kill "$started_dockerd" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$started_dockerd" 2>/dev/null || return 0; sleep 0.2; done
}
trap stop_dockerd EXIT

if ! docker info >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || skip "the Docker daemon is not running and only root may start it here"
    command -v dockerd >/dev/null || skip "the Docker daemon is not running and dockerd is not installed"
    [ -S /var/run/docker.sock ] && rm -f /var/run/docker.sock # a dead daemon's socket
    dockerd >"$SCRATCH/dockerd.log" 2>&1 &
    started_dockerd=$!
    for _ in $(seq 1 60); do
        docker info >/dev/null 2>&1 && break
        kill -0 "$started_dockerd" 2>/dev/null || break
        sleep 1
    done
    if ! docker info >/dev/null 2>&1; then
        show "$SCRATCH/dockerd.log"
        started_dockerd= # it is gone or never answered: nothing of ours to stop
        skip "dockerd could not be started on this machine (its log above)"
    fi
    echo "started dockerd (pid $started_dockerd) for this test"
fi
docker image inspect debian:bookworm-slim >/dev/null 2>&1 ||
    command -v mmdebstrap >/dev/null ||
    skip "no debian:bookworm-slim image and no mmdebstrap to make it (apt-get install mmdebstrap)"
