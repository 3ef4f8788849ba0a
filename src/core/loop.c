/* loop — the gateway's single-threaded event loop. See loop.h.
 *
 * Every raw descriptor (stdio, child pipes, the signalfd, the lp_post eventfd, sockets served
 * by our own code) sits in one epoll set of ours. Without lws (the stdio gateway: nothing asked
 * for lp_context) one epoll_wait on that set is the loop's only wait, bounded by the earliest
 * timer of our heap: no poll() over lws's table, no second wait, none of lws's service code
 * on every wake-up (it was ~16 % of the gateway's instructions per tool call). Once something
 * needs lws (an HTTP front), the context is made and only the epoll descriptor is adopted
 * into it (a private vhost "lp-raw", LWS_ADOPT_RAW_FILE_DESC): lws's poll() scans one entry for
 * all of them instead of one each (with a worker, an upstream and a prototype that was 10 of
 * its 14 entries, on every wake-up: ~12 % of the gateway's CPU in 50 concurrent calls). When
 * it is readable, one epoll_wait(0) hands out the ready ones (level-triggered: what is not read
 * now is reported again). The descriptors themselves, their reads and queued writes, are
 * loop_io.c's. One wake-up for other threads (lp_post) and lp_stop:
 * an eventfd in the set, which wakes lws's poll too (lws_cancel_service is never used, so its
 * EVENT_WAIT_CANCELLED, which reaches every protocol, never comes). Ignored SIGPIPE survives
 * exec: reset in the child (loop_child.c). */
#include "loop.h"
#include "log.h"
#include "loop_int.h"
#include "pgguard.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct posted {
    void (*fn)(void *ud);
    void *ud;
    struct posted *next;
};

static struct lws_context *ctx;
static struct lws_vhost *raw_vhost;
int lp__ep_fd = -1;        /* the epoll set of every lp_io */
static struct lws *ep_wsi; /* lp__ep_fd as lws sees it */
static volatile int stop_flag;
static int sig_fd = -1;
static void (*shutdown_cb)(void);
static void (*reload_cb)(void);
static int shutdown_signalled;

static struct lp_deferred *deferred_head, *deferred_tail;
static lws_sorted_usec_list_t deferred_sul; /* see lp_defer */

static pthread_mutex_t post_lock = PTHREAD_MUTEX_INITIALIZER;
static struct posted *post_head, *post_tail;
static int post_fd = -1; /* an eventfd in the epoll set: lp_post and lp_stop wake the loop */

static void post_wake(void)
{
    uint64_t one = 1;
    if (post_fd >= 0)
        (void)!write(post_fd, &one, sizeof(one));
}

static int lws_start(unsigned max_header_bytes);

struct lws_context *lp_context(unsigned max_header_bytes)
{
    if (!ctx && lp__ep_fd >= 0)
        (void)lws_start(max_header_bytes);
    return ctx;
}

static void drain_posted(void)
{
    pthread_mutex_lock(&post_lock);
    struct posted *p = post_head;
    post_head = post_tail = NULL;
    pthread_mutex_unlock(&post_lock);
    while (p) {
        struct posted *next = p->next;
        p->fn(p->ud);
        free(p);
        p = next;
    }
}

/* The eventfd: lp_post or lp_stop wrote it. */
static void post_ready(void *ud)
{
    (void)ud;
    uint64_t n;
    (void)!read(post_fd, &n, sizeof(n));
    drain_posted();
}

static void post_closed(void *ud)
{
    (void)ud;
    post_fd = -1; /* lp_destroy closed it */
}

void lp_post(void (*fn)(void *ud), void *ud)
{
    struct posted *p = xcalloc(1, sizeof(*p));
    p->fn = fn;
    p->ud = ud;
    pthread_mutex_lock(&post_lock);
    int was_empty = !post_head; /* else a wake-up is already on its way: drain takes all */
    if (post_tail)
        post_tail->next = p;
    else
        post_head = p;
    post_tail = p;
    pthread_mutex_unlock(&post_lock);
    if (was_empty)
        post_wake();
}

/* ---- the epoll set --------------------------------------------------------------- */

static void handle_signalfd(void)
{
    struct signalfd_siginfo si;
    while (read(sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGCHLD) {
            lp__reap_children();
        } else if (si.ssi_signo == SIGHUP && reload_cb) {
            log_info("loop", "SIGHUP: reloading");
            reload_cb();
        } else if (!shutdown_signalled) {
            shutdown_signalled = 1;
            log_info("loop", "signal %u: shutting down", si.ssi_signo);
            if (shutdown_cb)
                shutdown_cb();
            else
                lp_stop();
        }
    }
}

