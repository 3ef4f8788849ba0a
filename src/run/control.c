/* control — see control.h.
 *
 * Frames come in and go out here; what they mean is decided elsewhere: the token and every
 * reply or notification go up to workers.c through the hooks, call_tool requests go down
 * to calls.c. This file must not learn about runs or tools.
 *
 * Connections are the loop's own descriptors (lp_io, loop.h): a worker's socketpair end
 * (ctl_adopt), or one accepted from the listener CODEMCP_CONTROL_TCP / _UNIX asks for (an
 * lp_io whose readiness means accept()). Their bytes go through wsserver.c, the server half of
 * RFC 6455 (handshake, masked frames, ping and close, the size cap); everything the worker
 * writes is hostile: agent code can write on the socket itself. Outgoing messages are framed
 * here (wsproto's header encoder; server frames are unmasked) and queued with lp_io_write,
 * which writes everything one loop iteration queued for a descriptor in one write at its end:
 * the 50 replies of 50 concurrent calls cost one send, not 50, and no poll round waits for
 * writability. Pongs and closes are queued the same way, so they land between whole frames.
 * A connection this side ends is closed without waiting for the peer to read
 * (lp_io_close_nowait): a worker that stops reading cannot hold it open. */
#include "control.h"
#include "calls.h"
#include "connlimit.h"
#include "idmap.h"
#include "jsonfast.h"
#include "jsonrpc.h"
#include "log.h"
#include "settings.h"
#include "loop.h"
#include "util.h"
#include "wsproto.h"
#include "wsserver.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#define CTL_PROTOCOL "codemcp-control"
#define CTL_PATH     "/control"
/* Bytes of a frame over the size cap kept to find its id. */
#define CTL_HEAD_KEPT 4096
/* A frame over the cap is read to its end and dropped, so the next one can be read; one that
 * declares more than this (and 4 x the cap) never ends in practice (2^63 bytes: agent code
 * writing on the socket itself): the stream is given up at once instead. */
#define CTL_GIVE_UP ((uint64_t)1 << 30)
/* Connections accepted per readiness of the listener: a flood's backlog is taken over a few
 * loop rounds, so the ones closed to make room (at the end of each round) stay few. */
#define CTL_ACCEPT_PER_ROUND 32

struct ctl_conn {
    uint64_t id; /* 0 until the handshake is done; then the key in `conns` */
    struct lp_io *io;
    struct wss ws;
    int slot;                       /* -1 until the token is accepted */
    int closing;                    /* being closed: nothing more is read or handed up */
    struct ctl_conn *next, **pprev; /* every open one, for ctl_free_all */
};

static struct lp_io *listener; /* CODEMCP_CONTROL_TCP / _UNIX only */
static int ready;
static char url[300];
static char sock_dir[200], sock_path[220];
static struct idmap conns; /* id -> connection, from its handshake on */
static struct ctl_conn *all_conns;
static uint64_t next_conn_id = 1;
static size_t max_frame;
/* CODEMCP_CONTROL_MAX_UNREAD: bytes queued to a worker and not yet written past which it is
 * ended (the run fails and says why): a worker that stops reading (stopped, or agent code
 * holding the socket) while something makes the gateway answer it would grow the gateway's
 * memory without bound. Checked before a frame is queued, so one frame larger than this still
 * reaches a worker that reads. */
static size_t max_unread;
static struct wss_config wss_cfg;
static struct ctl_hooks hooks;

void ctl_set_hooks(const struct ctl_hooks *h)
{
    hooks = *h;
}

static struct ctl_conn *conn_find(uint64_t id)
{
    return idmap_get(&conns, id);
}

/* Ends c: on_close (conn_on_close) follows at the end of the iteration. */
static void conn_close(struct ctl_conn *c)
{
    if (c->closing)
        return;
    c->closing = 1;
    lp_io_close_nowait(c->io);
}

/* A worker that has not read what was already queued for it is ended instead of being sent
 * more (max_unread): 1 when c is closing (now or already), else 0. */
