/* wsclient — the worker's control-channel client; see wsclient.h for the contract.
 *
 * Threads: the service thread owns the lws context loop, `wsc.wsi`, the token and the
 * receive buffer. Everything shared with other threads (queues, reply table, run id,
 * interrupt reason, flags) lives under `wsc.mu`; waiters sleep on `wsc.cond`. Other
 * threads reach lws only through lws_cancel_service() (the one thread-safe lws call).
 * This file never touches Python. */
#include "wsclient.h"

#include "log.h"
#include "util.h"

#include <jansson.h>
#include <libwebsockets.h>

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WSC_PROTOCOL  "codemcp-control"
#define WSC_BUCKETS   256
#define WSC_EARLY     16
#define WSC_RX_CHUNK  65536
#define WSC_UNIX_PATH "/control" /* HTTP path used on a Unix socket URL */

/* One queued frame: LWS_PRE bytes of headroom, then len bytes of text, then a NUL. */
struct wsc_frame {
    struct wsc_frame *next;
    size_t len;
    unsigned char data[];
};

struct wsc_fifo {
    struct wsc_frame *head, *tail;
};

/* One gateway request waiting for the main thread (text is malloc'd, NUL-terminated). */
struct wsc_req {
    struct wsc_req *next;
    char *text;
    size_t len;
};

/* A reply that arrived (text != NULL) or one nobody wants any more (forgotten). */
struct wsc_reply {
    struct wsc_reply *next;
    char *id;
    char *text;
    size_t len;
    int forgotten;
};

static struct {
    /* Shared state, under mu. */
    pthread_mutex_t mu;
    pthread_cond_t cond;                /* CLOCK_MONOTONIC; broadcast on every change */
    struct wsc_fifo out;                /* to the gateway */
    struct wsc_req *in_head, **in_tail; /* gateway requests for the main thread */
    struct wsc_reply *replies[WSC_BUCKETS];
    char *current_run;
    char *reason;    /* pending interrupt reason */
    int interrupted; /* SIGUSR1 already sent for current_run */
    /* Cancels for runs that were not current when they arrived: the run may simply not
     * have started yet (its request still queued). Small ring, oldest overwritten. */
    struct {
        char *run_id;
        char *reason;
    } early[WSC_EARLY];
    unsigned early_next;
    atomic_int closed, connected, stop;

    /* Set before the service thread starts, read-only afterwards. */
    struct lws_context *ctx;
    pthread_t thread, main_thread;
    int started;
    char *address, *path, *host;
    int port;

    /* Service thread only. */
    struct lws *wsi;
    struct wsc_frame *token; /* sent first, then wiped */
    unsigned char *rx;
    size_t rx_len, rx_cap;
    int rx_binary;
} wsc = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* ---- frames and queues ------------------------------------------------------------- */

/* Returns a frame holding a copy of text (NULL on out-of-memory; a 64 MiB send under
 * RLIMIT_AS must not abort the worker). */
static struct wsc_frame *wsc_frame_new(const char *text, size_t len)
{
    struct wsc_frame *f = malloc(sizeof(*f) + LWS_PRE + len + 1);
    if (!f)
        return NULL;
    f->next = NULL;
    f->len = len;
    memcpy(f->data + LWS_PRE, text, len);
    f->data[LWS_PRE + len] = '\0';
    return f;
}

static void wsc_fifo_push(struct wsc_fifo *q, struct wsc_frame *f)
{
    f->next = NULL;
    if (q->tail)
        q->tail->next = f;
    else
        q->head = f;
    q->tail = f;
}

static struct wsc_frame *wsc_fifo_pop(struct wsc_fifo *q)
{
    struct wsc_frame *f = q->head;
    if (f) {
        q->head = f->next;
        if (!q->head)
            q->tail = NULL;
    }
    return f;
}

static void wsc_fifo_clear(struct wsc_fifo *q)
{
    struct wsc_frame *f;
    while ((f = wsc_fifo_pop(q)))
        free(f);
}