/* Waits up to timeout_ms (0: not at all, -1: until something is ready) and hands out what is
 * ready. A handler may close others only through lp_io_close (deferred), so every other pointer
 * in `evs` stays valid until this returns. -1 when the wait itself failed. */
static int ep_dispatch(int timeout_ms)
{
    struct epoll_event evs[64];
    int n = epoll_wait(lp__ep_fd, evs, 64, timeout_ms);
    if (n < 0 && errno != EINTR) {
        log_error("loop", "epoll_wait: %s", strerror(errno));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        struct lp_io *io = evs[i].data.ptr;
        if (lp_io_fd(io) == sig_fd)
            handle_signalfd();
        else
            (void)lp__io_event(io, evs[i].events);
    }
    return 0;
}

static int raw_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                        size_t len)
{
    (void)user;
    (void)in;
    (void)len;
    switch (reason) {
    case LWS_CALLBACK_RAW_RX_FILE:
        if (wsi && wsi == ep_wsi)
            (void)ep_dispatch(0); /* lws's poll said it is readable */
        return 0;
    case LWS_CALLBACK_RAW_CLOSE_FILE:
        if (wsi && wsi == ep_wsi) {
            ep_wsi = NULL; /* lws closes lp__ep_fd */
            lp__ep_fd = -1;
        }
        return 0;
    default:
        return 0;
    }
}

static const struct lws_protocols raw_protocols[] = {
    {"lp-raw", raw_callback, 0, 0, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0}, /* lws 4.1 has no LWS_PROTOCOL_LIST_TERM */
};

/* ---- timers -------------------------------------------------------------------------- */

static struct th_heap timers;
static lws_sorted_usec_list_t timers_sul; /* armed for the earliest deadline */
static int64_t timers_sul_due = -1;       /* what timers_sul is armed for; -1: not armed */
static int timers_running;

static void timers_due(lws_sorted_usec_list_t *sul);

/* Points timers_sul at the earliest deadline when it is not already armed for one as early. */
static void timers_arm(void)
{
    struct th_node *x = th_peek(&timers);
    if (!x || timers_running || !ctx)
        return;
    if (timers_sul_due >= 0 && timers_sul_due <= x->due)
        return; /* it fires earlier (or on time) and re-arms then */
    int64_t now = now_us();
    timers_sul_due = x->due;
    lws_sul_schedule(ctx, 0, &timers_sul, timers_due,
                     (lws_usec_t)(x->due > now ? x->due - now : 0));
}

static void timer_fire(struct th_node *x)
{
    struct lp_timer *t = lws_container_of(x, struct lp_timer, node);
    if (t->cb)
        t->cb(t->ud);
}

/* Fires what is due (both loops: lws's timer below, or pure_round after its wait). */
static void timers_run(void)
{
    timers_running = 1;
    th_run_due(&timers, now_us(), timer_fire);
    timers_running = 0;
}

static void timers_due(lws_sorted_usec_list_t *sul)
{
    (void)sul;
    timers_sul_due = -1;
    timers_run();
    timers_arm();
}

/* A delay beyond this (about 34 years) is taken as this: ms * 1000 and the sum with now_us()
 * cannot overflow, whatever the caller passes (a worker's call_tool may ask for 2^63 - 1). */
#define LP_TIMER_MAX_MS ((int64_t)1 << 40)

void lp_timer_start(struct lp_timer *t, int64_t ms, void (*cb)(void *ud), void *ud)
{
    t->cb = cb;
    t->ud = ud;
    if (ms > LP_TIMER_MAX_MS)
        ms = LP_TIMER_MAX_MS;
    th_add(&timers, &t->node, now_us() + (ms < 0 ? 0 : ms) * 1000);
    timers_arm();
}

void lp_timer_stop(struct lp_timer *t)
{
    th_remove(&timers, &t->node); /* timers_sul may wake once for nothing: it re-arms then */
}

/* ---- context --------------------------------------------------------------------------- */

/* lws logs "accept: errno N" on every failed accept (EMFILE makes that a busy loop), and our
 * own listeners report theirs (lp_accept_failed): the first of a burst is logged, then one line
 * per ACCEPT_LOG_MS with the count. */
#define ACCEPT_LOG_MS 10000
static int64_t accept_log_ms;
static unsigned long accept_failures;
static void (*accept_failed_cb)(int err); /* lp_on_accept_failed */

