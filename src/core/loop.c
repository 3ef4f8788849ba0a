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
 * now is reported again). We do the read()/write() ourselves (send(MSG_NOSIGNAL) on
 * sockets: a peer gone is an error, never a SIGPIPE): writes are queued and leave at the end of
 * the loop iteration (lp_defer), one write per descriptor per round, and what a full
 * pipe does not take waits for EPOLLOUT, so nothing blocks. EOF and errors close a descriptor
 * inside its dispatch, lp_io_close at the end of the iteration; it leaves the set before it is
 * closed. Regular files (stdin from a file), which epoll refuses and poll() calls always ready,
 * get a zero-delay timer per round instead. One wake-up for other threads (lp_post) and lp_stop:
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

/* A block queued by reference (lp_io_hold): written from where it lies and freed once written
 * (a 50 MB result is not copied into `out` beside the buffer it was read into). What is queued
 * after it waits in `after`, which becomes `out` once the block is out. */
struct held {
    char *block;
    const char *p;
    size_t len;
    struct buf after;
    struct held *next;
};

struct lp_io {
    int fd;
    int readable;
    int closing;
    int closed;
    int want_out; /* EPOLLOUT is in its interest set */
    int always;   /* a regular file or /dev/null: epoll refuses it, it is always ready */
    int sock;     /* a socket: written with send(MSG_NOSIGNAL) */
    const struct lp_io_ops *ops;
    void *ud;
    struct buf out;
    size_t out_off;                /* bytes of `out` already written (see io_write_out) */
    struct held *held, *held_tail; /* written after `out`, in order */
    struct lp_deferred flush;      /* writes `out` at the end of the iteration */
    struct lp_deferred close_soon; /* closes it at the end of the iteration */
    struct lp_io *next, **pprev;   /* every open one, for lp_destroy */
    struct lp_timer tick;          /* an `always` one: serviced once per round, as poll() saw it */
};

struct posted {
    void (*fn)(void *ud);
    void *ud;
    struct posted *next;
};

static struct lws_context *ctx;
static struct lws_vhost *raw_vhost;
static int ep_fd = -1;        /* the epoll set of every lp_io */
static struct lws *ep_wsi;    /* ep_fd as lws sees it */
static struct lp_io *all_ios; /* open ones */
static volatile int stop_flag;
static int sig_fd = -1;
static void (*shutdown_cb)(void);
static void (*reload_cb)(void);
static int shutdown_signalled;

static struct lp_deferred *deferred_head, *deferred_tail;
/* At most this much of what a closed descriptor still holds is delivered (io_close_now). */
#define LP_CLOSE_DRAIN_MAX ((size_t)4 << 20)
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
    if (!ctx && ep_fd >= 0)
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

/* ---- raw descriptors ------------------------------------------------------------- */

/* Interest in EPOLLIN (readable ones) and EPOLLOUT (while a write waits); EPOLLERR and
 * EPOLLHUP are always reported. */
static void io_tick(void *ud);

static void io_set_interest(struct lp_io *io, int want_out)
{
    if (io->want_out == want_out || io->closed)
        return;
    io->want_out = want_out;
    if (io->always) {
        if (want_out)
            lp_timer_start(&io->tick, 0, io_tick, io);
        return;
    }
    struct epoll_event ev = {.events = (io->readable ? EPOLLIN : 0) | (want_out ? EPOLLOUT : 0),
                             .data.ptr = io};
    if (epoll_ctl(ep_fd, EPOLL_CTL_MOD, io->fd, &ev) < 0)
        log_debug("loop", "epoll_ctl fd %d: %s", io->fd, strerror(errno));
}

/* Takes it out of the epoll set, closes the fd, tells its owner, frees it. What a readable
 * one still holds is delivered first unless it was closed on purpose, up to LP_CLOSE_DRAIN_MAX
 * bytes: a pipe holds less, a source that never ends (stdin from /dev/zero, a growing file)
 * would keep a shutdown reading forever. Inside a dispatch only for the lp_io being dispatched
 * (ep_dispatch holds pointers to the others). */
static void io_close_now(struct lp_io *io)
{
    if (!io->closing && io->readable && !(io->ops && io->ops->on_ready)) {
        char chunk[65536];
        ssize_t n;
        size_t got = 0;
        while (got < LP_CLOSE_DRAIN_MAX && (n = read(io->fd, chunk, sizeof(chunk))) > 0 &&
               io->ops && io->ops->on_read) {
            got += (size_t)n;
            io->ops->on_read(io->ud, chunk, (size_t)n);
        }
    }
    io->closed = 1;
    if (io->always)
        lp_timer_stop(&io->tick);
    else
        epoll_ctl(ep_fd, EPOLL_CTL_DEL, io->fd, NULL);
    close(io->fd);
    DLIST_UNLINK(io);
    lp_defer_cancel(&io->flush);
    lp_defer_cancel(&io->close_soon);
    if (io->ops && io->ops->on_close)
        io->ops->on_close(io->ud);
    buf_free(&io->out);
    while (io->held) {
        struct held *h = io->held;
        io->held = h->next;
        buf_free(&h->after);
        free(h->block);
        free(h);
    }
    free(io);
}

