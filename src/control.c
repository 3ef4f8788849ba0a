/* control — see control.h.
 *
 * Frames come in and go out here; what they mean is decided elsewhere: the token and every
 * reply or notification go up to workers.c through the hooks, call_tool requests go down
 * to calls.c. This file must not learn about runs or tools.
 *
 * lws traps handled: a WS upgrade without our subprotocol binds to protocol 0 and would
 * hang, so protocol 0 refuses every connection; messages arrive in fragments and have no
 * size limit of their own, so we accumulate with a cap. Outgoing messages are framed here
 * (wsproto's header encoder; server frames are unmasked) into one byte queue per connection and
 * leave at the end of the loop iteration as one LWS_WRITE_RAW: the 50 replies of 50
 * concurrent calls cost one send, not 50, and no poll round waits for WRITEABLE. Only when
 * lws still holds a partial send do we wait for WRITEABLE; the queue is written whole, so
 * frames lws sends itself (pong, close) can only land between whole frames. */
#include "control.h"
#include "calls.h"
#include "connlimit.h"
#include "idmap.h"
#include "jsonfast.h"
#include "jsonrpc.h"
#include "log.h"
#include "loop.h"
#include "util.h"
#include "wsproto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define CTL_PROTOCOL "codemcp-control"
/* Bytes of a frame over the size cap kept to find its id. */
#define CTL_HEAD_KEPT 4096
/* A frame over the cap is read to its end and dropped, so the next one can be read; one that
 * declares more than this (and 4 x the cap) never ends in practice (2^63 bytes: agent code
 * writing on the socket itself): the stream is given up at once instead. */
#define CTL_GIVE_UP ((uint64_t)1 << 30)

struct ctl_conn {
    uint64_t id;
    struct lws *wsi;
    int slot; /* -1 until the token is accepted */
    struct buf rx;
    int rx_overflow;
    struct buf out;           /* framed messages not yet handed to lws */
    struct lp_deferred flush; /* hands `out` to lws at the end of the iteration */
};

static struct lws_vhost *vhost;
static char url[300];
static char sock_dir[200], sock_path[220];
static struct idmap conns; /* id -> connection */
static uint64_t next_conn_id = 1;
static size_t max_frame;
static struct ctl_hooks hooks;

void ctl_set_hooks(const struct ctl_hooks *h)
{
    hooks = *h;
}

static struct ctl_conn *conn_find(uint64_t id)
{
    return idmap_get(&conns, id);
}

/* Hands the whole queue to lws unless lws still holds part of an earlier send; then
 * WRITEABLE comes back here once that is out. -1 when the connection is broken. */
static int conn_write_out(struct ctl_conn *c)
{
    if (!c->out.len)
        return 0;
    if (lws_partial_buffered(c->wsi)) {
        lws_callback_on_writable(c->wsi);
        return 0;
    }
    int n = lws_write(c->wsi, (unsigned char *)c->out.data, c->out.len, LWS_WRITE_RAW);
    buf_consume(&c->out, c->out.len);
    return n < 0 ? -1 : 0;
}

static void conn_flush(void *ud)
{
    struct ctl_conn *c = ud;
    if (conn_write_out(c) < 0)
        lws_set_timeout(c->wsi, 1, LWS_TO_KILL_ASYNC);
}

/* Queues one text frame made of n pieces (written one after the other). */
static void queue_frame(struct ctl_conn *c, const struct iovec *iov, int n)
{
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += iov[i].iov_len;
    unsigned char hdr[10];
    size_t h = wsp_put_header(hdr, WSP_OP_TEXT, len, 0); /* server frames are unmasked */
    if (!c->out.len)
        lp_defer(&c->flush, conn_flush, c);
    buf_append(&c->out, hdr, h);
    for (int i = 0; i < n; i++)
        buf_append(&c->out, iov[i].iov_base, iov[i].iov_len);
}

int ctl_send(uint64_t conn_id, json_t *msg)
{
    struct ctl_conn *c = conn_find(conn_id);
    char *text = c ? rpc_dump(msg) : NULL;
    json_decref(msg);
    if (!text)
        return -1;
    queue_frame(c, &(struct iovec){text, strlen(text)}, 1);
    free(text);
    return 0;
}

int ctl_send_parts(uint64_t conn_id, const struct iovec *iov, int n)
{
    struct ctl_conn *c = conn_find(conn_id);
    if (!c)
        return -1;
    queue_frame(c, iov, n);
    return 0;
}