void lp_on_accept_failed(void (*cb)(int err))
{
    accept_failed_cb = cb;
}

static unsigned header_bytes; /* lws's max_http_header_data, from lp_context */

void lp_accept_failed(int e)
{
    int64_t now = now_ms();
    if (accept_failed_cb)
        accept_failed_cb(e); /* e.g. EMFILE: the listener is still readable */
    if (accept_log_ms && now - accept_log_ms < ACCEPT_LOG_MS) {
        accept_failures++;
        return;
    }
    if (accept_failures)
        log_write(LOG_ERROR, "loop", "accept failed %lu more times in the last %d s",
                  accept_failures, ACCEPT_LOG_MS / 1000);
    accept_failures = 0;
    accept_log_ms = now;
    log_write(LOG_ERROR, "loop", "accept failed: %s (errno %d; repeats are counted)", strerror(e),
              e);
}

static void lws_log_emit(int level, const char *line)
{
    enum log_level l = level == LLL_ERR ? LOG_ERROR : level == LLL_WARN ? LOG_WARN : LOG_DEBUG;
    if (strncmp(line, "accept: errno", 13) == 0) {
        lp_accept_failed(atoi(line + 13));
        return;
    }
    if (strncmp(line, "Ran out of header data space", 28) == 0) {
        /* lws 4.1 closes such a connection without a response (no 431): say what to change. */
        log_write(LOG_WARN, "http",
                  "a request's headers were over %u bytes (CODEMCP_HTTP_MAX_HEADERS): its "
                  "connection was closed without an answer",
                  header_bytes);
        return;
    }
    log_write(l, "lws", "%s", line);
}

void lp_on_reload_signal(void (*cb)(void))
{
    reload_cb = cb;
}

static void post_ready(void *ud);
static void post_closed(void *ud);
static void deferred_due(lws_sorted_usec_list_t *sul);
static const struct lp_io_ops post_ops = {.on_close = post_closed, .on_ready = post_ready};

int lp_init(void)
{
    /* Signals become events: block them here (threads created later inherit the mask). */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    /* A pipe whose reader is gone (an upstream that died, a client that closed stdout) is an
     * EPIPE for its writer, never the end of the gateway (without the HTTP front nothing else
     * ignores it: a stdio gateway stopped by a signal died of SIGPIPE writing to an upstream
     * it had just stopped). */
    signal(SIGPIPE, SIG_IGN);
    sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sig_fd < 0) {
        log_error("loop", "signalfd: %s", strerror(errno));
        return -1;
    }
    lp__ep_fd = epoll_create1(EPOLL_CLOEXEC);
    int pfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (lp__ep_fd < 0 || pfd < 0) {
        log_error("loop", "cannot set up the descriptor set: %s", strerror(errno));
        if (pfd >= 0)
            close(pfd);
        return -1;
    }
    if (!lp_io_watch(sig_fd, 1, NULL, NULL) || !lp_io_watch(pfd, 1, &post_ops, NULL))
        return -1;
    post_fd = pfd;
    return 0;
}

/* The lws context, made on first use (an HTTP front, or anything else that needs a vhost):
 * from then on lws's service is the loop's wait and the epoll set one descriptor in it. */
static int lws_start(unsigned max_header_bytes)
{
    lws_set_log_level(LLL_ERR | LLL_WARN, lws_log_emit);
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof(info));
    info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
    info.port = CONTEXT_PORT_NO_LISTEN;
    /* lws reads a socket into this buffer, one read per poll round: at the default 4 KiB the
     * 50 call frames of 50 concurrent calls (~9 KB) took three rounds, three polls and three
     * writes to the upstream instead of one. */
    info.pt_serv_buf_size = 65536;
    /* unsigned short: lws indexes its header buffer in 16 bits */
    header_bytes = max_header_bytes > 64000 ? 64000 : max_header_bytes;
    info.max_http_header_data = (unsigned short)header_bytes;
    info.gid = (gid_t)-1;
    info.uid = (uid_t)-1;
    struct lws_context *c = lws_create_context(&info);
    if (!c) {
        log_error("loop", "cannot create the libwebsockets context");
        return -1;
    }
    struct lws_context_creation_info vi;
    memset(&vi, 0, sizeof(vi));
    vi.port = CONTEXT_PORT_NO_LISTEN_SERVER;
    vi.protocols = raw_protocols;
    vi.vhost_name = "lp-raw";
    raw_vhost = lws_create_vhost(c, &vi);
    lws_sock_file_fd_type u;
    u.filefd = (lws_filefd_type)(intptr_t)lp__ep_fd;
    ep_wsi = raw_vhost
                 ? lws_adopt_descriptor_vhost(raw_vhost, LWS_ADOPT_RAW_FILE_DESC, u, "lp-raw", NULL)
                 : NULL;
    if (!ep_wsi) {
        log_error("loop", "cannot put the descriptor set into libwebsockets");
        lws_context_destroy(c); /* lp__ep_fd stays ours */
        return -1;
    }
    ctx = c;
    timers_arm(); /* the earliest deadline now rides an lws timer */
    if (deferred_head)
        lws_sul_schedule(ctx, 0, &deferred_sul, deferred_due, 0);
    return 0;
}

