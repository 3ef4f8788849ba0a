/* wsclient — the worker's control-channel client; see wsclient.h for the contract.
 *
 * Roles, not threads, own the socket:
 *   - the reader role (wsc.reader, under mu) reads and routes frames. A thread that must
 *     block for a message takes it and polls the socket itself; others sleep until the
 *     reader leaves: on wsc.cond, or, the main thread, in poll() on wsc.mfd (an eventfd
 *     written whenever cond is broadcast while it sleeps) and the signal descriptor. The
 *     watcher takes the role only when no thread is blocked.
 *   - writing is wsout.c's (its wmu), from the thread that sends; a burst of frames may be
 *     corked there: every wait here first flushes it (wso_flush), the watcher on its timer.
 * The watcher sleeps in epoll_wait on the socket, two timerfds and an eventfd. While some
 * thread is blocked in a wait, the socket is armed for hang-ups only (EPOLLRDHUP, which data
 * never triggers), so a reply wakes the waiting thread and nobody else. When the last
 * blocked thread leaves, it arms the timer (a syscall, no wake-up); if WSC_WATCH_DELAY_MS
 * pass without a new wait, the watcher arms the socket for data too and reads whatever
 * comes while agent code computes. The eventfd carries stop and "connection lost".
 *
 * No wait is sliced. The main thread's waits (its reader poll and its sleep) also watch
 * mfd and sigfd. Whoever sends SIGUSR1 for a cancel or the run's deadline (the thread that
 * read it, the watcher, a thread whose send found the connection gone) writes mfd after
 * pthread_kill(): the signal is pending before the main thread can return from its poll,
 * so its handler has run when PyErr_CheckSignals() looks, and a signal sent just before
 * the poll starts (which ends no poll with EINTR) still ends it. sigfd is the read end of
 * the pipe Python's C signal handler writes a byte to (pysigwake.c), for every other
 * signal with a Python handler (agent code's alarm(), say): the self-pipe trick.
 *
 * Locks: mu guards the connection state, the inbox, the role bookkeeping, the epoll and
 * timer arming; wsout's wmu serialises whole frames on the wire. Order: wmu, then mu. mu is
 * never held across a blocking call; readers never wait for wmu (wso_control); a thread
 * holding wmu never waits for the GIL (it may hold the GIL, see pymod). The main thread's
 * reply waits for several calls, without a timeout, are one blocking recv (wsc_wait,
 * "idle"); every other wait polls first.
 * This file never calls Python. */
#include "wsclient.h"

#include "inbox.h"
#include "log.h"
#include "util.h"
#include "wsconnect.h"
#include "wsout.h"
#include "wsproto.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define WSC_PROTOCOL "codemcp-control"
#define WSC_RBUF     65536

enum { ST_CONNECTING, ST_OPEN, ST_CLOSED };
enum { ARM_NONE, ARM_HUP, ARM_IN }; /* what the socket's epoll entry waits for */

static struct {
    /* Under mu. */
    pthread_mutex_t mu;
    pthread_cond_t cond; /* CLOCK_MONOTONIC; state changes, reader role freed, new data */
    int state;
    int reader;           /* a thread holds the reader role */
    int nblocked;         /* threads inside a blocking wait */
    int ncond;            /* threads sleeping on cond */
    int main_parked;      /* the main thread sleeps in poll() on mfd (wsc_park_main) */
    int armed;            /* ARM_*: the socket's epoll entry */
    int hup;              /* the watcher saw a hang-up while someone else was reading */
    int64_t timer_due_us; /* when the armed watch timer fires (now_us() time) */

    atomic_uint_fast64_t rng; /* the handshake's nonce */
    atomic_int connected, stop;
    atomic_int main_kick; /* wsc_signal_main wrote mfd: the main thread's wait returns */
    atomic_int inflight;  /* frames sent this run minus replies stored: calls awaited */