/* ---- reply table (caller holds mu) ------------------------------------------------- */

static unsigned wsc_hash(const char *s)
{
    unsigned h = 5381;
    while (*s)
        h = h * 33u + (unsigned char)*s++;
    return h % WSC_BUCKETS;
}

/* Returns the link pointing at the entry for id, or the bucket's terminating NULL link. */
static struct wsc_reply **wsc_reply_find(const char *id)
{
    struct wsc_reply **p = &wsc.replies[wsc_hash(id)];
    while (*p && strcmp((*p)->id, id) != 0)
        p = &(*p)->next;
    return p;
}

static void wsc_reply_unlink_free(struct wsc_reply **link)
{
    struct wsc_reply *r = *link;
    *link = r->next;
    free(r->id);
    free(r->text);
    free(r);
}

/* Takes ownership of text. */
static void wsc_reply_deliver(const char *id, char *text, size_t len)
{
    pthread_mutex_lock(&wsc.mu);
    struct wsc_reply **link = wsc_reply_find(id);
    if (*link && (*link)->forgotten) {
        wsc_reply_unlink_free(link); /* nobody wants it: drop both */
        free(text);
    } else if (*link) {
        log_warn("worker", "duplicate reply for id %s from the gateway: ignored", id);
        free(text);
    } else {
        struct wsc_reply *r = xcalloc(1, sizeof(*r));
        r->id = xstrdup(id);
        r->text = text;
        r->len = len;
        *link = r;
        pthread_cond_broadcast(&wsc.cond);
    }
    pthread_mutex_unlock(&wsc.mu);
}

/* ---- waiting ----------------------------------------------------------------------- */

static void wsc_deadline(int timeout_ms, struct timespec *ts)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += timeout_ms / 1000;
    ts->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* One wait on cond (caller holds mu). Returns 0, or ETIMEDOUT once the deadline passed. */
static int wsc_wait(int timeout_ms, const struct timespec *deadline)
{
    if (timeout_ms == 0)
        return ETIMEDOUT;
    if (timeout_ms < 0)
        return pthread_cond_wait(&wsc.cond, &wsc.mu);
    return pthread_cond_timedwait(&wsc.cond, &wsc.mu, deadline);
}

static void wsc_mark_closed(void)
{
    pthread_mutex_lock(&wsc.mu);
    wsc.closed = 1;
    wsc_fifo_clear(&wsc.out); /* nobody will read these any more */
    pthread_cond_broadcast(&wsc.cond);
    pthread_mutex_unlock(&wsc.mu);
}

/* ---- routing (service thread) ------------------------------------------------------ */

/* Interrupts the run executing on the main thread if it is `run_id` (NULL: whichever run
 * is current): remembers the reason and sends SIGUSR1, at most once per run (a second
 * exception would land inside the runner's own cleanup). */
static void wsc_signal_main(const char *run_id, const char *reason)
{
    /* SIGUSR1's default action kills the process: only signal once the runtime has
     * installed its handler (it always does before any run starts). */
    struct sigaction sa;
    if (sigaction(SIGUSR1, NULL, &sa) == 0 && sa.sa_handler != SIG_DFL &&
        sa.sa_handler != SIG_IGN) {
        log_debug("worker", "interrupting run %s (%s)", run_id, reason);
        pthread_kill(wsc.main_thread, SIGUSR1);
    } else {
        log_warn("worker", "cannot interrupt run %s: no SIGUSR1 handler installed", run_id);
    }
}

/* Records reason for the current run (caller holds mu). Returns 1 if the main thread must
 * be signalled: at most once per run, since a second exception would land inside the
 * runner's own cleanup. */
static int wsc_arm_interrupt(const char *reason)
{
    if (wsc.interrupted)
        return 0;
    free(wsc.reason);
    wsc.reason = xstrdup(reason);
    wsc.interrupted = 1;
    return 1;
}

