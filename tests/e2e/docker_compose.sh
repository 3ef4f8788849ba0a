#!/usr/bin/env bash
# tests/e2e/docker_compose.sh — contrib/fleet/compose.yaml brought up as a user does, with
# Debian's docker-compose and no image registry, then driven by docker_compose.test.mjs:
#   1. a Docker daemon and debian:bookworm-slim, as the other Docker tests get them
#      (docker_ready.sh, contrib/docker/make-base.sh); no docker-compose -> exit 77 (SKIP);
#   2. `docker-compose up -d --build` on free loopback ports, with the codemcp image tagged as
#      docker_image.sh tags it (the layers it built are reused) and a fresh pair of secrets;
#   3. the node test (balancer, sessions, `docker-compose stop r2`);
#   4. `docker-compose down -v` at exit, whatever happened (and dockerd stopped if started here).
# Logs go to $SCRATCH (argument 1).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SCRATCH="${1:-$ROOT/build/docker-compose-e2e}"
mkdir -p "$SCRATCH"
cd "$ROOT" || exit 2

# shellcheck source=docker_ready.sh
. "$ROOT/tests/e2e/docker_ready.sh"
command -v docker-compose >/dev/null || skip "docker-compose is not installed (Debian: apt-get install docker-compose)"

TAG="e2e-$(printf %s "$ROOT" | md5sum | cut -c1-8)"
export FLEET_IMAGE="codemcp:$TAG" FLEET_TOOLS_IMAGE="codemcp-fleet-tools:$TAG"
export COMPOSE_PROJECT_NAME="codemcp-$TAG" COMPOSE_FILE="$ROOT/contrib/fleet/compose.yaml"
export CODEMCP_FLEET_SECRET CODEMCP_HTTP_TOKEN FLEET_REDIS_PASSWORD
CODEMCP_FLEET_SECRET=$(openssl rand -hex 32) && CODEMCP_HTTP_TOKEN=$(openssl rand -hex 32) &&
    FLEET_REDIS_PASSWORD=$(openssl rand -hex 32) ||
    fail "openssl rand"
# Five distinct free loopback ports: the services use host networking.
read -r FLEET_PORT FLEET_R1_PORT FLEET_R2_PORT FLEET_R3_PORT FLEET_REDIS_PORT < <(python3 -c '
import socket
s = [socket.socket() for _ in range(5)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])') || fail "no free ports"
export FLEET_PORT FLEET_R1_PORT FLEET_R2_PORT FLEET_R3_PORT FLEET_REDIS_PORT
# The replicas run as uid 10001: the config must be readable by it.
export FLEET_CONFIG="$SCRATCH/mcp.json"
echo '{"mcpServers": {}}' >"$FLEET_CONFIG" && chmod 0644 "$FLEET_CONFIG" && chmod 0755 "$SCRATCH"

compose_down() {
    docker-compose logs --no-color >"$SCRATCH/services.log" 2>&1
    docker-compose down -v --remove-orphans >"$SCRATCH/down.log" 2>&1 || show "$SCRATCH/down.log"
    stop_dockerd
}
trap compose_down EXIT
trap 'exit 143' TERM INT

step "base image debian:bookworm-slim" "$SCRATCH/base.log" contrib/docker/make-base.sh
step "docker-compose up -d --build" "$SCRATCH/up.log" docker-compose up -d --build

node --test --test-reporter=spec tests/e2e/docker_compose.test.mjs