static int unread_over_cap(struct ctl_conn *c)
{
    if (c->closing)
        return 1;
    size_t queued = lp_io_pending(c->io);
    if (queued <= max_unread)
        return 0;
    char why[300];
    snprintf(why, sizeof(why),
             "the Python worker did not read %zu bytes the gateway had sent it "
             "(CODEMCP_CONTROL_MAX_UNREAD %zu): the worker was ended and this session's "
             "variables were lost",
             queued, max_unread);
    log_warn("control", "connection %llu: %zu bytes unread by the worker: closing it",
             (unsigned long long)c->id, queued);
    if (c->slot >= 0 && hooks.broken)
        hooks.broken(c->slot, c->id, why);
    conn_close(c);
    return 1;
}

size_t ctl_frame_limit(void)
{
    return max_frame;
}

const char *ctl_frame_env(void)
{
    static char env[64];
    snprintf(env, sizeof(env), "CODEMCP_CONTROL_MAX_FRAME=%zu", max_frame);
    return env;
}

/* Queues one text frame made of n pieces (written one after the other). CALLS_TOO_LARGE, and
 * nothing queued, past ctl_frame_limit(): the worker would drop the connection, and its
 * variables with it. */
static int queue_frame(struct ctl_conn *c, const struct iovec *iov, int n, int held, char **block)
{
    if (unread_over_cap(c))
        return -1;
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += iov[i].iov_len;
    if (len > ctl_frame_limit()) {
        log_warn("control", "a %zu-byte frame for a worker is over the %zu-byte limit: not sent",
                 len, ctl_frame_limit());
        return CALLS_TOO_LARGE;
    }
    unsigned char hdr[10];
    size_t h = wsp_put_header(hdr, WSP_OP_TEXT, len, 0); /* server frames are unmasked */
    if (lp_io_write(c->io, hdr, h) < 0)
        return 0; /* closing */
    for (int i = 0; i < n; i++) {
        if (i == held && block && *block &&
            lp_io_hold(c->io, *block, iov[i].iov_base, iov[i].iov_len) == 0)
            *block = NULL; /* the loop's now: a big result is not copied beside its line */
        else
            lp_io_write(c->io, iov[i].iov_base, iov[i].iov_len);
    }
    return 0;
}

/* Queues msg as one text frame, encoded straight into the connection's output: a 50 MB result
 * is not also held as a text of its own while it is copied there. Room for the longest header
 * is left before it; a frame under 64 KiB has a shorter one, and its payload moves up to it.
 * -1 (nothing queued) when msg does not encode; else as queue_frame. */
static int queue_json(struct ctl_conn *c, json_t *msg)
{
    enum { MAX_HEADER = 10 }; /* wsp_put_header's longest (a payload of 64 KiB or more) */
    if (unread_over_cap(c))
        return -1;
    struct buf *out = lp_io_out(c->io);
    if (!out)
        return 0; /* closing */
    size_t at = out->len;
    buf_append(out, "\0\0\0\0\0\0\0\0\0\0", MAX_HEADER);
    int rc = jf_append(&out->data, &out->len, &out->cap, msg, NULL, 0);
    size_t len = out->len - at - MAX_HEADER;
    if (rc == 0 && len > ctl_frame_limit()) {
        log_warn("control", "a %zu-byte frame for a worker is over the %zu-byte limit: not sent",
                 len, ctl_frame_limit());
        rc = CALLS_TOO_LARGE;
    }
    if (rc != 0) {
        out->len = at;
        out->data[at] = '\0';
        return rc;
    }
    unsigned char hdr[MAX_HEADER];
    size_t h = wsp_put_header(hdr, WSP_OP_TEXT, len, 0); /* server frames are unmasked */
    memcpy(out->data + at, hdr, h);
    if (h < MAX_HEADER) {
        memmove(out->data + at + h, out->data + at + MAX_HEADER, len + 1); /* with the NUL */
        out->len -= MAX_HEADER - h;
    }
    return 0;
}