/* Interrupts the run executing on the main thread if it is `run_id` (NULL: whichever run
 * is current). A cancel for a run that is not current is remembered in case that run
 * is about to start. */
static void wsc_interrupt(const char *run_id, const char *reason)
{
    char *target = NULL;

    pthread_mutex_lock(&wsc.mu);
    if (wsc.current_run && (!run_id || strcmp(run_id, wsc.current_run) == 0)) {
        if (wsc_arm_interrupt(reason))
            target = xstrdup(wsc.current_run);
    } else if (run_id) {
        unsigned i = wsc.early_next++ % WSC_EARLY;
        free(wsc.early[i].run_id);
        free(wsc.early[i].reason);
        wsc.early[i].run_id = xstrdup(run_id);
        wsc.early[i].reason = xstrdup(reason);
    }
    pthread_mutex_unlock(&wsc.mu);
    if (target)
        wsc_signal_main(target, reason);
    else
        log_debug("worker", "cancel for run %s: not current, remembered", run_id ? run_id : "?");
    free(target);
}

static void wsc_handle_cancel(json_t *params /* borrowed */)
{
    const char *run_id = json_string_value(json_object_get(params, "run_id"));
    const char *reason = json_string_value(json_object_get(params, "reason"));

    if (!reason || (strcmp(reason, "timeout") != 0 && strcmp(reason, "cancelled") != 0))
        reason = "cancelled";
    if (run_id)
        wsc_interrupt(run_id, reason);
}

/* The connection is gone (service thread): wake every waiter and stop a run in progress,
 * whose result nobody can receive any more. */
static void wsc_connection_lost(void)
{
    wsc.wsi = NULL;
    wsc_mark_closed();
    wsc_interrupt(NULL, "cancelled");
}

/* Routes one complete incoming frame; takes ownership of text (NUL-terminated). */
static void wsc_route(char *text, size_t len)
{
    json_error_t err;
    json_t *msg = json_loadb(text, len, 0, &err); /* owned */

    if (json_is_object(msg)) {
        json_t *method = json_object_get(msg, "method"); /* borrowed */
        json_t *id = json_object_get(msg, "id");         /* borrowed */
        if (!method && id &&
            (json_object_get(msg, "result") != NULL || json_object_get(msg, "error") != NULL)) {
            char key[32];
            const char *k = json_string_value(id);
            if (!k && json_is_integer(id)) {
                snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT, json_integer_value(id));
                k = key;
            }
            if (k) {
                wsc_reply_deliver(k, text, len);
            } else {
                /* e.g. the gateway's -32700 answer to a frame it could not parse */
                log_warn("worker", "gateway sent a reply without a usable id: %.300s", text);
                free(text);
            }
            json_decref(msg);
            return;
        }
        if (json_is_string(method) && strcmp(json_string_value(method), "cancel") == 0) {
            wsc_handle_cancel(json_object_get(msg, "params"));
            free(text);
            json_decref(msg);
            return;
        }
    }
    json_decref(msg);

    /* Requests, notifications and unparseable text: the main thread answers them (a
     * malformed frame gets its JSON-RPC error from the runtime). */
    struct wsc_req *r = xcalloc(1, sizeof(*r));
    r->text = text;
    r->len = len;
    pthread_mutex_lock(&wsc.mu);
    if (!wsc.in_tail)
        wsc.in_tail = &wsc.in_head;
    *wsc.in_tail = r;
    wsc.in_tail = &r->next;
    pthread_cond_broadcast(&wsc.cond);
    pthread_mutex_unlock(&wsc.mu);
}

