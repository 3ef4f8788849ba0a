/* curl_thread — libcurl multi on a helper thread; see curl_thread.h for the contract.
 *
 * Threads: ct_start/ct_stop/ct_submit/ct_cancel run on the loop thread; everything named
 * xfer_* and thread_* runs on the curl thread only, which owns the multi handle and every
 * easy handle once submitted. The two meet in a mutex-protected command queue (loop → curl)
 * and in lp_post (curl → loop). The curl thread blocks every signal so that the loop's
 * signalfd sees them, and sets CURLOPT_NOSIGNAL on every handle.
 *
 * Streaming responses are parsed here (sse.c) so that the loop receives whole events, not
 * byte chunks; a collected body larger than max_body aborts the transfer with a clear error.
 *
 * Per-call cost: a transfer is one allocation (the struct, its header list nodes,
 * the header lines and the body); easy handles are kept in a small pool after
 * curl_easy_reset (which clears every option, header list and method of the last transfer;
 * connections live in the multi handle's cache either way); the events one pass of the
 * curl thread produced reach the loop in one lp_post; the curl thread is woken only when the
 * command queue was empty; it waits in epoll and runs only the transfers whose sockets are
 * ready (curl_multi_socket_action), with keep-alive connections kept in a cache sized by what
 * the users of the thread may have in flight at once (ct_start's keep_idle). */
#include "curl_thread.h"
#include "curl_lib.h"
#include "idmap.h"
#include "log.h"
#include "loop.h"
#include "sse.h"
#include "util.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define DEFAULT_MAX_BODY ((size_t)64 << 20)
#define POLL_MS          1000
#define POOL_MAX         64 /* idle easy handles kept for reuse */
#define MIN_IDLE_CONNS   64 /* connections kept open for reuse, all servers together, at least */

struct ct_xfer {
    uint64_t id;
    CURL *easy;
    struct curl_slist *hdrs; /* = nodes (or NULL): never curl_slist_free_all'd */
    const char *body;        /* in this allocation, after the header lines */
    ct_event_fn fn;
    size_t max_body;
    char errbuf[CURL_ERROR_SIZE];
    /* response (curl thread only) */
    long status;
    char *content_type, *session_id, *location, *www_auth;
    int head_sent;
    int is_sse;
    struct sse_parser sse;
    unsigned long sse_dropped;
    char *sent_id;   /* last event id already reported to the loop */
    long sent_retry; /* retry already reported */
    struct buf resp;
    int too_large;
    struct ct_xfer *next, **pprev;
    struct curl_slist nodes[]; /* header list, then the header lines, then the body */
};

struct ct_cmd {
    uint64_t cancel_id;  /* non-zero: cancel this transfer */
    struct ct_xfer *add; /* else, non-NULL: add this transfer */
    long max_idle;       /* else: the connection cache's new size */
    struct ct_cmd *next;
};

static pthread_mutex_t cmd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ct_cmd *cmd_head, *cmd_tail;
static int quit;
static CURLM *multi;
static pthread_t thread;
static int refs;
static long idle_wanted; /* the sum of the live references' keep_idle (loop thread) */
static uint64_t next_id = 1;
static struct ct_xfer *xfers;    /* curl thread only */
static struct idmap xfers_by_id; /* curl thread only: id -> transfer on xfers */
/* Idle easy handles, already reset: taken by ct_submit (loop), given back by the curl
 * thread. Under cmd_lock. */
static CURL *pool[POOL_MAX];
static int n_pool;
/* Events of the current pass of the curl thread, posted together (curl thread only). */
static struct posted_batch *batch;
static int ep_fd = -1, wake_fd = -1; /* the curl thread's epoll set; its command eventfd */
static int64_t timer_due_us = -1;    /* libcurl's next timeout (curl thread only) */

/* ---- events (built on the curl thread, delivered on the loop) ------------------------- */

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