void ctl_close(uint64_t conn_id)
{
    struct ctl_conn *c = conn_find(conn_id);
    if (c)
        lws_set_timeout(c->wsi, 1, LWS_TO_KILL_ASYNC);
}

/* ---- frames ------------------------------------------------------------------------------- */

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
            lws_set_timeout(c->wsi, 1, LWS_TO_KILL_ASYNC);
        } else {
            cl_set_phase(CL_CONTROL, c->wsi, CL_ACTIVE);
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
    } else if (kind == RPC_INVALID) {
        ctl_send(c->id, rpc_error(json_object_get(msg, "id"), RPC_INVALID_REQUEST, why, NULL));
    } else if (kind == RPC_REQUEST) {
        ctl_send(c->id, rpc_error(json_object_get(msg, "id"), RPC_METHOD_NOT_FOUND,
                                  "workers may only send call_tool", NULL));
    } else if (hooks.message) {
        hooks.message(c->slot, msg);
    }
    json_decref(msg);
}

/* The frame being received declares more bytes than are worth reading to find the next one:
 * what it holds so far is refused (a call it names fails), the worker is told why through the
 * broken hook (its run ends with that message), and 1 is returned: close the connection. */
static int frame_never_ends(struct ctl_conn *c, size_t len)
{
    /* (once over the cap, rx holds only the message's head: its length does not count) */
    uint64_t total =
        (uint64_t)(c->rx_overflow ? 0 : c->rx.len) + len + lws_remaining_packet_payload(c->wsi);
    uint64_t give_up =
        (uint64_t)max_frame > CTL_GIVE_UP / 4 ? (uint64_t)max_frame * 4 : CTL_GIVE_UP;
    if (total <= give_up)
        return 0;
    char why[300];
    snprintf(why, sizeof(why),
             "the Python worker wrote a control frame declaring %llu bytes (the cap is %zu): "
             "the control channel cannot be read past it, so the worker was restarted and "
             "this session's variables were lost",
             (unsigned long long)total, max_frame);
    log_warn("control", "connection %llu: a frame declaring %llu bytes: closing it",
             (unsigned long long)c->id, (unsigned long long)total);
    if (c->rx.len)
        refuse_frame(c, c->rx.data, c->rx.len, RPC_INVALID_REQUEST, "frame too large");
    buf_free(&c->rx);
    if (c->slot >= 0 && hooks.broken)
        hooks.broken(c->slot, c->id, why);
    return 1;
}

static int refuse_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                           size_t len)
{
    (void)user;
    (void)in;
    (void)len;
    switch (reason) {
    case LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED: /* bounded: see connlimit.h */
        return cl_on_accept(CL_CONTROL, wsi);
    case LWS_CALLBACK_WSI_DESTROY:
        cl_on_destroy(CL_CONTROL, wsi);
        return 0;
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION: /* upgrade without our subprotocol */
    case LWS_CALLBACK_HTTP:
        return -1;
    default:
        return 0;
    }
}

static int ctl_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                        size_t len)
{
    struct ctl_conn *c = user;
    switch (reason) {
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION: {
        char uri[64];
        if (lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI) < 0 ||
            strcmp(uri, "/control") != 0)
            return -1;
        return 0;
    }
    case LWS_CALLBACK_ESTABLISHED:
        memset(c, 0, sizeof(*c));
        c->id = next_conn_id++;
        c->wsi = wsi;
        c->slot = -1;
        idmap_put(&conns, c->id, c);
        return 0;
    case LWS_CALLBACK_RECEIVE:
        if (frame_never_ends(c, len))
            return -1; /* closes it: the stream cannot be read past this frame */
        if (!c->rx_overflow) {
            if (c->rx.len + len > max_frame) {
                c->rx_overflow = 1; /* only its head is kept, for its id (jf_frame_id) */
                struct buf head = {0};
                size_t from_rx = c->rx.len < CTL_HEAD_KEPT ? c->rx.len : CTL_HEAD_KEPT;
                size_t from_in = CTL_HEAD_KEPT - from_rx < len ? CTL_HEAD_KEPT - from_rx : len;
                if (from_rx)
                    buf_append(&head, c->rx.data, from_rx);
                buf_append(&head, in, from_in);
                buf_free(&c->rx);
                c->rx = head;
            } else {
                buf_append(&c->rx, in, len);
            }
        }
        if (lws_is_final_fragment(wsi) && !lws_remaining_packet_payload(wsi)) {
            if (c->rx_overflow) {
                log_warn("control", "worker frame over %zu bytes refused", max_frame);
                c->rx_overflow = 0;
                refuse_frame(c, c->rx.data, c->rx.len, RPC_INVALID_REQUEST, "frame too large");
                buf_free(&c->rx);
            } else if (c->rx.len) {
                char *text = c->rx.data;
                size_t n = c->rx.len;
                c->rx.data = NULL;
                c->rx.len = c->rx.cap = 0;
                handle_frame(c, text, n);
                free(text);
            }
        }
        return 0;
    case LWS_CALLBACK_SERVER_WRITEABLE:
        return conn_write_out(c);
    case LWS_CALLBACK_CLOSED: {
        if (idmap_get(&conns, c->id) == c)
            idmap_del(&conns, c->id);
        lp_defer_cancel(&c->flush);
        buf_free(&c->out);
        buf_free(&c->rx);
        /* Calls of this connection can no longer be answered: cancel them upstream. */
        calls_conn_closed(c->id);
        if (c->slot >= 0 && hooks.disconnect)
            hooks.disconnect(c->slot, c->id);
        return 0;
    }
    default:
        return 0;
    }
}