/* Appends a fragment; returns -1 when the message exceeds the cap or memory runs out. */
static int wsc_rx_append(const void *in, size_t len)
{
    if (wsc.rx_len + len > WSC_MAX_FRAME) {
        log_error("worker", "incoming control frame exceeds %u bytes: dropping the connection",
                  WSC_MAX_FRAME);
        return -1;
    }
    if (wsc.rx_len + len + 1 > wsc.rx_cap) {
        size_t cap = wsc.rx_cap ? wsc.rx_cap : WSC_RX_CHUNK;
        while (cap < wsc.rx_len + len + 1)
            cap *= 2;
        unsigned char *p = realloc(wsc.rx, cap);
        if (!p) {
            log_error("worker", "out of memory receiving a control frame: dropping the "
                                "connection");
            return -1;
        }
        wsc.rx = p;
        wsc.rx_cap = cap;
    }
    memcpy(wsc.rx + wsc.rx_len, in, len);
    wsc.rx_len += len;
    wsc.rx[wsc.rx_len] = '\0';
    return 0;
}

/* ---- lws callback (service thread) ------------------------------------------------- */

static int wsc_has_output(void)
{
    pthread_mutex_lock(&wsc.mu);
    int has = wsc.out.head != NULL;
    pthread_mutex_unlock(&wsc.mu);
    return has;
}

/* Exactly one lws_write per WRITEABLE: lws buffers partial sends itself and only calls us
 * again once that buffer has drained, which is our backpressure. */
static int wsc_write_one(struct lws *wsi)
{
    struct wsc_frame *f;
    if (wsc.token) {
        f = wsc.token;
        wsc.token = NULL;
    } else {
        pthread_mutex_lock(&wsc.mu);
        f = wsc_fifo_pop(&wsc.out);
        pthread_mutex_unlock(&wsc.mu);
    }
    if (!f)
        return 0;
    int n = lws_write(wsi, f->data + LWS_PRE, f->len, LWS_WRITE_TEXT);
    explicit_bzero(f->data + LWS_PRE, f->len); /* the token must not linger in the heap */
    free(f);
    if (n < 0) {
        log_error("worker", "writing to the control connection failed");
        return -1;
    }
    if (wsc_has_output())
        lws_callback_on_writable(wsi);
    return 0;
}

static int wsc_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                        size_t len)
{
    (void)user;
    switch (reason) {
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        log_debug("worker", "control connection established");
        wsc.wsi = wsi;
        wsc.connected = 1;
        lws_callback_on_writable(wsi); /* the token goes first */
        break;

    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
        log_error("worker", "control connection failed: %s", in ? (const char *)in : "unknown");
        wsc_connection_lost();
        break;

    case LWS_CALLBACK_CLIENT_CLOSED:
        log_info("worker", "control connection closed");
        wsc_connection_lost();
        break;

    case LWS_CALLBACK_CLIENT_RECEIVE:
        if (wsc.rx_len == 0 && lws_is_first_fragment(wsi))
            wsc.rx_binary = lws_frame_is_binary(wsi);
        if (wsc_rx_append(in, len) < 0)
            return -1;
        if (lws_is_final_fragment(wsi) && !lws_remaining_packet_payload(wsi)) {
            if (wsc.rx_binary) {
                log_warn("worker", "binary control frame of %zu bytes ignored", wsc.rx_len);
                wsc.rx_len = 0;
                break;
            }
            /* Small frames are copied out and the buffer reused; a large one is handed
             * over trimmed (no copy). Either way a stored reply costs about its size. */
            size_t n = wsc.rx_len;
            char *text;
            if (wsc.rx_cap > WSC_RX_CHUNK) {
                text = realloc(wsc.rx, n + 1);
                if (!text)
                    text = (char *)wsc.rx;
                wsc.rx = NULL;
                wsc.rx_cap = 0;
            } else {
                text = malloc(n + 1);
                if (!text) {
                    log_error("worker", "out of memory receiving a control frame");
                    return -1;
                }
                memcpy(text, wsc.rx ? (char *)wsc.rx : "", n);
                text[n] = '\0';
            }
            wsc.rx_len = 0;
            wsc_route(text, n);
        }
        break;

    case LWS_CALLBACK_CLIENT_WRITEABLE:
        return wsc_write_one(wsi);

    case LWS_CALLBACK_EVENT_WAIT_CANCELLED: {
        /* Sent to every protocol of every vhost: act for ours only. */
        const struct lws_protocols *p = lws_get_protocol(wsi);
        if (!p || !p->name || strcmp(p->name, WSC_PROTOCOL) != 0)
            break;
        if (wsc.wsi && wsc_has_output())
            lws_callback_on_writable(wsc.wsi);
        break;
    }

    default:
        break;
    }
    return 0;
}