/* ---- end-of-iteration work ----------------------------------------------------------- */

static void run_deferred(void);

static void deferred_due(lws_sorted_usec_list_t *sul)
{
    (void)sul;
    run_deferred();
}

void lp_defer(struct lp_deferred *d, void (*fn)(void *ud), void *ud)
{
    d->fn = fn;
    d->ud = ud;
    if (d->queued)
        return;
    d->queued = 1;
    d->next = NULL;
    if (deferred_tail) {
        deferred_tail->next = d;
    } else {
        deferred_head = d;
        /* lws runs due timers just before it polls, inside lws_service(), and then polls
         * without returning: work deferred by a timer callback would wait for the next
         * event. A zero-delay timer makes that poll return at once. After descriptor
         * events lws_service() returns and lp_run() cancels it unfired: no extra poll. */
        if (ctx)
            lws_sul_schedule(ctx, 0, &deferred_sul, deferred_due, 0);
    }
    deferred_tail = d;
}

void lp_defer_cancel(struct lp_deferred *d)
{
    if (!d->queued)
        return;
    struct lp_deferred *prev = NULL;
    for (struct lp_deferred *p = deferred_head; p; prev = p, p = p->next)
        if (p == d) {
            if (prev)
                prev->next = d->next;
            else
                deferred_head = d->next;
            if (deferred_tail == d)
                deferred_tail = prev;
            break;
        }
    d->queued = 0;
    d->next = NULL;
}

/* In order of deferral; work deferred while this runs runs too (FIFO, same round). */
static void run_deferred(void)
{
    while (deferred_head) {
        struct lp_deferred *d = deferred_head;
        deferred_head = d->next;
        if (!deferred_head)
            deferred_tail = NULL;
        d->next = NULL;
        d->queued = 0;
        d->fn(d->ud);
    }
}

/* Milliseconds until the earliest timer (rounded up), 0 when one is due, -1 when none. */
static int next_timeout_ms(void)
{
    struct th_node *x = th_peek(&timers);
    if (!x)
        return -1;
    int64_t left = x->due - now_us();
    if (left <= 0)
        return 0;
    int64_t ms = (left + 999) / 1000;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* One round without lws: the work the last round deferred, one wait on the epoll set (not
 * past the earliest timer), what is ready, then the timers that are due. */
static int pure_round(void)
{
    run_deferred();
    if (stop_flag || ctx)
        return 0;
    if (ep_dispatch(next_timeout_ms()) < 0)
        return -1;
    timers_run();
    return 0;
}

void lp_run(void)
{
    while (!stop_flag) {
        if (!ctx) { /* no HTTP front (or anything else on lws): the epoll set is the wait */
            if (pure_round() < 0)
                break;
            continue;
        }
        run_deferred();
        lws_sul_cancel(&deferred_sul);
        if (lws_service(ctx, 0) < 0)
            break;
    }
    run_deferred();
}

void lp_stop(void)
{
    stop_flag = 1;
    post_wake(); /* in lws's poll too: the eventfd is in the set it polls */
}

void lp_on_shutdown_signal(void (*cb)(void))
{
    shutdown_cb = cb;
}

void lp_destroy(void)
{
    lp__io_close_all(); /* as lws closed the adopted ones: their owners hear on_close */
    if (ctx)
        lws_context_destroy(ctx); /* closes lp__ep_fd, which it adopted */
    else if (lp__ep_fd >= 0)
        close(lp__ep_fd);
    ctx = NULL;
    lp__ep_fd = -1;
    timers_sul_due = -1;
    th_free(&timers);
    drain_posted();
    lp__children_free();
}