static const struct lws_protocols ctl_protocols[] = {
    {"codemcp-refuse", refuse_callback, 0, 0, 0, NULL, 0},
    {CTL_PROTOCOL, ctl_callback, sizeof(struct ctl_conn), 65536, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

/* A private directory (0700) for the control socket: only this user can connect, and the
 * token still has to match. */
static int make_socket_dir(void)
{
    const char *base = getenv("XDG_RUNTIME_DIR");
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

static int peer_is_starting_worker(pid_t pid)
{
    return hooks.is_starting ? hooks.is_starting(pid) : 0;
}

int ctl_init(void)
{
    max_frame = (size_t)env_long("CODEMCP_CONTROL_MAX_FRAME", 64L << 20);
    cl_init(CL_CONTROL);
    /* A starting worker (no agent code yet) is never pushed out by a flood; it gets its start
     * timeout. Connections from anyone else, a running worker included, are bounded. */
    cl_trust_peers(CL_CONTROL, peer_is_starting_worker,
                   env_long("CODEMCP_WORKER_START_TIMEOUT_MS", 15000));
    /* By default nothing listens: each worker gets one end of a socketpair at spawn
     * (ctl_adopt). CODEMCP_CONTROL_TCP=1 listens on 127.0.0.1 instead (host isolation
     * only: a sandbox has no route to it); CODEMCP_CONTROL_UNIX=1 on a private Unix socket. */
    int tcp = env_bool("CODEMCP_CONTROL_TCP", 0);
    int unix_sock = !tcp && env_bool("CODEMCP_CONTROL_UNIX", 0);
    struct lws_context_creation_info vi;
    memset(&vi, 0, sizeof(vi));
    vi.protocols = ctl_protocols;
    vi.vhost_name = "codemcp-control";
    if (tcp) {
        vi.port = 0; /* the kernel picks a free port */
        vi.iface = "127.0.0.1";
        vi.options = LWS_SERVER_OPTION_DISABLE_IPV6;
    } else if (unix_sock) {
        if (make_socket_dir() < 0)
            return -1;
        vi.port = 0;
        vi.iface = sock_path;
        vi.options = LWS_SERVER_OPTION_UNIX_SOCK;
    } else {
        vi.port = CONTEXT_PORT_NO_LISTEN_SERVER; /* adopted sockets only */
        vi.options = LWS_SERVER_OPTION_UNIX_SOCK;
    }
    vhost = lws_create_vhost(lp_context(), &vi);
    if (!vhost) {
        log_error("control", "cannot set up the worker control channel%s%s",
                  tcp || unix_sock ? " on " : "",
                  tcp         ? "127.0.0.1"
                  : unix_sock ? sock_path
                              : "");
        return -1;
    }
    if (tcp)
        snprintf(url, sizeof(url), "ws://127.0.0.1:%d/control", lws_get_vhost_listen_port(vhost));
    else if (unix_sock)
        snprintf(url, sizeof(url), "unix:%s", sock_path);
    else
        url[0] = '\0';
    if (url[0])
        log_debug("control", "listening on %s", url);
    return 0;
}

int ctl_adopt(int fd)
{
    if (!vhost || !lws_adopt_socket_vhost(vhost, fd)) {
        log_error("control", "cannot adopt a worker's control socket");
        return -1;
    }
    return 0;
}

const char *ctl_url(void)
{
    return url;
}

void ctl_free_all(void)
{
    if (sock_path[0])
        unlink(sock_path);
    if (sock_dir[0])
        rmdir(sock_dir);
    sock_path[0] = sock_dir[0] = '\0';
}