static void event_free(struct ct_event *ev)
{
    free(ev->content_type);
    free(ev->session_id);
    free(ev->location);
    free(ev->www_auth);
    free(ev->type);
    free(ev->data);
    free(ev->last_id);
    free(ev->body);
    free(ev);
}

struct posted_event {
    ct_event_fn fn;
    struct ct_event *ev;
};

struct posted_batch {
    size_t n, cap;
    struct posted_event *evs;
};

/* The transfer whose CT_DONE is being delivered (loop thread): it is over on the curl
 * thread, so the ct_cancel its callback usually makes (freeing the exchange) is skipped
 * rather than sent as a command that wakes the thread for nothing. */
static uint64_t delivering_done;

static void deliver(void *ud)
{
    struct posted_batch *b = ud;
    for (size_t i = 0; i < b->n; i++) {
        struct ct_event *ev = b->evs[i].ev;
        delivering_done = ev->kind == CT_DONE ? ev->xfer : 0;
        if (b->evs[i].fn)
            b->evs[i].fn(ev);
        delivering_done = 0;
        event_free(ev);
    }
    free(b->evs);
    free(b);
}

/* Queues ev for the loop; flush() hands the pass's events over in order. */
static void post(struct ct_xfer *x, struct ct_event *ev)
{
    if (!batch)
        batch = xcalloc(1, sizeof(*batch));
    if (batch->n == batch->cap) {
        batch->cap = batch->cap ? batch->cap * 2 : 8;
        batch->evs = xrealloc(batch->evs, batch->cap * sizeof(*batch->evs));
    }
    batch->evs[batch->n].fn = x->fn;
    batch->evs[batch->n++].ev = ev;
}

static void flush(void)
{
    if (batch)
        lp_post(deliver, batch);
    batch = NULL;
}

static struct ct_event *event_new(struct ct_xfer *x, enum ct_kind kind)
{
    struct ct_event *ev = xcalloc(1, sizeof(*ev));
    ev->kind = kind;
    ev->xfer = x->id;
    ev->status = x->status;
    ev->retry_ms = -1;
    if (kind == CT_HEAD) {
        ev->content_type = dup_or_null(x->content_type);
        ev->session_id = dup_or_null(x->session_id);
        ev->location = dup_or_null(x->location);
        ev->www_auth = dup_or_null(x->www_auth);
    } else if (kind == CT_DONE) { /* the transfer's last event: its strings move over */
        ev->content_type = x->content_type;
        ev->session_id = x->session_id;
        ev->location = x->location;
        ev->www_auth = x->www_auth;
        x->content_type = x->session_id = x->location = x->www_auth = NULL;
    }
    if (kind != CT_SSE)
        ev->is_sse = x->is_sse;
    return ev;
}

/* ---- response parsing (curl thread) --------------------------------------------------- */

static void set_str(char **dst, const char *s, size_t n)
{
    free(*dst);
    *dst = xstrndup(s, n);
}

static void send_head(struct ct_xfer *x)
{
    if (x->head_sent)
        return;
    x->head_sent = 1;
    x->is_sse = x->status >= 200 && x->status < 300 && x->content_type &&
                strcmp(x->content_type, "text/event-stream") == 0;
    if (x->is_sse) {
        sse_init(&x->sse, x->max_body);
        x->sent_retry = -1;
    }
    post(x, event_new(x, CT_HEAD));
}

static size_t on_header(char *line, size_t size, size_t n, void *ud)
{
    struct ct_xfer *x = ud;
    size_t len = size * n;
    if (len >= 5 && memcmp(line, "HTTP/", 5) == 0) {
        /* A new response (after 1xx interim ones): forget earlier headers. */
        free(x->content_type);
        free(x->session_id);
        free(x->location);
        free(x->www_auth);
        x->content_type = x->session_id = x->location = x->www_auth = NULL;
        return len;
    }
    size_t end = len;
    while (end > 0 && (line[end - 1] == '\r' || line[end - 1] == '\n'))
        end--;
    if (end == 0) {
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &x->status);
        if (x->status >= 200)
            send_head(x);
        return len;
    }
    const char *colon = memchr(line, ':', end);
    if (!colon)
        return len;
    size_t name_len = (size_t)(colon - line);
    const char *v = colon + 1;
    while (v < line + end && (*v == ' ' || *v == '\t'))
        v++;
    size_t vn = (size_t)(line + end - v);
    while (vn > 0 && (v[vn - 1] == ' ' || v[vn - 1] == '\t'))
        vn--;