int ctl_send(uint64_t conn_id, json_t *msg)
{
    struct ctl_conn *c = conn_find(conn_id);
    int rc = c ? queue_json(c, msg) : -1;
    json_decref(msg);
    return rc;
}

int ctl_send_parts_held(uint64_t conn_id, const struct iovec *iov, int n, int held, char **block)
{
    struct ctl_conn *c = conn_find(conn_id);
    if (!c)
        return -1;
    return queue_frame(c, iov, n, held, block);
}

int ctl_send_parts(uint64_t conn_id, const struct iovec *iov, int n)
{
    return ctl_send_parts_held(conn_id, iov, n, -1, NULL);
}

size_t ctl_pending(uint64_t conn_id)
{
    struct ctl_conn *c = conn_find(conn_id);
    return c ? lp_io_pending(c->io) : 0;
}

void ctl_close(uint64_t conn_id)
{
    struct ctl_conn *c = conn_find(conn_id);
    if (c)
        conn_close(c);
}

/* ---- messages ----------------------------------------------------------------------------- */

/* A worker frame that did not decode or was too large. A request (a call) is answered with
 * an error under the id its head names, so that call fails at once; an answer (to a run)
 * ends what it answers with the reason, as if the worker had answered with that error. A
 * frame cut before its end with no "method" in what is left may be either: both are done
 * (workers.c ignores an answer to nothing; the worker keeps a reply nobody waits for). */
static void refuse_frame(struct ctl_conn *c, const char *text, size_t len, int code,
                         const char *why)
{
    int is_request = 0;
    json_t *id = jf_frame_id(text, len, &is_request); /* new ref or NULL */
    if (id && is_request <= 0 && c->slot >= 0 && hooks.message) {
        char msg[300];
        snprintf(msg, sizeof(msg), "the worker's answer could not be read: %s", why);
        json_t *m = rpc_error(id, code, msg, NULL);
        hooks.message(c->slot, m);
        json_decref(m);
    }
    if (!id || is_request != 0 || c->slot < 0 || !hooks.message)
        ctl_send(c->id, rpc_error(id, code, why, NULL));
    json_decref(id);
}

static void handle_frame(struct ctl_conn *c, const char *text, size_t len)
{
    if (c->slot < 0) {
        char token[129];
        size_t n = len < sizeof(token) - 1 ? len : sizeof(token) - 1;
        memcpy(token, text, n);
        token[n] = '\0';
        c->slot = len < sizeof(token) && hooks.authenticate ? hooks.authenticate(token, c->id) : -1;
        if (c->slot < 0) {
            log_warn("control", "connection %llu sent a wrong token: closing it",
                     (unsigned long long)c->id);
            conn_close(c);
        } else {
            cl_set_phase(CL_CONTROL, c, CL_ACTIVE);
        }
        return;
    }
    /* The usual call_tool frame, in the form the worker writes it: handled from its bytes
     * (calls.c); anything else, or anything unusual in it, decoded as a tree below. */
    if (calls_handle_frame(c->id, c->slot, text, len))
        return;
    if (hooks.frame && hooks.frame(c->slot, text, len)) /* a run's answer as bytes */
        return;
    json_error_t jerr;
    json_t *msg = jf_loadb(text, len, JF_ALLOW_NUL | JF_BIG_INTEGERS, &jerr);
    if (!msg) {
        refuse_frame(c, text, len, RPC_PARSE_ERROR, jerr.text);
        return;
    }
    const char *why;
    enum rpc_kind kind = rpc_classify(msg, &why);
    if (kind == RPC_REQUEST &&
        strcmp(json_string_value(json_object_get(msg, "method")), "call_tool") == 0) {
        calls_handle(c->id, c->slot, json_object_get(msg, "id"), json_object_get(msg, "params"));
    } else if (kind == RPC_REQUEST &&
               strcmp(json_string_value(json_object_get(msg, "method")), "read_resource") == 0) {
        calls_read_resource(c->id, c->slot, json_object_get(msg, "id"),
                            json_object_get(msg, "params"));
    } else if (kind == RPC_INVALID) {
        ctl_send(c->id, rpc_error(json_object_get(msg, "id"), RPC_INVALID_REQUEST, why, NULL));
    } else if (kind == RPC_REQUEST) {
        ctl_send(c->id, rpc_error(json_object_get(msg, "id"), RPC_METHOD_NOT_FOUND,
                                  "workers may only send call_tool and read_resource", NULL));
    } else if (hooks.message) {
        hooks.message(c->slot, msg);
    }
    json_decref(msg);
}