static void io_close_deferred(void *ud)
{
    io_close_now(ud);
}

static void io_close_soon(struct lp_io *io)
{
    lp_defer(&io->close_soon, io_close_deferred, io);
}

/* Bytes queued and not written yet. */
static size_t io_unsent(const struct lp_io *io)
{
    size_t n = io->out.len - io->out_off;
    for (const struct held *h = io->held; h; h = h->next)
        n += h->len + h->after.len;
    return n;
}

/* One write of what the descriptor takes: bytes written, 0 when it would block, -1 on error. */
static ssize_t io_send(struct lp_io *io, const char *p, size_t left)
{
    ssize_t n = io->sock ? send(io->fd, p, left, MSG_NOSIGNAL) : write(io->fd, p, left);
    if (n >= 0 || errno == EAGAIN || errno == EINTR)
        return n < 0 ? 0 : n;
    log_debug("loop", "write fd %d: %s", io->fd, strerror(errno));
    return -1;
}

/* Writes what `out` holds until the descriptor would block. -1 on a write error. A partial
 * write advances out_off instead of moving the rest to the front: a big frame written ~300 KB
 * at a time would otherwise be moved once per write (quadratic; it was half of the gateway's
 * time relaying a 50 MB result). */
static int io_write_out(struct lp_io *io)
{
    for (;;) {
        while (io->out.len > io->out_off) {
            ssize_t n = io_send(io, io->out.data + io->out_off, io->out.len - io->out_off);
            if (n <= 0)
                return (int)n;
            io->out_off += (size_t)n;
        }
        buf_consume(&io->out, io->out.len); /* all written: a one-off big buffer is freed */
        io->out_off = 0;
        struct held *h = io->held;
        if (!h)
            return 0;
        while (h->len) {
            ssize_t n = io_send(io, h->p, h->len);
            if (n <= 0)
                return (int)n;
            h->p += n;
            h->len -= (size_t)n;
        }
        buf_free(&io->out); /* the block is out: what was queued after it is next */
        io->out = h->after;
        io->held = h->next;
        if (!io->held)
            io->held_tail = NULL;
        free(h->block);
        free(h);
    }
}

/* Before more is queued: the written head goes once it is most of the buffer, so a
 * descriptor that always has something waiting does not grow without bound, and each byte is
 * moved at most about once. */
static void io_compact(struct lp_io *io)
{
    if (io->out_off >= 65536 && io->out_off >= io->out.len / 2) {
        buf_consume(&io->out, io->out_off);
        io->out_off = 0;
    }
}

/* End of the iteration: one write for everything this round queued. What the descriptor
 * does not take waits for EPOLLOUT. */
static void io_flush(void *ud)
{
    struct lp_io *io = ud;
    if (io_write_out(io) < 0 || (!io_unsent(io) && io->closing)) {
        io_close_soon(io);
        return;
    }
    io_set_interest(io, io_unsent(io) > 0);
}

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

/* One ready descriptor: at most one read (64 KiB), as lws would, and what a waiting write
 * can take. EOF, a read or write error, an error/hang-up on a write-only one, or the last
 * queued byte of one being closed closes it here and now, as lws closed its raw files inside
 * their service (only this lp_io is freed: the rest of the dispatch stays valid). */