static const struct lws_protocols wsc_protocols[] = {
    {WSC_PROTOCOL, wsc_callback, 0, WSC_RX_CHUNK, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0} /* lws 4.1 has no LWS_PROTOCOL_LIST_TERM */
};

/* ---- service thread ---------------------------------------------------------------- */

static void *wsc_service_main(void *arg)
{
    (void)arg;
    struct lws_client_connect_info ci;
    memset(&ci, 0, sizeof(ci));
    ci.context = wsc.ctx;
    ci.address = wsc.address;
    ci.port = wsc.port;
    ci.path = wsc.path;
    ci.host = wsc.host;
    ci.protocol = WSC_PROTOCOL;
    ci.local_protocol_name = WSC_PROTOCOL;
    if (!lws_client_connect_via_info(&ci) && !wsc.closed) {
        log_error("worker", "cannot start connecting to the gateway at %s", wsc.address);
        wsc_mark_closed();
    }

    while (!wsc.stop && !wsc.closed)
        lws_service(wsc.ctx, 0);
    if (wsc.stop)
        return NULL;

    /* The gateway is gone. The main thread normally notices (ConnectionError) and calls
     * wsc_stop(); if agent code keeps it busy, end the process ourselves. */
    struct timespec deadline;
    wsc_deadline(WSC_CLOSE_GRACE_MS, &deadline);
    pthread_mutex_lock(&wsc.mu);
    while (!wsc.stop)
        if (pthread_cond_timedwait(&wsc.cond, &wsc.mu, &deadline) == ETIMEDOUT)
            break;
    int stop = wsc.stop;
    pthread_mutex_unlock(&wsc.mu);
    if (!stop) {
        log_warn("worker",
                 "main thread still busy %d ms after the control connection closed: "
                 "exiting",
                 WSC_CLOSE_GRACE_MS);
        _exit(wsc.connected ? 0 : WSC_EXIT_NO_CONNECT);
    }
    return NULL;
}

static void wsc_lws_log(int level, const char *line)
{
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        n--;
    if (level & LLL_ERR)
        log_error("lws", "%.*s", (int)n, line);
    else if (level & LLL_WARN)
        log_warn("lws", "%.*s", (int)n, line);
    else
        log_debug("lws", "%.*s", (int)n, line);
}

/* Splits "ws://host:port/path" or "unix:/path.sock" into wsc.address/port/path/host. */
static int wsc_parse_url(const char *url)
{
    if (strncmp(url, "unix:", 5) == 0 && url[5] == '/') {
        size_t n = strlen(url + 5);
        wsc.address = xmalloc(n + 2);
        wsc.address[0] = '+'; /* lws: a leading '+' means a Unix socket path */
        memcpy(wsc.address + 1, url + 5, n + 1);
        wsc.port = 0;
        wsc.path = xstrdup(WSC_UNIX_PATH);
        wsc.host = xstrdup("localhost");
        return 0;
    }
    if (strncmp(url, "ws://", 5) != 0)
        return -1;
    const char *h = url + 5;
    const char *colon = strchr(h, ':');
    const char *slash = strchr(h, '/');
    if (!colon || colon == h || (slash && slash < colon))
        return -1;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || port <= 0 || port > 65535 || (*end && *end != '/'))
        return -1;
    wsc.address = xstrndup(h, (size_t)(colon - h));
    wsc.port = (int)port;
    wsc.path = xstrdup(*end ? end : "/");
    wsc.host = xstrndup(h, (size_t)(end - h));
    return 0;
}