/* ---- the WebSocket layer's callbacks (wsserver.h) ------------------------------------------ */

static void ws_send(void *ud, const void *data, size_t len)
{
    struct ctl_conn *c = ud;
    if (!unread_over_cap(c))
        lp_io_write(c->io, data, len);
}

static void ws_open(void *ud)
{
    struct ctl_conn *c = ud;
    c->id = next_conn_id++;
    idmap_put(&conns, c->id, c);
}

/* A whole message. An empty one is ignored, as it always was. Binary messages are read like
 * text ones (libwebsockets handed both over alike): the JSON reader decides. */
static int ws_message(void *ud, const char *data, size_t len, int binary)
{
    struct ctl_conn *c = ud;
    (void)binary;
    if (c->closing)
        return -1;
    if (len)
        handle_frame(c, data, len);
    return c->closing ? -1 : 0;
}

static int ws_oversized(void *ud, const char *head, size_t len, uint64_t total)
{
    struct ctl_conn *c = ud;
    (void)total;
    if (c->closing)
        return -1;
    log_warn("control", "worker frame over %zu bytes refused", max_frame);
    refuse_frame(c, head, len, RPC_INVALID_REQUEST, "frame too large");
    return c->closing ? -1 : 0;
}

/* The message being received declares more bytes than are worth reading to find the next one:
 * what it holds so far is refused (a call it names fails), and the worker is told why through
 * the broken hook (its run ends with that message); the connection is closed after this. */
static void ws_give_up(void *ud, const char *head, size_t len, uint64_t total)
{
    struct ctl_conn *c = ud;
    if (c->closing)
        return;
    char why[300];
    snprintf(why, sizeof(why),
             "the Python worker wrote a control frame declaring %llu bytes (the cap is %zu): "
             "the control channel cannot be read past it, so the worker was restarted and "
             "this session's variables were lost",
             (unsigned long long)total, max_frame);
    log_warn("control", "connection %llu: a frame declaring %llu bytes: closing it",
             (unsigned long long)c->id, (unsigned long long)total);
    if (len)
        refuse_frame(c, head, len, RPC_INVALID_REQUEST, "frame too large");
    if (c->slot >= 0 && hooks.broken)
        hooks.broken(c->slot, c->id, why);
}

static const struct wss_ops ws_ops = {
    .send = ws_send,
    .open = ws_open,
    .message = ws_message,
    .oversized = ws_oversized,
    .give_up = ws_give_up,
};

/* wss_feed said the stream is over: says why where it matters, and closes. */
static void stream_ended(struct ctl_conn *c)
{
    if (c->ws.end == WSS_END_REFUSED) {
        log_debug("control", "refused a connection's upgrade request: %s", c->ws.error);
    } else if (c->ws.end == WSS_END_PROTOCOL && !c->closing) {
        log_warn("control", "connection %llu broke the WebSocket protocol (%s): closing it",
                 (unsigned long long)c->id, c->ws.error);
        if (c->slot >= 0 && hooks.broken) {
            char why[300];
            snprintf(why, sizeof(why),
                     "the Python worker wrote a control frame that breaks the WebSocket "
                     "protocol (%s): the control channel was closed, so the worker was "
                     "restarted and this session's variables were lost",
                     c->ws.error);
            hooks.broken(c->slot, c->id, why);
        }
    }
    conn_close(c);
}

/* ---- connections -------------------------------------------------------------------------- */

