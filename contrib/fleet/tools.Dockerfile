# contrib/fleet/tools.Dockerfile — HAProxy and Redis for contrib/fleet/compose.yaml, from
# Debian's own packages (haproxy 2.6, redis-server 7.0) on the same Debian base the codemcp
# image starts from, so the fleet comes up where only Debian's archive is reachable (no image
# registry). One image serves both services: each runs its own command.
#
#   docker build -f contrib/fleet/tools.Dockerfile -t codemcp-fleet-tools contrib/fleet
#
# BASE defaults to debian:bookworm-slim (contrib/docker/make-base.sh makes it locally).
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends haproxy redis-server \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*