#define IS(name) (name_len == strlen(name) && strncasecmp(line, name, name_len) == 0)
    if (IS("mcp-session-id")) {
        set_str(&x->session_id, v, vn);
    } else if (IS("content-type")) {
        size_t t = 0;
        while (t < vn && v[t] != ';' && v[t] != ' ' && v[t] != '\t')
            t++;
        set_str(&x->content_type, v, t);
        for (char *c = x->content_type; *c; c++)
            if (*c >= 'A' && *c <= 'Z')
                *c = (char)(*c - 'A' + 'a');
    } else if (IS("location")) {
        set_str(&x->location, v, vn);
    } else if (IS("www-authenticate")) {
        set_str(&x->www_auth, v, vn);
    }
#undef IS
    return len;
}

static int cursor_changed(struct ct_xfer *x)
{
    const char *id = x->sse.last_id;
    if (x->sse.retry_ms != x->sent_retry)
        return 1;
    if (!id != !x->sent_id)
        return 1;
    return id && strcmp(id, x->sent_id) != 0;
}

static struct ct_event *sse_event_new(struct ct_xfer *x)
{
    struct ct_event *ev = event_new(x, CT_SSE);
    ev->last_id = dup_or_null(x->sse.last_id);
    ev->retry_ms = x->sse.retry_ms;
    free(x->sent_id);
    x->sent_id = dup_or_null(x->sse.last_id);
    x->sent_retry = x->sse.retry_ms;
    return ev;
}

static void on_sse_event(void *ud, const char *type, const char *data, size_t len)
{
    struct ct_xfer *x = ud;
    struct ct_event *ev = sse_event_new(x);
    ev->type = xstrdup(type);
    ev->data = xstrndup(data, len);
    ev->len = len;
    post(x, ev);
}

static size_t on_write(char *data, size_t size, size_t n, void *ud)
{
    struct ct_xfer *x = ud;
    size_t len = size * n;
    if (!x->head_sent) {
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &x->status);
        send_head(x);
    }
    if (x->is_sse) {
        sse_feed(&x->sse, data, len, on_sse_event, x);
        if (x->sse.dropped != x->sse_dropped) {
            x->sse_dropped = x->sse.dropped;
            log_warn("http", "dropped an event larger than %zu bytes from a stream", x->max_body);
        }
        if (cursor_changed(x))
            post(x, sse_event_new(x)); /* an id or retry without a dispatched event */
        return len;
    }
    if (x->resp.len + len > x->max_body) {
        x->too_large = 1;
        return 0; /* aborts with CURLE_WRITE_ERROR */
    }
    buf_append(&x->resp, data, len);
    return len;
}

/* ---- transfers (curl thread) ---------------------------------------------------------- */

/* An easy handle no transfer uses any more (curl thread, or the loop after the thread is
 * gone): reset and pooled, or cleaned up when the pool is full. The reset clears every option
 * (URL, method, body, header list, callbacks and their data, timeouts) and the last
 * transfer's info, so nothing of one request can reach the next. */
static void easy_release(CURL *e)
{
    if (!e)
        return;
    curl_easy_reset(e);
    pthread_mutex_lock(&cmd_lock);
    int kept = n_pool < POOL_MAX;
    if (kept)
        pool[n_pool++] = e;
    pthread_mutex_unlock(&cmd_lock);
    if (!kept)
        curl_easy_cleanup(e);
}

static CURL *easy_take(void)
{
    CURL *e = NULL;
    pthread_mutex_lock(&cmd_lock);
    if (n_pool > 0)
        e = pool[--n_pool];
    pthread_mutex_unlock(&cmd_lock);
    return e ? e : curl_easy_init();
}

