/* docker_engine — a small blocking client of the Docker Engine API over its Unix socket
 * (DOCKER_HOST=unix:///path honoured; default /var/run/docker.sock; Podman's
 * Docker-compatible socket works the same way), for worker_docker.c.
 *
 * Every call blocks: only helper threads call it, or start-up and exit before/after the
 * loop runs. Each call uses its own libcurl easy handle, so calls from several threads at
 * once are safe. No docker CLI is ever run. */
#ifndef CODEMCP_DOCKER_ENGINE_H
#define CODEMCP_DOCKER_ENGINE_H

#include "util.h"

#include <stddef.h>
#include <stdio.h>

struct dk_reply {
    long status;     /* HTTP status; 0 when no answer came (err says why) */
    struct buf body; /* body.data: NUL-terminated, or NULL */
    char err[256];
};

/* DOCKER_HOST's value (NULL: the default socket), from the settings; before any call. */
void dk_set_host(const char *host);
/* The socket path DOCKER_HOST names, or NULL with why set (a tcp:// host is refused: the
 * Engine API without TLS on a TCP port is root for anyone who reaches it). */
const char *dk_socket(const char **why);
/* One request: method, path ("/containers/create?..."), an optional JSON body, or an
 * upload (a tar stream of upload_len bytes, for /build). timeout_ms 0: none. 0 when an HTTP
 * answer came (any status), -1 otherwise. dk_reply_free() it either way. */
int dk_call(const char *method, const char *path, const char *json, FILE *upload, long upload_len,
            long timeout_ms, struct dk_reply *r);
void dk_reply_free(struct dk_reply *r);

/* A streamed answer's bytes as they come (libcurl's write callback: return size * n to go on). */
typedef size_t (*dk_data_fn)(char *data, size_t size, size_t n, void *ud);
/* POSTs to path and hands the answer's body to on_data until the daemon ends it (a
 * container's attach stream). 0, or -1 with err. */
int dk_stream(const char *path, dk_data_fn on_data, void *ud, char *err, size_t err_len);

#endif