static void conn_on_read(void *ud, const char *data, size_t len)
{
    struct ctl_conn *c = ud;
    if (!c->closing && wss_feed(&c->ws, data, len, &ws_ops, c))
        stream_ended(c);
}

static void conn_on_close(void *ud)
{
    struct ctl_conn *c = ud;
    cl_remove(CL_CONTROL, c);
    DLIST_UNLINK(c);
    if (c->id) {
        if (idmap_get(&conns, c->id) == c)
            idmap_del(&conns, c->id);
        /* Calls of this connection can no longer be answered: cancel them upstream. */
        calls_conn_closed(c->id);
        if (c->slot >= 0 && hooks.disconnect)
            hooks.disconnect(c->slot, c->id);
    }
    wss_free(&c->ws);
    free(c);
}

static const struct lp_io_ops conn_ops = {.on_read = conn_on_read, .on_close = conn_on_close};

/* How connlimit.c reaches a connection (it is the pool's handle). */
static int cl_fd(void *h)
{
    return lp_io_fd(((struct ctl_conn *)h)->io);
}

static void cl_close(void *h)
{
    conn_close(h);
}

static int cl_mid_request(void *h)
{
    return wss_mid_handshake(&((struct ctl_conn *)h)->ws);
}

static const struct cl_conn_ops cl_ops = {
    .fd = cl_fd,
    .close = cl_close,
    .mid_request = cl_mid_request,
};

/* Serves fd (a connected socket, owned from now on). -1 if it cannot be watched (fd closed). */
static int conn_new(int fd)
{
    struct ctl_conn *c = xcalloc(1, sizeof(*c));
    c->slot = -1;
    wss_init(&c->ws, &wss_cfg);
    c->io = lp_io_watch(fd, 1, &conn_ops, c);
    if (!c->io) {
        free(c);
        return -1;
    }
    DLIST_PUSH(&all_conns, c);
    /* bounded: see connlimit.h (may close older pending connections to make room) */
    if (cl_add(CL_CONTROL, c, &cl_ops, "") < 0)
        conn_close(c);
    return 0;
}

/* The listener is readable: accepts what is queued (CTL_ACCEPT_PER_ROUND at most; the rest is
 * reported again). Out of descriptors, lp_accept_failed drains the queue (connlimit.c). */
static void listener_ready(void *ud)
{
    (void)ud;
    int lfd = lp_io_fd(listener);
    for (int i = 0; i < CTL_ACCEPT_PER_ROUND; i++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            conn_new(fd);
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return;
        } else if (errno != EINTR && errno != ECONNABORTED && errno != EPROTO) {
            lp_accept_failed(errno);
            return;
        }
    }
}

static const struct lp_io_ops listener_ops = {.on_ready = listener_ready};

/* ---- set-up ------------------------------------------------------------------------------- */

/* A private directory (0700) for the control socket: only this user can connect, and the
 * token still has to match. */
static int make_socket_dir(const char *base)
{
    if (!base || !*base || access(base, W_OK) != 0)
        base = "/tmp";
    char rnd[17];
    if (random_hex(rnd, 8) < 0)
        return -1;
    snprintf(sock_dir, sizeof(sock_dir), "%s/codemcp-%d-%s", base, (int)getpid(), rnd);
    if (mkdir(sock_dir, 0700) < 0) {
        log_error("control", "cannot create %s: %s", sock_dir, strerror(errno));
        sock_dir[0] = '\0';
        return -1;
    }
    snprintf(sock_path, sizeof(sock_path), "%s/ctl.sock", sock_dir);
    return 0;
}

/* A listening socket on 127.0.0.1 (a port the kernel picks: *port) or on sock_path. The
 * descriptor, or -1 (logged). */
