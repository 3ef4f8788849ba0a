/* control — the gateway side of the control channel to workers: connections, the token,
 * framing. Nothing else.
 *
 * WebSocket connections inside the gateway's event loop (subprotocol "codemcp-control", path
 * /control; the RFC 6455 server side is wsserver.c, not libwebsockets): by default each worker's
 * end of a socketpair made at spawn (ctl_adopt, nothing listens); CODEMCP_CONTROL_UNIX=1 /
 * CODEMCP_CONTROL_TCP=1 listen on a Unix socket in a private 0700 directory / on 127.0.0.1. A
 * worker's first frame must be its per-start token; then JSON-RPC 2.0 flows both ways. What the
 * frames mean is decided elsewhere: the token check and every frame that is not a call_tool request
 * go up to the registered hooks (workers.c, wired by main.c); call_tool requests go down to
 * calls.c, which routes and enforces them. Connections are referred to by a 64-bit id. Loop thread
 * only. */
#ifndef CODEMCP_CONTROL_H
#define CODEMCP_CONTROL_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct ctl_hooks {
    /* A new connection's first frame, the token (NUL-terminated, at most 128 bytes): returns
     * the worker slot it belongs to, or -1 (the connection is then closed). */
    int (*authenticate)(const char *token, uint64_t conn_id);
    /* A frame of an authenticated connection that is not a request (a reply or a
     * notification of the worker). msg borrowed. */
    void (*message)(int slot, json_t *msg);
    /* Offered every such frame first, as its bytes: 1 when it took it (then `message` is not
     * called), 0 to have it decoded and passed to `message`. May be NULL. */
    int (*frame)(int slot, const char *text, size_t len);
    /* An authenticated connection closed (its calls are already cancelled). */
    void (*disconnect)(int slot, uint64_t conn_id);
    /* The connection's byte stream cannot be read any further (a frame declaring more bytes
     * than will ever be read): why says so; the connection is closed right after. */
    void (*broken)(int slot, uint64_t conn_id, const char *why);
    /* Whether pid is a worker still starting (no agent code yet): such a peer is never
     * pushed out by a connection flood (connlimit.c), it gets its start timeout. */
    int (*is_starting)(pid_t pid);
};

/* Registers the hooks (copied); before the first worker connects. */
void ctl_set_hooks(const struct ctl_hooks *h);
/* Sets up the control channel: no listener by default (socketpairs, ctl_adopt), or one on
 * 127.0.0.1 (CODEMCP_CONTROL_TCP) or a private Unix socket (CODEMCP_CONTROL_UNIX). 0 / -1. */
struct settings;
int ctl_init(const struct settings *s);
/* The listener's URL for the worker's environment ("ws://127.0.0.1:PORT/control",
 * "unix:/path"), or "" when workers get a socketpair. */
const char *ctl_url(void);
/* Takes the gateway's end of a worker's socketpair (owned from now on, closed on failure; the
 * worker still shakes hands and sends its token). 0 / -1. */
int ctl_adopt(int fd);
/* Sends msg (stolen) to the connection. -1 if it is gone; CALLS_TOO_LARGE (calls.h) for a
 * frame longer than ctl_frame_limit(): nothing was sent, the connection stays open. */
int ctl_send(uint64_t conn_id, json_t *msg);
/* Sends one text frame made of the n pieces, as they are (the caller's bytes are JSON). -1 if
 * the connection is gone; CALLS_TOO_LARGE as ctl_send. */
int ctl_send_parts(uint64_t conn_id, const struct iovec *iov, int n);
/* The same, iov[held] lying in *block (malloc'd; NULL block: none): kept and written from
 * there, not copied (*block set to NULL: the connection frees it once written). */
int ctl_send_parts_held(uint64_t conn_id, const struct iovec *iov, int n, int held, char **block);
/* The longest frame sent to or read from a worker: CODEMCP_CONTROL_MAX_FRAME. */
size_t ctl_frame_limit(void);
/* "CODEMCP_CONTROL_MAX_FRAME=N" for a worker's environment: the worker reads frames up to the
 * gateway's own cap, so a raised setting cannot make it drop a frame the gateway sends. */
const char *ctl_frame_env(void);
/* Bytes queued to the connection and not yet written to its worker (0: gone). */
size_t ctl_pending(uint64_t conn_id);
/* Closes a connection (e.g. its worker is being killed). */
void ctl_close(uint64_t conn_id);
void ctl_free_all(void);

#endif