int wsc_start(const char *url, const char *token, pthread_t main_thread)
{
    struct lws_context_creation_info info;
    pthread_condattr_t ca;
    sigset_t all, old;

    if (wsc_parse_url(url) < 0) {
        log_error("worker",
                  "CODEMCP_CONTROL_URL '%s' is not ws://HOST:PORT/PATH or "
                  "unix:/PATH",
                  url);
        return -1;
    }
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wsc.cond, &ca);
    pthread_condattr_destroy(&ca);
    wsc.main_thread = main_thread;

    size_t tlen = strlen(token);
    wsc.token = wsc_frame_new(token, tlen);
    if (!wsc.token)
        return -1;

    lws_set_log_level(log_get_level() >= LOG_DEBUG ? LLL_ERR | LLL_WARN | LLL_NOTICE
                                                   : LLL_ERR | LLL_WARN,
                      wsc_lws_log);
    memset(&info, 0, sizeof(info));
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.protocols = wsc_protocols;
    info.gid = (gid_t)-1;
    info.uid = (uid_t)-1;
    /* lws sizes its fd tables from RLIMIT_NOFILE otherwise (8 MiB of tables at 1M fds);
     * one socket and a pipe is all we need, opened before Python, so their numbers are
     * small. */
    info.fd_limit_per_thread = 1024;
    wsc.ctx = lws_create_context(&info);
    if (!wsc.ctx) {
        log_error("worker", "cannot create the libwebsockets context");
        return -1;
    }

    /* The service thread inherits a full signal mask: SIGUSR1 and friends must reach the
     * main thread (Python's handlers only run there). */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024); /* counts against RLIMIT_AS */
    int rc = pthread_create(&wsc.thread, &attr, wsc_service_main, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        log_error("worker", "cannot start the control thread: %s", strerror(rc));
        lws_context_destroy(wsc.ctx);
        wsc.ctx = NULL;
        return -1;
    }
    wsc.started = 1;
    return 0;
}

void wsc_stop(void)
{
    wsc_set_current_run(NULL); /* nothing left to interrupt while tearing down */
    if (wsc.started) {
        pthread_mutex_lock(&wsc.mu);
        wsc.stop = 1;
        pthread_cond_broadcast(&wsc.cond);
        pthread_mutex_unlock(&wsc.mu);
        lws_cancel_service(wsc.ctx);
        pthread_join(wsc.thread, NULL);
        wsc.started = 0;
    }
    if (wsc.ctx) {
        lws_context_destroy(wsc.ctx);
        wsc.ctx = NULL;
    }
    wsc_mark_closed();
    pthread_mutex_lock(&wsc.mu);
    while (wsc.in_head) {
        struct wsc_req *r = wsc.in_head;
        wsc.in_head = r->next;
        free(r->text);
        free(r);
    }
    wsc.in_tail = &wsc.in_head;
    for (int i = 0; i < WSC_BUCKETS; i++)
        while (wsc.replies[i])
            wsc_reply_unlink_free(&wsc.replies[i]);
    free(wsc.current_run);
    free(wsc.reason);
    wsc.current_run = wsc.reason = NULL;
    for (int i = 0; i < WSC_EARLY; i++) {
        free(wsc.early[i].run_id);
        free(wsc.early[i].reason);
        wsc.early[i].run_id = wsc.early[i].reason = NULL;
    }
    pthread_mutex_unlock(&wsc.mu);
    if (wsc.token) {
        explicit_bzero(wsc.token->data + LWS_PRE, wsc.token->len);
        free(wsc.token);
        wsc.token = NULL;
    }
    free(wsc.rx);
    free(wsc.address);
    free(wsc.path);
    free(wsc.host);
    wsc.rx = NULL;
    wsc.address = wsc.path = wsc.host = NULL;
}

/* ---- API for other threads --------------------------------------------------------- */