static int io_event(struct lp_io *io, uint32_t ev)
{
    if (io->closed)
        return 0;
    if (io->fd == sig_fd) {
        handle_signalfd();
        return 0;
    }
    if (ev & EPOLLOUT) {
        if (io_write_out(io) < 0) {
            io_close_now(io);
            return 1;
        }
        if (!io_unsent(io)) {
            io_set_interest(io, 0);
            if (io->closing) {
                io_close_now(io);
                return 1;
            }
        }
    }
    if (io->readable && io->ops && io->ops->on_ready && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
        if (!io->closing)
            io->ops->on_ready(io->ud);
        return 0;
    }
    if (io->readable && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
        char chunk[65536];
        ssize_t n = read(io->fd, chunk, sizeof(chunk));
        if (n > 0) {
            if (io->ops && io->ops->on_read && !io->closing)
                io->ops->on_read(io->ud, chunk, (size_t)n);
            return 0;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        io_close_now(io); /* EOF or error */
        return 1;
    }
    if (!io->readable && (ev & (EPOLLHUP | EPOLLERR))) {
        io_close_now(io); /* the reader went away */
        return 1;
    }
    return 0;
}

/* An `always` descriptor's round: what poll() would have reported for it (readable, and
 * writable while a write waits), then the next round, until it is closed. */
static void io_tick(void *ud)
{
    struct lp_io *io = ud;
    if (io_event(io, (io->readable ? EPOLLIN : 0) | (io->want_out ? EPOLLOUT : 0)))
        return; /* freed */
    if (!io->closed && (io->readable || io->want_out))
        lp_timer_start(&io->tick, 0, io_tick, io); /* the next round, not this one */
}

/* Waits up to timeout_ms (0: not at all, -1: until something is ready) and hands out what is
 * ready. A handler may close others only through lp_io_close (deferred), so every other pointer
 * in `evs` stays valid until this returns. -1 when the wait itself failed. */
static int ep_dispatch(int timeout_ms)
{
    struct epoll_event evs[64];
    int n = epoll_wait(ep_fd, evs, 64, timeout_ms);
    if (n < 0 && errno != EINTR) {
        log_error("loop", "epoll_wait: %s", strerror(errno));
        return -1;
    }
    for (int i = 0; i < n; i++)
        (void)io_event(evs[i].data.ptr, evs[i].events);
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
            ep_wsi = NULL; /* lws closes ep_fd */
            ep_fd = -1;
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

struct lp_io *lp_io_watch(int fd, int readable, const struct lp_io_ops *ops, void *ud)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    struct lp_io *io = xcalloc(1, sizeof(*io));
    io->fd = fd;
    io->ops = ops;
    io->ud = ud;
    io->readable = readable;
    struct stat st;
    io->sock = fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
    struct epoll_event ev = {.events = readable ? EPOLLIN : 0, .data.ptr = io};
    int rc = ep_fd < 0 ? -1 : epoll_ctl(ep_fd, EPOLL_CTL_ADD, fd, &ev);
    if (rc < 0 && ep_fd >= 0 && errno == EPERM) {
        io->always = 1; /* stdin from a file, stdout to one: poll() calls it always ready */
        if (readable)
            lp_timer_start(&io->tick, 0, io_tick, io);
    } else if (rc < 0) {
        log_error("loop", "cannot watch fd %d: %s", fd, strerror(errno));
        close(fd);
        free(io);
        return NULL;
    }
    DLIST_PUSH(&all_ios, io);
    return io;
}

struct buf *lp_io_out(struct lp_io *io)
{
    if (!io || io->closing || io->closed)
        return NULL;
    if (!io_unsent(io))
        lp_defer(&io->flush, io_flush, io);
    if (io->held_tail)
        return &io->held_tail->after;
    io_compact(io);
    return &io->out;
}

int lp_io_hold(struct lp_io *io, char *block, const char *p, size_t len)
{
    if (!lp_io_out(io))
        return -1;
    struct held *h = xcalloc(1, sizeof(*h));
    h->block = block;
    h->p = p;
    h->len = len;
    if (io->held_tail)
        io->held_tail->next = h;
    else
        io->held = h;
    io->held_tail = h;
    return 0;
}

int lp_io_write(struct lp_io *io, const void *data, size_t len)
{
    struct buf *out = lp_io_out(io);
    if (!out)
        return -1;
    buf_append(out, data, len);
    return 0;
}

int lp_io_write_line(struct lp_io *io, const char *data, size_t len)
{
    struct buf *out = lp_io_out(io);
    if (!out)
        return -1;
    buf_append(out, data, len);
    buf_append(out, "\n", 1);
    return 0;
}

int lp_io_fd(const struct lp_io *io)
{
    return io ? io->fd : -1;
}

size_t lp_io_pending(struct lp_io *io)
{
    return io ? io_unsent(io) : 0;
}

void lp_io_detach(struct lp_io *io)
{
    if (!io)
        return;
    io->ops = NULL;
    io->ud = NULL;
    lp_io_close(io);
}

void lp_io_close(struct lp_io *io)
{
    if (!io || io->closing)
        return;
    io->closing = 1;
    if (io_unsent(io))
        io_set_interest(io, 1); /* closed once the rest is out (or a write fails) */
    else
        io_close_soon(io);
}

/* The last write of a descriptor closed without waiting: what it takes now, then the close. */
static void io_close_last_write(void *ud)
{
    struct lp_io *io = ud;
    if (io_unsent(io))
        (void)io_write_out(io);
    io_close_now(io);
}

void lp_io_close_nowait(struct lp_io *io)
{
    if (!io || io->closed)
        return;
    io->closing = 1;
    lp_defer_cancel(&io->close_soon);
    lp_defer(&io->close_soon, io_close_last_write, io);
}

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
    ep_fd = epoll_create1(EPOLL_CLOEXEC);
    int pfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ep_fd < 0 || pfd < 0) {
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
    u.filefd = (lws_filefd_type)(intptr_t)ep_fd;
    ep_wsi = raw_vhost
                 ? lws_adopt_descriptor_vhost(raw_vhost, LWS_ADOPT_RAW_FILE_DESC, u, "lp-raw", NULL)
                 : NULL;
    if (!ep_wsi) {
        log_error("loop", "cannot put the descriptor set into libwebsockets");
        lws_context_destroy(c); /* ep_fd stays ours */
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
    while (all_ios) /* as lws closed the adopted ones: their owners hear on_close */
        io_close_now(all_ios);
    if (ctx)
        lws_context_destroy(ctx); /* closes ep_fd, which it adopted */
    else if (ep_fd >= 0)
        close(ep_fd);
    ctx = NULL;
    ep_fd = -1;
    timers_sul_due = -1;
    th_free(&timers);
    drain_posted();
    lp__children_free();
}