static void xfer_free(struct ct_xfer *x)
{
    easy_release(x->easy);
    free(x->content_type);
    free(x->session_id);
    free(x->location);
    free(x->www_auth);
    free(x->sent_id);
    if (x->is_sse)
        sse_free(&x->sse);
    buf_free(&x->resp);
    free(x);
}

static void xfer_unlink(struct ct_xfer *x)
{
    if (!x->pprev)
        return;
    DLIST_UNLINK(x);
    idmap_del(&xfers_by_id, x->id);
}

static int is_connect_error(CURLcode c)
{
    return c == CURLE_COULDNT_CONNECT || c == CURLE_COULDNT_RESOLVE_HOST ||
           c == CURLE_COULDNT_RESOLVE_PROXY || c == CURLE_SSL_CONNECT_ERROR ||
           c == CURLE_PEER_FAILED_VERIFICATION;
}

static void xfer_done(struct ct_xfer *x, CURLcode code)
{
    curl_multi_remove_handle(multi, x->easy);
    xfer_unlink(x);
    if (!x->head_sent && code == CURLE_OK) {
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &x->status);
        send_head(x);
    }
    struct ct_event *ev = event_new(x, CT_DONE);
    ev->curl_code = (int)code;
    if (code != CURLE_OK) {
        ev->connect_failed = is_connect_error(code);
        ev->too_large = x->too_large;
        if (x->too_large)
            snprintf(ev->error, sizeof(ev->error), "the response is larger than %zu bytes",
                     x->max_body);
        else
            snprintf(ev->error, sizeof(ev->error), "%s",
                     x->errbuf[0] ? x->errbuf : curl_easy_strerror(code));
    }
    if (!x->is_sse && x->resp.data) {
        ev->body_len = x->resp.len;
        ev->body = buf_steal(&x->resp);
    }
    post(x, ev);
    xfer_free(x);
}

/* Hands x to the multi handle; a transfer curl refuses fails at once with CT_DONE. */
static void xfer_add(struct ct_xfer *x)
{
    CURLMcode mc = curl_multi_add_handle(multi, x->easy);
    if (mc == CURLM_OK) {
        DLIST_PUSH(&xfers, x);
        idmap_put(&xfers_by_id, x->id, x);
        return;
    }
    struct ct_event *ev = event_new(x, CT_DONE);
    ev->curl_code = CURLE_FAILED_INIT;
    snprintf(ev->error, sizeof(ev->error), "%s", curl_multi_strerror(mc));
    post(x, ev);
    xfer_free(x);
}

static void thread_run_commands(void)
{
    pthread_mutex_lock(&cmd_lock);
    struct ct_cmd *c = cmd_head;
    cmd_head = cmd_tail = NULL;
    pthread_mutex_unlock(&cmd_lock);
    while (c) {
        struct ct_cmd *next = c->next;
        if (c->add) {
            xfer_add(c->add);
        } else if (!c->cancel_id) {
            curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, c->max_idle);
        } else {
            struct ct_xfer *x = idmap_get(&xfers_by_id, c->cancel_id);
            if (x) {
                curl_multi_remove_handle(multi, x->easy);
                xfer_unlink(x);
                xfer_free(x);
            }
        }
        free(c);
        c = next;
    }
}

/* ---- the event loop of the curl thread: epoll + curl_multi_socket_action --------------- */
/* libcurl tells which sockets to watch (on_socket) and when its next timeout is due
 * (on_timer); only the transfers whose socket is ready run. (curl_multi_perform runs every
 * transfer on every wake-up and polls each one's socket: O(transfers) system calls per
 * wake-up under concurrency.) The command queue's eventfd sits in the same epoll set. */