int wsc_send(const char *text, size_t len)
{
    if (!wsc.started || wsc.closed)
        return -1;
    struct wsc_frame *f = wsc_frame_new(text, len);
    if (!f)
        return -2;
    pthread_mutex_lock(&wsc.mu);
    if (wsc.closed) {
        pthread_mutex_unlock(&wsc.mu);
        free(f);
        return -1;
    }
    wsc_fifo_push(&wsc.out, f);
    pthread_mutex_unlock(&wsc.mu);
    lws_cancel_service(wsc.ctx); /* the service thread asks for WRITEABLE */
    return 0;
}

int wsc_next_request(int timeout_ms, char **out, size_t *out_len)
{
    struct timespec deadline;
    int rc = WSC_TIMEOUT;
    if (timeout_ms > 0)
        wsc_deadline(timeout_ms, &deadline);
    pthread_mutex_lock(&wsc.mu);
    for (;;) {
        struct wsc_req *r = wsc.in_head;
        if (r) {
            wsc.in_head = r->next;
            if (!wsc.in_head)
                wsc.in_tail = &wsc.in_head;
            *out = r->text;
            *out_len = r->len;
            free(r);
            rc = WSC_OK;
            break;
        }
        if (wsc.closed) {
            rc = WSC_CLOSED;
            break;
        }
        if (wsc_wait(timeout_ms, &deadline) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&wsc.mu);
    return rc;
}

int wsc_wait_reply(const char *id, int timeout_ms, char **out, size_t *out_len)
{
    struct timespec deadline;
    int rc = WSC_TIMEOUT;
    if (timeout_ms > 0)
        wsc_deadline(timeout_ms, &deadline);
    pthread_mutex_lock(&wsc.mu);
    for (;;) {
        struct wsc_reply **link = wsc_reply_find(id);
        if (*link && (*link)->text) {
            *out = (*link)->text;
            *out_len = (*link)->len;
            (*link)->text = NULL;
            wsc_reply_unlink_free(link);
            rc = WSC_OK;
            break;
        }
        if (wsc.closed) {
            rc = WSC_CLOSED;
            break;
        }
        if (wsc_wait(timeout_ms, &deadline) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&wsc.mu);
    return rc;
}

void wsc_forget(const char *id)
{
    pthread_mutex_lock(&wsc.mu);
    struct wsc_reply **link = wsc_reply_find(id);
    if (*link && (*link)->text) {
        wsc_reply_unlink_free(link);
    } else if (!*link && !wsc.closed) {
        struct wsc_reply *r = xcalloc(1, sizeof(*r));
        r->id = xstrdup(id);
        r->forgotten = 1;
        *link = r;
    }
    pthread_mutex_unlock(&wsc.mu);
}

void wsc_set_current_run(const char *run_id)
{
    char *reason = NULL;
    pthread_mutex_lock(&wsc.mu);
    free(wsc.current_run);
    wsc.current_run = run_id ? xstrdup(run_id) : NULL;
    free(wsc.reason);
    wsc.reason = NULL;
    wsc.interrupted = 0;
    /* Cancelled before it started: interrupt it now. The runtime's handler keeps the
     * reason as an "early interrupt" and raises once agent code begins. */
    for (int i = 0; run_id && i < WSC_EARLY; i++) {
        if (wsc.early[i].run_id && strcmp(wsc.early[i].run_id, run_id) == 0) {
            if (wsc_arm_interrupt(wsc.early[i].reason))
                reason = xstrdup(wsc.early[i].reason);
            free(wsc.early[i].run_id);
            free(wsc.early[i].reason);
            wsc.early[i].run_id = wsc.early[i].reason = NULL;
            break;
        }
    }
    pthread_mutex_unlock(&wsc.mu);
    if (reason)
        wsc_signal_main(run_id, reason);
    free(reason);
}

char *wsc_interrupt_reason(void)
{
    pthread_mutex_lock(&wsc.mu);
    char *r = wsc.reason;
    wsc.reason = NULL;
    pthread_mutex_unlock(&wsc.mu);
    return r;
}

int wsc_is_closed(void)
{
    return wsc.closed;
}

int wsc_was_connected(void)
{
    return wsc.connected;
}