    /* Set before the watcher starts or before state leaves ST_CONNECTING, then constant. */
    int fd, epfd, efd, tfd;
    int otfd; /* wsout's cork timer */
    int mfd;  /* eventfd: wakes the main thread sleeping while another thread reads */
    pthread_t thread, main_thread;
    atomic_int started;
    struct wcn_target target;
    char *token;

    int sigfd; /* main thread only (wsc_set_signal_fd): readable when a signal came */

    /* Reader role only. */
    struct wsp_reader rd;
    const char *end_why; /* why the reader saw the connection end */
} wsc = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .fd = -1,
    .epfd = -1,
    .efd = -1,
    .tfd = -1,
    .mfd = -1,
    .otfd = -1,
    .sigfd = -1,
};

/* ---- state (caller holds mu) --------------------------------------------------------- */

static void wsc_notify_watcher(void)
{
    uint64_t one = 1;
    if (write(wsc.efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        log_warn("worker", "cannot wake the watcher thread: %s", strerror(errno));
}

/* Wakes every thread sleeping for the reader role or a state change; caller holds mu.
 * The main thread sleeps on mfd, not cond (it must also see signals, see wsc_park_main). */
static void wsc_wake_sleepers(void)
{
    if (wsc.ncond)
        pthread_cond_broadcast(&wsc.cond);
    if (wsc.main_parked) {
        uint64_t one = 1;
        if (write(wsc.mfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
            log_warn("worker", "cannot wake the main thread: %s", strerror(errno));
    }
}

/* Points the socket's epoll entry at `want`. ARM_HUP after a seen hang-up would fire at
 * once, again and again: the blocked threads read the end of stream themselves. */
static void wsc_arm(int want)
{
    if (want == ARM_HUP && wsc.hup)
        want = ARM_NONE;
    if (want == wsc.armed || want == ARM_NONE || wsc.state != ST_OPEN) {
        if (want == ARM_NONE)
            wsc.armed = ARM_NONE; /* one-shot entries disarm themselves when they fire */
        return;
    }
    struct epoll_event ev = {.data.fd = wsc.fd};
    ev.events = EPOLLRDHUP | EPOLLONESHOT | (want == ARM_IN ? EPOLLIN : 0);
    if (epoll_ctl(wsc.epfd, EPOLL_CTL_MOD, wsc.fd, &ev) < 0)
        log_warn("worker", "epoll_ctl: %s", strerror(errno));
    wsc.armed = want;
}

static void wsc_timer(int ms)
{
    struct itimerspec its = {.it_value = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L}};
    timerfd_settime(wsc.tfd, 0, &its, NULL);
}

/* A thread starts blocking: the socket's data goes to it, not to the watcher. The timer
 * stays armed: firing while someone is blocked does nothing (wsc_on_timer checks). */
static void wsc_block_enter(void)
{
    if (wsc.nblocked++ == 0 && wsc.state == ST_OPEN && wsc.armed == ARM_IN)
        wsc_arm(ARM_HUP);
}

/* A thread stops blocking: if nobody waits again soon, the watcher reads. "Soon" is 5-10 ms:
 * the timer is only pushed back once less than half the delay is left, so a program making
 * call after call pays one timerfd_settime per 5 ms, not two syscalls per call. */
static void wsc_block_leave(void)
{
    if (--wsc.nblocked == 0 && wsc.state == ST_OPEN) {
        int64_t now = now_us();
        if (wsc.timer_due_us - now < WSC_WATCH_DELAY_MS * 500) {
            wsc_timer(WSC_WATCH_DELAY_MS);
            wsc.timer_due_us = now + WSC_WATCH_DELAY_MS * 1000;
        }
    }
}

/* The connection is gone: wake everyone, tell the watcher (it ends the process if the main
 * thread does not), and stop a run in progress, whose result nobody can receive. Returns 1
 * when the main thread must be signalled (after unlocking). */
static int wsc_lost(const char *why)
{
    if (wsc.state == ST_CLOSED)
        return 0;
    if (wsc.state == ST_OPEN)
        log_info("worker", "control connection closed (%s)", why);
    wsc.state = ST_CLOSED;
    wsc_notify_watcher();
    wsc_wake_sleepers();
    return inb_lost();
}

/* Stores a batch of messages. Returns 1 when the main thread must be interrupted. */
static int wsc_store(struct inb_msg *batch)
{
    int signal = 0;
    while (batch) {
        struct inb_msg *next = batch->next;
        if (batch->kind == INB_REPLY && atomic_load(&wsc.inflight) > 0)
            atomic_fetch_sub(&wsc.inflight, 1);
        signal |= inb_store(batch);
        batch = next;
    }
    return signal;
}

/* Sends SIGUSR1 to the main thread, whose Python handler then asks interrupt_reason(), and
 * wakes the main thread if it waits (mfd, after the signal: see the header comment). */
static void wsc_signal_main(void)
{
    /* SIGUSR1's default action kills the process: only signal once the runtime has
     * installed its handler (it always does before any run starts). */
    struct sigaction sa;
    if (sigaction(SIGUSR1, NULL, &sa) == 0 && sa.sa_handler != SIG_DFL &&
        sa.sa_handler != SIG_IGN) {
        log_debug("worker", "interrupting the current run");
        pthread_kill(wsc.main_thread, SIGUSR1);
        /* The main thread signalling itself is not waiting: it returns to Python now. */
        uint64_t one = 1;
        if (!pthread_equal(pthread_self(), wsc.main_thread)) {
            atomic_store(&wsc.main_kick, 1);
            if (write(wsc.mfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
                log_warn("worker", "cannot wake the main thread: %s", strerror(errno));
        }
    } else {
        log_warn("worker", "cannot interrupt the run: no SIGUSR1 handler installed");
    }
}

/* ---- reading (reader role only) ------------------------------------------------------ */

/* Reader callback: a finished message or control frame. ud is the batch's tail link. */
static int wsc_on_event(void *ud, int event, char *data, size_t len)
{
    struct inb_msg ***tail = ud;
    switch (event) {
    case WSP_EV_TEXT:
        **tail = inb_classify(data, len);
        *tail = &(**tail)->next;
        return 0;
    case WSP_EV_BINARY:
        log_warn("worker", "binary control frame of %zu bytes ignored", len);
        return 0;
    case WSP_EV_PING:
        wso_control(WSP_OP_PONG, data, len);
        return 0;
    case WSP_EV_CLOSE:
        wso_control(WSP_OP_CLOSE, data, len >= 2 ? 2 : 0);
        wsc.end_why = "closed by the gateway";
        return -1;
    default:
        return 0;
    }
}

/* Parses n bytes just put into the reader's space. 0, or -1 when the connection must end. */
static int wsc_feed(size_t n, struct inb_msg ***tail)
{
    if (wsp_reader_feed(&wsc.rd, n, wsc_on_event, tail) == 0)
        return 0;
    if (!wsc.end_why) {
        log_error("worker", "control connection: %s: dropping it", wsc.rd.error);
        wsc.end_why = wsc.rd.error;
    }
    return -1;
}

/* One recv and the parse of what it brought; `flags` MSG_DONTWAIT, or 0 to block. Returns 1
 * if bytes came, 0 if none were waiting (or EINTR), -1 when the connection is over (end of
 * stream, error, protocol violation, close frame). */
static int wsc_recv_once(struct inb_msg ***tail, int flags)
{
    void *dst;
    size_t cap;
    wsp_reader_space(&wsc.rd, &dst, &cap);
    ssize_t n = recv(wsc.fd, dst, cap, flags);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return 0;
        wsc.end_why = strerror(errno);
        return -1;
    }
    if (n == 0) {
        wsc.end_why = "end of stream";
        return -1;
    }
    return wsc_feed((size_t)n, tail) < 0 ? -1 : 1;
}

/* Main thread: mfd was readable. Empties it; returns 1 if wsc_signal_main wrote it (else a
 * state change did, or a stale count: the caller looks again). */
static int wsc_drain_mfd(void)
{
    uint64_t v;
    (void)!read(wsc.mfd, &v, sizeof(v)); /* non-blocking */
    return atomic_exchange(&wsc.main_kick, 0);
}

/* Waits up to timeout_ms for the socket to be readable, then reads once; `on_main`: also
 * watch mfd and sigfd. Returns 1 (read something), 0 (nothing yet), -2 (a signal arrived
 * and nothing was read: let the caller look at it), -1 (the connection is over). *got_sig
 * is set when a signal arrived. `idle` (see wsc_wait): one blocking recv instead of
 * poll + recv; a signal ends it with EINTR (Python's handlers have no SA_RESTART), and if
 * agent code made the socket non-blocking again, EAGAIN falls back to the poll. Reader role
 * only; no locks held. */
static int wsc_poll_read(int timeout_ms, int on_main, int idle, int *got_sig,
                         struct inb_msg ***tail)
{
    if (idle) {
        int r = wsc_recv_once(tail, 0);
        if (r != 0)
            return r;
        if (errno == EINTR) {
            *got_sig = 1;
            return -2;
        }
    }
    struct pollfd pfd[3] = {{.fd = wsc.fd, .events = POLLIN},
                            {.fd = wsc.mfd, .events = POLLIN},
                            {.fd = wsc.sigfd, .events = POLLIN}};
    int n = poll(pfd, !on_main ? 1 : wsc.sigfd >= 0 ? 3 : 2, timeout_ms);
    if (n < 0 && errno == EINTR)
        *got_sig = 1;
    if (n < 0)
        return errno == EINTR ? -2 : -1;
    if (n == 0)
        return 0;
    if ((pfd[1].revents && wsc_drain_mfd()) || pfd[2].revents)
        *got_sig = 1;
    if (!pfd[0].revents)
        return -2;
    if (pfd[0].revents & POLLNVAL)
        return -1;
    return wsc_recv_once(tail, MSG_DONTWAIT);
}

/* The main thread sleeps while another thread holds the reader role (or the connection is
 * being set up): until wsc_wake_sleepers() writes mfd, a signal comes (sigfd, or EINTR) or
 * timeout_ms pass. Not on cond: a signal does not end pthread_cond_wait. main_parked is set
 * under mu before it is released, so no wake-up made under mu can be missed. Caller holds
 * mu; it is released meanwhile. Returns 1 when a signal arrived. */
static int wsc_park_main(int timeout_ms)
{
    struct pollfd p[2] = {{.fd = wsc.mfd, .events = POLLIN}, {.fd = wsc.sigfd, .events = POLLIN}};
    wsc.main_parked = 1;
    pthread_mutex_unlock(&wsc.mu);
    int n = poll(p, wsc.sigfd >= 0 ? 2 : 1, timeout_ms);
    int sig = n < 0 && errno == EINTR;
    if (n > 0 && p[0].revents && wsc_drain_mfd())
        sig = 1;
    if (n > 0 && p[1].revents)
        sig = 1;
    pthread_mutex_lock(&wsc.mu);
    wsc.main_parked = 0;
    return sig;
}

/* ---- waiting ------------------------------------------------------------------------- */

static int wsc_take_request(void *arg);

/* Blocks until take(arg) (called with mu held) returns 1, the connection closes or
 * timeout_ms pass. On the main thread a signal ends the wait early (WSC_SIGNAL), also one
 * that came before the wait started (see sigfd); other threads never see signals. */
static int wsc_wait(int timeout_ms, int (*take)(void *), void *arg)
{
    int64_t deadline = timeout_ms > 0 ? now_ms() + timeout_ms : 0;
    int rc, entered = 0, signal = 0;
    int on_main = pthread_equal(pthread_self(), wsc.main_thread);
    int wfail = wso_flush() < 0; /* frames corked by a burst of sends leave now */

    pthread_mutex_lock(&wsc.mu);
    if (wfail)
        signal = wsc_lost("write failed");
    for (;;) {
        if (take(arg)) {
            rc = WSC_OK;
            break;
        }
        if (wsc.state == ST_CLOSED || !wsc.started) {
            rc = WSC_CLOSED;
            break;
        }
        int left = -1;
        if (timeout_ms >= 0) {
            int64_t l = timeout_ms ? deadline - now_ms() : 0;
            left = l <= 0 ? 0 : l > 1000000 ? 1000000 : (int)l;
        }
        if (left == 0) {
            rc = WSC_TIMEOUT;
            break;
        }
        if (wsc.state == ST_CONNECTING || wsc.reader) {
            if (on_main) {
                if (wsc_park_main(left)) {
                    rc = take(arg) ? WSC_OK : WSC_SIGNAL;
                    break;
                }
                continue;
            }
            wsc.ncond++;
            if (left < 0) {
                pthread_cond_wait(&wsc.cond, &wsc.mu);
            } else {
                struct timespec ts = ts_after_ms(CLOCK_MONOTONIC, left);
                pthread_cond_timedwait(&wsc.cond, &wsc.mu, &ts);
            }
            wsc.ncond--;
            continue;
        }
        if (!entered) {
            wsc_block_enter();
            entered = 1;
        }
        wsc.reader = 1;
        /* The main thread waiting, with no timeout, for the replies of several calls:
         * nothing but the socket must wake it. A cancel and the run's deadline (the
         * gateway's cancel frame) come on the socket it reads itself, so do other threads'
         * replies and the end of the connection (a sender that found it broken also makes
         * the watcher end the process within WSC_CLOSE_GRACE_MS). A signal ends the recv
         * with EINTR; one that lands in the instant before recv blocks is seen when the
         * next frame comes. A reply wait with one call in flight keeps the poll: measured
         * (results/floor.md, session 9), one reply at a time is 5-10 % slower through the
         * blocking recv, many faster. So does every request wait, the one between runs
         * too: a thread blocked in recv on a unix stream socket is also woken each time
         * the gateway reads what this side sent (the kernel's write-space wake-up does not
         * filter by event; poll's does), and between runs that is the answer, read while
         * the gateway writes it to its client: the woken worker made the gateway's CPU
         * look busy, so the client's wake-up went to the other CPU (results/percall.md,
         * eighth pass: the empty program 0.96-0.97x with the poll). */
        int idle =
            on_main && left < 0 && take != wsc_take_request && atomic_load(&wsc.inflight) > 1;
        pthread_mutex_unlock(&wsc.mu);

        struct inb_msg *batch = NULL, **tail = &batch;
        int got_sig = 0;
        int r = wsc_poll_read(left, on_main, idle, &got_sig, &tail);

        pthread_mutex_lock(&wsc.mu);
        wsc.reader = 0;
        int got = batch != NULL;
        signal |= wsc_store(batch);
        if (r == -1)
            signal |= wsc_lost(wsc.end_why ? wsc.end_why : "poll failed");
        if (got)
            wsc_wake_sleepers(); /* another thread's reply, maybe */
        if (got_sig || signal) {
            /* A signal arrived, or we are about to send one (maybe to ourselves): return
             * so the caller's PyErr_CheckSignals() sees it now. */
            rc = take(arg) ? WSC_OK : got_sig ? WSC_SIGNAL : WSC_TIMEOUT;
            break;
        }
    }
    if (entered) {
        wsc_block_leave();
        wsc_wake_sleepers(); /* the reader role is free again */
    }
    pthread_mutex_unlock(&wsc.mu);
    if (signal)
        wsc_signal_main();
    return rc;
}

struct wsc_take {
    const char *id;
    char **out;
    size_t *len;
};

static int wsc_take_request(void *arg)
{
    struct wsc_take *t = arg;
    return inb_take_request(t->out, t->len);
}

static int wsc_take_reply(void *arg)
{
    struct wsc_take *t = arg;
    return inb_take_reply(t->id, t->out, t->len);
}

int wsc_next_request(int timeout_ms, char **out, size_t *out_len)
{
    struct wsc_take t = {NULL, out, out_len};
    return wsc_wait(timeout_ms, wsc_take_request, &t);
}

int wsc_wait_reply(const char *id, int timeout_ms, char **out, size_t *out_len)
{
    struct wsc_take t = {id, out, out_len};
    return wsc_wait(timeout_ms, wsc_take_reply, &t);
}

/* ---- the watcher thread -------------------------------------------------------------- */

/* Connects, shakes hands and sends the token. Bytes that came after the handshake
 * response are in the reader's space, *extra of them. 0, or -1 (logged). */
static int wsc_connect(size_t *extra)
{
    void *dst;
    size_t cap;
    wsp_reader_space(&wsc.rd, &dst, &cap);
    wsc.fd = wcn_open(&wsc.target, WSC_PROTOCOL, wsc.efd, now_ms() + WSC_CONNECT_TIMEOUT_MS,
                      (uint64_t)atomic_fetch_add(&wsc.rng, 1), dst, cap, extra);
    if (wsc.fd < 0)
        return -1;
    wso_set_fd(wsc.fd);
    int rc = wso_frame(WSP_OP_TEXT, wsc.token, strlen(wsc.token), 1);
    explicit_bzero(wsc.token, strlen(wsc.token));
    if (rc < 0)
        log_error("worker", "control connection failed: cannot send the token");
    return rc < 0 ? -1 : 0;
}

/* The timer fired: Python has not waited for WSC_WATCH_DELAY_MS. Watch for data too. */
static void wsc_on_timer(void)
{
    uint64_t ticks;
    if (read(wsc.tfd, &ticks, sizeof(ticks)) < 0)
        return; /* re-armed or disarmed meanwhile */
    pthread_mutex_lock(&wsc.mu);
    if (wsc.nblocked == 0 && !wsc.reader) {
        wsc.hup = 0; /* nobody else will read the end of stream now: we must */
        wsc_arm(ARM_IN);
    }
    pthread_mutex_unlock(&wsc.mu);
}

/* The socket is readable or hung up, and nobody may be waiting: read for them. */
static void wsc_on_socket(uint32_t events)
{
    int signal = 0;
    pthread_mutex_lock(&wsc.mu);
    wsc.armed = ARM_NONE; /* one-shot */
    if (wsc.state != ST_OPEN) {
        pthread_mutex_unlock(&wsc.mu);
        return;
    }
    if (wsc.nblocked > 0 || wsc.reader) {
        /* A blocked thread reads; it sees a hang-up as the end of stream itself. */
        if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            wsc.hup = 1;
        else
            wsc_arm(ARM_HUP);
        pthread_mutex_unlock(&wsc.mu);
        return;
    }
    wsc.reader = 1;
    pthread_mutex_unlock(&wsc.mu);

    struct inb_msg *batch = NULL, **tail = &batch;
    int r;
    while ((r = wsc_recv_once(&tail, MSG_DONTWAIT)) > 0)
        ;

    pthread_mutex_lock(&wsc.mu);
    wsc.reader = 0;
    signal = wsc_store(batch);
    if (r < 0)
        signal |= wsc_lost(wsc.end_why ? wsc.end_why : "read failed");
    else
        wsc_arm(wsc.nblocked ? ARM_HUP : ARM_IN);
    wsc_wake_sleepers();
    pthread_mutex_unlock(&wsc.mu);
    if (signal)
        wsc_signal_main();
}

static void *wsc_watch_main(void *arg)
{
    (void)arg;
    struct inb_msg *batch = NULL, **tail = &batch;
    size_t extra = 0;
    int ok = wsc_connect(&extra) == 0;
    /* Frames that came along with the handshake response: nobody else reads yet. */
    if (ok && extra && wsc_feed(extra, &tail) < 0)
        ok = 0;

    pthread_mutex_lock(&wsc.mu);
    wsc_store(batch);
    if (ok && wsc.state == ST_CONNECTING) {
        struct epoll_event ev = {.events = EPOLLRDHUP | EPOLLONESHOT, .data.fd = wsc.fd};
        epoll_ctl(wsc.epfd, EPOLL_CTL_ADD, wsc.fd, &ev);
        wsc.armed = ARM_HUP;
        wsc.state = ST_OPEN;
        wsc.connected = 1;
        log_debug("worker", "control connection established");
        if (wsc.nblocked == 0) {
            wsc_timer(WSC_WATCH_DELAY_MS);
            wsc.timer_due_us = now_us() + WSC_WATCH_DELAY_MS * 1000;
        }
    } else {
        wsc.state = ST_CLOSED;
    }
    wsc_wake_sleepers();
    pthread_mutex_unlock(&wsc.mu);

    while (ok && !wsc.stop) {
        struct epoll_event ev[4];
        int n = epoll_wait(wsc.epfd, ev, 4, -1);
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++) {
            if (ev[i].data.fd == wsc.tfd) {
                wsc_on_timer();
            } else if (ev[i].data.fd == wsc.otfd && wso_on_timer() < 0) {
                pthread_mutex_lock(&wsc.mu);
                int sig = wsc_lost("write failed");
                pthread_mutex_unlock(&wsc.mu);
                if (sig)
                    wsc_signal_main();
            } else if (ev[i].data.fd == wsc.fd)
                wsc_on_socket(ev[i].events);
        }
        pthread_mutex_lock(&wsc.mu);
        int closed = wsc.state == ST_CLOSED;
        pthread_mutex_unlock(&wsc.mu);
        if (closed)
            break;
    }
    if (wsc.stop)
        return NULL;

    /* The gateway is gone. The main thread normally notices (ConnectionError) and calls
     * wsc_stop(); if agent code keeps it busy, end the process ourselves. */
    int64_t deadline = now_ms() + WSC_CLOSE_GRACE_MS;
    while (!wsc.stop && now_ms() < deadline) {
        struct pollfd p = {.fd = wsc.efd, .events = POLLIN};
        if (poll(&p, 1, (int)(deadline - now_ms())) > 0) {
            uint64_t v;
            if (read(wsc.efd, &v, sizeof(v)) < 0)
                break;
        }
    }
    if (!wsc.stop) {
        log_warn("worker",
                 "main thread still busy %d ms after the control connection closed: exiting",
                 WSC_CLOSE_GRACE_MS);
        _exit(wsc.connected ? 0 : WSC_EXIT_NO_CONNECT);
    }
    return NULL;
}

/* ---- start, stop --------------------------------------------------------------------- */

int wsc_start(const char *url, const char *token, size_t max_frame, pthread_t main_thread)
{
    pthread_condattr_t ca;
    sigset_t all, old;
    uint64_t seed;

    if (wcn_parse_url(url, &wsc.target) < 0) {
        log_error("worker", "CODEMCP_CONTROL_URL '%s' is not ws://HOST:PORT/PATH or unix:/PATH",
                  url);
        return -1;
    }
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wsc.cond, &ca);
    pthread_condattr_destroy(&ca);
    wsc.main_thread = main_thread;
    if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
        seed = (uint64_t)now_us() ^ ((uint64_t)getpid() << 32);
    atomic_store(&wsc.rng, seed);
    wsc.token = xstrdup(token);
    if (wsp_reader_init(&wsc.rd, WSC_RBUF, max_frame) < 0)
        return -1;
    wsc.state = ST_CONNECTING;

    wsc.epfd = epoll_create1(EPOLL_CLOEXEC);
    wsc.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    wsc.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    wsc.mfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wsc.epfd < 0 || wsc.efd < 0 || wsc.tfd < 0 || wsc.mfd < 0) {
        log_error("worker", "cannot create the watcher's descriptors: %s", strerror(errno));
        return -1;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = wsc.efd};
    epoll_ctl(wsc.epfd, EPOLL_CTL_ADD, wsc.efd, &ev);
    ev.data.fd = wsc.tfd;
    epoll_ctl(wsc.epfd, EPOLL_CTL_ADD, wsc.tfd, &ev);
    if ((wsc.otfd = wso_init(seed ^ 0x9e3779b97f4a7c15ull)) >= 0) {
        ev.data.fd = wsc.otfd;
        epoll_ctl(wsc.epfd, EPOLL_CTL_ADD, wsc.otfd, &ev);
    }

    /* The watcher inherits a full signal mask: SIGUSR1 and friends must reach the main
     * thread (Python's handlers only run there). */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024); /* counts against RLIMIT_AS */
    int rc = pthread_create(&wsc.thread, &attr, wsc_watch_main, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        log_error("worker", "cannot start the control thread: %s", strerror(rc));
        return -1;
    }
    wsc.started = 1;
    return 0;
}