static int on_socket(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)e, (void)userp, (void)socketp;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(ep_fd, EPOLL_CTL_DEL, s, NULL); /* ENOENT/EBADF: already gone */
        return 0;
    }
    struct epoll_event ev = {.data.fd = s};
    ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
    if (epoll_ctl(ep_fd, EPOLL_CTL_MOD, s, &ev) < 0 && errno == ENOENT &&
        epoll_ctl(ep_fd, EPOLL_CTL_ADD, s, &ev) < 0)
        log_warn("http", "cannot watch a connection: %s", strerror(errno));
    return 0;
}

static int on_timer(CURLM *m, long timeout_ms, void *userp)
{
    (void)m, (void)userp;
    timer_due_us = timeout_ms < 0 ? -1 : now_us() + (int64_t)timeout_ms * 1000;
    return 0;
}

/* How long epoll_wait may sleep: until libcurl's timeout (rounded up), at most POLL_MS. */
static int wait_ms(void)
{
    if (timer_due_us < 0)
        return POLL_MS;
    int64_t left = timer_due_us - now_us();
    if (left <= 0)
        return 0;
    left = (left + 999) / 1000;
    return left < POLL_MS ? (int)left : POLL_MS;
}

static void thread_wait_and_run(void)
{
    struct epoll_event evs[64];
    int n = epoll_wait(ep_fd, evs, 64, wait_ms());
    int running = 0;
    for (int i = 0; i < n; i++) {
        if (evs[i].data.fd == wake_fd) {
            uint64_t v;
            if (read(wake_fd, &v, sizeof(v)) < 0) { /* EAGAIN: another pass drained it */
            }
            continue;
        }
        int flags = (evs[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
                    (evs[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                    (evs[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
        curl_multi_socket_action(multi, evs[i].data.fd, flags, &running);
    }
    if (timer_due_us >= 0 && now_us() >= timer_due_us) {
        timer_due_us = -1; /* on_timer sets the next one during the call */
        curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
    }
}

static void *thread_main(void *arg)
{
    (void)arg;
    for (;;) {
        thread_run_commands();
        pthread_mutex_lock(&cmd_lock);
        int stop = quit;
        pthread_mutex_unlock(&cmd_lock);
        if (stop)
            break;
        thread_wait_and_run();
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(multi, &left))) {
            if (m->msg != CURLMSG_DONE)
                continue;
            struct ct_xfer *x = NULL;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
            CURLcode code = m->data.result; /* m is invalid once the handle is removed */
            if (x)
                xfer_done(x, code);
        }
        flush();
    }
    while (xfers) {
        struct ct_xfer *x = xfers;
        curl_multi_remove_handle(multi, x->easy);
        xfer_unlink(x);
        xfer_free(x);
    }
    idmap_free(&xfers_by_id);
    if (batch) { /* stopping: what is left is not delivered */
        for (size_t i = 0; i < batch->n; i++)
            event_free(batch->evs[i].ev);
        free(batch->evs);
        free(batch);
        batch = NULL;
    }
    return NULL;
}

/* ---- loop-thread API ------------------------------------------------------------------ */

static void wake_thread(void)
{
    uint64_t one = 1;
    if (write(wake_fd, &one, sizeof(one)) < 0) { /* EAGAIN: the counter is full, it is awake */
    }
}

static void enqueue(struct ct_cmd *c)
{
    pthread_mutex_lock(&cmd_lock);
    /* The thread takes the whole queue at once: a non-empty queue has its wake-up coming. */
    int wake = cmd_head == NULL;
    if (cmd_tail)
        cmd_tail->next = c;
    else
        cmd_head = c;
    cmd_tail = c;
    pthread_mutex_unlock(&cmd_lock);
    if (wake)
        wake_thread();
}

/* The connection cache's size for what the users ask: libcurl's default follows the transfers
 * still running, so as a burst of concurrent calls ends it closes most of the burst's
 * connections and the next burst opens them again (a server-everything behind 16 busy workers
 * saw ~130 new connections a second that way). So the cache holds as many connections (in use
 * and idle: libcurl counts both, and closes an idle one as a transfer ends while it holds more)
 * as the users may have transfers at once, at least MIN_IDLE_CONNS, and never more than a quarter
 * of the descriptors (the rest stay for clients, workers and stdio upstreams). Servers still
 * close the idle ones they do not want. */
static long cache_size(void)
{
    long n = idle_wanted < MIN_IDLE_CONNS ? MIN_IDLE_CONNS : idle_wanted;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (rlim_t)n > rl.rlim_cur / 4)
        n = (long)(rl.rlim_cur / 4);
    return n < 1 ? 1 : n;
}

static void resize_cache(void)
{
    struct ct_cmd *c = xcalloc(1, sizeof(*c));
    c->max_idle = cache_size();
    enqueue(c);
}

int ct_start(long keep_idle)
{
    if (keep_idle < 0)
        keep_idle = 0;
    idle_wanted += keep_idle;
    if (refs++ > 0) {
        if (keep_idle)
            resize_cache();
        return 0;
    }
    int global = 0, rc;
    char why[300];
    if (curl_lib_load(why, sizeof(why)) < 0) {
        log_error("http", "%s", why);
        goto fail;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        log_error("http", "libcurl failed to initialise");
        goto fail;
    }
    global = 1;
    multi = curl_multi_init();
    if (!multi) {
        log_error("http", "libcurl failed to create a multi handle");
        goto fail;
    }
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, cache_size());
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, on_timer);
    ep_fd = epoll_create1(EPOLL_CLOEXEC);
    wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event wev = {.events = EPOLLIN, .data.fd = wake_fd};
    if (ep_fd < 0 || wake_fd < 0 || epoll_ctl(ep_fd, EPOLL_CTL_ADD, wake_fd, &wev) < 0) {
        log_error("http", "cannot set up the HTTP thread's event loop: %s", strerror(errno));
        goto fail;
    }
    timer_due_us = -1;
    quit = 0;
    /* The thread inherits a fully blocked signal mask: signals belong to the loop. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    rc = pthread_create(&thread, NULL, thread_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        log_error("http", "cannot start the HTTP thread: %s", strerror(rc));
        goto fail;
    }
    return 0;
fail:
    if (multi)
        curl_multi_cleanup(multi);
    multi = NULL;
    if (ep_fd >= 0)
        close(ep_fd);
    if (wake_fd >= 0)
        close(wake_fd);
    ep_fd = wake_fd = -1;
    if (global)
        curl_global_cleanup();
    refs = 0;
    idle_wanted = 0;
    return -1;
}

void ct_stop(long keep_idle)
{
    if (refs == 0)
        return;
    idle_wanted -= keep_idle < 0 ? 0 : keep_idle;
    if (--refs > 0) {
        if (keep_idle > 0)
            resize_cache();
        return;
    }
    idle_wanted = 0;
    pthread_mutex_lock(&cmd_lock);
    quit = 1;
    pthread_mutex_unlock(&cmd_lock);
    wake_thread();
    pthread_join(thread, NULL);
    /* Commands queued after the thread's last look: transfers never added. */
    struct ct_cmd *c = cmd_head;
    cmd_head = cmd_tail = NULL;
    while (c) {
        struct ct_cmd *next = c->next;
        if (c->add)
            xfer_free(c->add);
        free(c);
        c = next;
    }
    while (n_pool > 0)
        curl_easy_cleanup(pool[--n_pool]);
    curl_multi_cleanup(multi);
    multi = NULL;
    close(ep_fd);
    close(wake_fd);
    ep_fd = wake_fd = -1;
    curl_global_cleanup();
}

static int set_options(struct ct_xfer *x, const struct ct_request *rq)
{
    CURL *e = x->easy;
    int bad = 0;
    bad |= curl_easy_setopt(e, CURLOPT_URL, rq->url) != CURLE_OK;
#if LIBCURL_VERSION_NUM >= 0x075500
    bad |= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK;
#else
    bad |= curl_easy_setopt(e, CURLOPT_PROTOCOLS, CURLPROTO_HTTP | CURLPROTO_HTTPS) != CURLE_OK;
#endif
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "codemcp/" CODEMCP_VERSION);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 15L);
    /* No CURLOPT_PIPEWAIT: with it, libcurl 7.88 holds every new transfer to a host it has no
     * answered connection to until the first response's headers arrive (to learn whether it
     * can multiplex), so a server or policy engine that holds its first answer held every
     * other request behind it: 2 of 256 questions reached a holding engine. Without it a
     * burst to an HTTP/2 server may open a few connections before multiplexing. */