static int open_listener(int tcp, int *port)
{
    int fd = socket(tcp ? AF_INET : AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        goto fail;
    if (tcp) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t alen = sizeof(a);
        if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
            getsockname(fd, (struct sockaddr *)&a, &alen) < 0)
            goto fail;
        *port = ntohs(a.sin_port);
    } else {
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        if (strlen(sock_path) >= sizeof(a.sun_path)) {
            errno = ENAMETOOLONG;
            goto fail;
        }
        strcpy(a.sun_path, sock_path);
        mode_t old = umask(0177); /* born 0600: the directory is not the only guard */
        int rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
        umask(old);
        if (rc < 0)
            goto fail;
    }
    if (listen(fd, SOMAXCONN) < 0)
        goto fail;
    return fd;
fail:
    log_error("control", "cannot set up the worker control channel on %s: %s",
              tcp ? "127.0.0.1" : sock_path, strerror(errno));
    if (fd >= 0)
        close(fd);
    return -1;
}

static int peer_is_starting_worker(pid_t pid)
{
    return hooks.is_starting ? hooks.is_starting(pid) : 0;
}

int ctl_init(const struct settings *s)
{
    max_frame = (size_t)s->control_max_frame;
    max_unread = (size_t)s->control_max_unread;
    wss_cfg = (struct wss_config){
        .path = CTL_PATH,
        .protocol = CTL_PROTOCOL,
        .max_message = max_frame,
        .head_kept = CTL_HEAD_KEPT,
        .give_up = (uint64_t)max_frame > CTL_GIVE_UP / 4 ? (uint64_t)max_frame * 4 : CTL_GIVE_UP,
    };
    cl_init(CL_CONTROL, &(struct cl_limits){.max_pending = s->control_max_pending,
                                            .max_pending_per_peer = s->control_max_pending,
                                            .pending_ms = s->control_auth_timeout_ms,
                                            .body_ms = s->control_auth_timeout_ms});
    /* A starting worker (no agent code yet) is never pushed out by a flood; it gets its start
     * timeout. Connections from anyone else, a running worker included, are bounded. */
    cl_trust_peers(CL_CONTROL, peer_is_starting_worker, s->worker_start_timeout_ms);
    /* By default nothing listens: each worker gets one end of a socketpair at spawn
     * (ctl_adopt). CODEMCP_CONTROL_TCP=1 listens on 127.0.0.1 instead (host isolation
     * only: a sandbox has no route to it); CODEMCP_CONTROL_UNIX=1 on a private Unix socket. */
    int tcp = s->control_tcp;
    int unix_sock = !tcp && s->control_unix;
    url[0] = '\0';
    if (tcp || unix_sock) {
        int port = 0, fd;
        if ((unix_sock && make_socket_dir(s->xdg_runtime_dir) < 0) ||
            (fd = open_listener(tcp, &port)) < 0)
            return -1;
        listener = lp_io_watch(fd, 1, &listener_ops, NULL);
        if (!listener)
            return -1;
        if (tcp)
            snprintf(url, sizeof(url), "ws://127.0.0.1:%d%s", port, CTL_PATH);
        else
            snprintf(url, sizeof(url), "unix:%s", sock_path);
        log_debug("control", "listening on %s", url);
    }
    ready = 1;
    return 0;
}

int ctl_adopt(int fd)
{
    if (!ready)
        close(fd);
    if (!ready || conn_new(fd) < 0) { /* conn_new: lp_io_watch closed it */
        log_error("control", "cannot adopt a worker's control socket");
        return -1;
    }
    return 0;
}

const char *ctl_url(void)
{
    return url;
}

/* At exit, after the modules above are freed: connections close without telling anyone. */
void ctl_free_all(void)
{
    while (all_conns) {
        struct ctl_conn *c = all_conns;
        DLIST_UNLINK(c);
        cl_remove(CL_CONTROL, c);
        lp_io_detach(c->io);
        wss_free(&c->ws);
        free(c);
    }
    idmap_free(&conns);
    lp_io_detach(listener);
    listener = NULL;
    ready = 0;
    if (sock_path[0])
        unlink(sock_path);
    if (sock_dir[0])
        rmdir(sock_dir);
    sock_path[0] = sock_dir[0] = '\0';
}