void wsc_stop(void)
{
    wsc_set_current_run(NULL); /* nothing left to interrupt while tearing down */
    if (wsc.started) {
        wsc.stop = 1;
        wsc_notify_watcher();
        pthread_join(wsc.thread, NULL);
    }
    pthread_mutex_lock(&wsc.mu);
    int was_open = wsc.state == ST_OPEN;
    wsc.state = ST_CLOSED;
    wsc_wake_sleepers();
    pthread_mutex_unlock(&wsc.mu);
    if (was_open)
        wso_close();
    wsc.started = 0;
    int *fds[] = {&wsc.fd, &wsc.epfd, &wsc.efd, &wsc.tfd, &wsc.mfd};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        if (*fds[i] >= 0) {
            close(*fds[i]);
            *fds[i] = -1;
        }
    wso_free();
    wsc.otfd = -1;
    pthread_mutex_lock(&wsc.mu);
    inb_clear();
    pthread_mutex_unlock(&wsc.mu);
    if (wsc.token) {
        explicit_bzero(wsc.token, strlen(wsc.token));
        free(wsc.token);
        wsc.token = NULL;
    }
    wsp_reader_free(&wsc.rd);
    wcn_target_free(&wsc.target);
}

/* ---- the rest of the API ------------------------------------------------------------- */