#if LIBCURL_VERSION_NUM >= 0x075700
    curl_easy_setopt(e, CURLOPT_QUICK_EXIT, 1L); /* never wait for a stuck DNS thread */
#endif
    if (rq->connect_timeout_ms > 0)
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, rq->connect_timeout_ms);
    if (rq->timeout_ms > 0)
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, rq->timeout_ms);
    if (strcmp(rq->method, "POST") == 0) {
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
    } else if (strcmp(rq->method, "GET") == 0) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, rq->method);
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->hdrs);
    return bad ? -1 : 0;
}

/* The transfer of rq in one allocation: the struct, its header list (rq's lines and
 * "Expect:"), the header lines and the body, copied. curl only reads a header list, so its
 * nodes can live in an array. */
static struct ct_xfer *xfer_new(const struct ct_request *rq)
{
    size_t n = 1; /* "Expect:" */
    for (size_t i = 0; i < rq->headers_len; i++)
        n += rq->headers[i] == '\0';
    int post = strcmp(rq->method, "POST") == 0;
    size_t body_len = post ? rq->body_len + 1 : 0;
    /* Only the struct is zeroed: the rest is written below (a body may be large). */
    struct ct_xfer *x =
        xmalloc(sizeof(*x) + n * sizeof(struct curl_slist) + rq->headers_len + body_len);
    memset(x, 0, sizeof(*x));
    char *lines = (char *)(x->nodes + n);
    if (rq->headers_len)
        memcpy(lines, rq->headers, rq->headers_len);
    size_t k = 0;
    for (size_t at = 0; at < rq->headers_len; at += strlen(lines + at) + 1, k++) {
        x->nodes[k].data = lines + at;
        x->nodes[k].next = &x->nodes[k + 1];
    }
    /* curl would wait up to 1 s for "100 Continue" on large bodies: never ask for it. */
    x->nodes[k].data = (char *)"Expect:";
    x->nodes[k].next = NULL;
    x->hdrs = x->nodes;
    if (post) {
        char *body = lines + rq->headers_len;
        if (rq->body_len)
            memcpy(body, rq->body, rq->body_len);
        body[rq->body_len] = '\0';
        x->body = body;
    }
    return x;
}

uint64_t ct_submit(const struct ct_request *rq)
{
    if (refs == 0 || !multi)
        return 0;
    if (rq->headers_len && rq->headers[rq->headers_len - 1] != '\0') {
        log_error("http", "a request's header lines must each end with a NUL");
        return 0;
    }
    struct ct_xfer *x = xfer_new(rq);
    x->fn = rq->on_event;
    x->max_body = rq->max_body ? rq->max_body : DEFAULT_MAX_BODY;
    x->easy = easy_take();
    if (!x->easy || set_options(x, rq) < 0) {
        log_error("http", "cannot prepare a request to %s (unsupported URL?)", rq->url);
        xfer_free(x);
        return 0;
    }
    uint64_t id = x->id = next_id++;
    struct ct_cmd *c = xcalloc(1, sizeof(*c));
    c->add = x;
    enqueue(c); /* x belongs to the curl thread from here on: it may already be freed */
    return id;
}

void ct_cancel(uint64_t xfer)
{
    if (refs == 0 || !multi || xfer == 0 || xfer == delivering_done)
        return;
    struct ct_cmd *c = xcalloc(1, sizeof(*c));
    c->cancel_id = xfer;
    enqueue(c);
}
