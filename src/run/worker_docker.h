/* worker_docker — CODEMCP_ISOLATION=docker: each worker slot's process in a container of its
 * own, made through the Docker Engine API (docker_engine.h), for worker_spawn.c.
 *
 * Hardening: removed once stopped, every capability dropped, no-new-privileges, no network unless
 * CODEMCP_DOCKER_NETWORK names one, a read-only root (CODEMCP_DOCKER_READONLY), a tmpfs
 * /tmp, memory / CPU / pids limits, a non-root user, the worker's files in the read-only
 * image. The control channel is a Unix socket the gateway listens on in a private 0700
 * directory bind-mounted into that one container only: no port anything else could reach,
 * and the gateway sees the connection as one more adopted socket (control.h). The attach
 * stream was the other choice; it multiplexes stdout and stderr in Docker's own framing and
 * would need a second WebSocket transport in the worker.
 *
 * Engine calls never block the loop: each start runs on a helper thread (image check or
 * build, create, start, then the long wait for the container's end), which reports back
 * through lp_post; a second one relays the container's output (its attach stream) to the
 * log, as the exec'd worker's pipes are. Containers carry labels naming this gateway; the ones of a
 * gateway that is gone (SIGKILLed) are removed at the next start, this gateway's at exit. Loop
 * thread. */
#ifndef CODEMCP_WORKER_DOCKER_H
#define CODEMCP_WORKER_DOCKER_H

struct worker;

/* Reads the CODEMCP_DOCKER_* settings, checks the daemon answers, removes containers of
 * gateways that are gone, and removes this gateway's at exit. 0, or -1 (logged). Start-up
 * only (blocks briefly, before the loop serves anything). */
struct settings;
int wkd_init(const struct settings *s);
/* DOWN/STARTING -> STARTING: the container is made in the background; it connects, or its
 * end comes as on_worker_exit(w, 0, status). 0, -1 (start_failure set). */
int wkd_spawn(struct worker *w);
/* Kills the slot's container (or stops its start). */
void wkd_kill(struct worker *w);
/* 1 while the slot's container is being made or runs (its end not yet reported). */
int wkd_alive(const struct worker *w);

#endif