/* Waits while the connection is being set up. Returns the state after. */
static int wsc_wait_open(void)
{
    pthread_mutex_lock(&wsc.mu);
    while (wsc.state == ST_CONNECTING) {
        wsc.ncond++;
        pthread_cond_wait(&wsc.cond, &wsc.mu);
        wsc.ncond--;
    }
    int st = wsc.state;
    pthread_mutex_unlock(&wsc.mu);
    return st;
}

int wsc_send(const char *text, size_t len)
{
    if (!wsc.started || wsc_wait_open() != ST_OPEN)
        return -1;
    int rc = wso_text(text, len);
    if (rc == 0)
        atomic_fetch_add(&wsc.inflight, 1);
    if (rc == -1) {
        /* The reader will see the end of stream too; say it now for senders. */
        pthread_mutex_lock(&wsc.mu);
        int signal = wsc_lost("write failed");
        pthread_mutex_unlock(&wsc.mu);
        if (signal)
            wsc_signal_main();
    }
    return rc;
}

void wsc_forget(const char *id)
{
    pthread_mutex_lock(&wsc.mu);
    inb_forget(id, wsc.state == ST_CLOSED);
    pthread_mutex_unlock(&wsc.mu);
}

void wsc_set_current_run(const char *run_id)
{
    atomic_store(&wsc.inflight, 0);
    pthread_mutex_lock(&wsc.mu);
    int signal = inb_set_current_run(run_id);
    pthread_mutex_unlock(&wsc.mu);
    if (signal)
        wsc_signal_main();
}

char *wsc_interrupt_reason(void)
{
    pthread_mutex_lock(&wsc.mu);
    char *r = inb_take_reason();
    pthread_mutex_unlock(&wsc.mu);
    return r;
}

void wsc_set_signal_fd(int fd)
{
    wsc.sigfd = fd;
}

int wsc_on_main_thread(void)
{
    return wsc.started && pthread_equal(pthread_self(), wsc.main_thread);
}

int wsc_is_closed(void)
{
    pthread_mutex_lock(&wsc.mu);
    int closed = wsc.state == ST_CLOSED || !wsc.started;
    pthread_mutex_unlock(&wsc.mu);
    return closed;
}

int wsc_was_connected(void)
{
    return wsc.connected;
}
