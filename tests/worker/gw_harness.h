/* gw_harness — the fake gateway's plumbing for the worker tests (tests/worker/).
 *
 * A libwebsockets server on its own thread plays the gateway's control endpoint
 * (docs/control-protocol.md): it checks the worker's token (constant time), then passes
 * frames between the worker and the test through locked queues. The test side is plain
 * sequential code on the main thread: spawn a worker, send frames, wait for frames. */
#ifndef CODEMCP_GW_HARNESS_H
#define CODEMCP_GW_HARNESS_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/types.h>

#include "util.h"

#define GW_PROTOCOL "codemcp-control"
#define GW_PATH     "/control"

struct lws_context;
struct lws;

struct gw_msg {
    struct gw_msg *next;
    int flags; /* enum lws_write_protocol of the frame (outgoing only) */
    size_t len;
    unsigned char data[]; /* LWS_PRE headroom, text, NUL */
};

struct gw_state {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    struct gw_msg *in_head, *in_tail;   /* worker -> test, after auth */
    struct gw_msg *out_head, *out_tail; /* test -> worker */
    int authed, rejected, closed, close_req, connections;
    int pongs;           /* PONG frames received */
    char last_pong[128]; /* payload of the last one */
    atomic_int stop;
    char token[65];
    /* service thread only */
    struct lws_context *ctx;
    struct lws *conn;
    struct buf rx;
};

extern struct gw_state gw;
/* Failed CHECKs so far. */
extern int gw_failures;
/* One more NAME=value for spawned workers, or NULL. */
extern const char *gw_extra_env;

/* Records a failure and jumps to the function's `out:` label. */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            gw_failures++;                                                                         \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

/* Starts the server on 127.0.0.1:0, or on the Unix socket unix_path. 0 or -1. */
int gw_start_server(const char *unix_path);
/* Spawns $CODEMCP_WORKER_BIN with the worker environment; -1 on failure. */
pid_t gw_spawn(const char *url, const char *token);
/* gw_spawn + wait for a successful token check (30 s); -1 on failure (worker killed). */
pid_t gw_worker(const char *url, const char *token);
/* Waits for pid; returns its wait status, or -1 after SIGKILL on timeout. */
int gw_wait_exit(pid_t pid, int ms);

/* Queues a frame for the worker. gw_send consumes msg. */
void gw_send_text(const char *text);
/* Queues one raw frame: flags is an enum lws_write_protocol value (LWS_WRITE_PING,
 * LWS_WRITE_TEXT | LWS_WRITE_NO_FIN, LWS_WRITE_CONTINUATION, ...). */
void gw_send_frame(const char *data, size_t len, int flags);
void gw_send(json_t *msg);
/* Closes the worker connection from the gateway side. */
void gw_close_conn(void);
/* Waits until *flag (a gw field) is set. 0, or -1 on timeout. */
int gw_wait_flag(int *flag, int ms);
/* Next frame from the worker as JSON (new ref), skipping `log`; NULL on timeout/close. */
json_t *gw_recv(int ms);
/* The response to request `id` (new ref); NULL (and a message) on anything else. */
json_t *gw_recv_response(long id, int ms);
void gw_dump(const char *what, json_t *j);

#endif
