/* connlimit — see connlimit.h. Owns the per-listener connection tables, their deadline
 * sweep and the rate-limited "limit hit" log lines; it never reads or writes a connection's
 * data (it only asks its owner, through its cl_conn_ops, to close one). The ops of lws
 * connections (the HTTP front) are here; the control channel brings its own. */
#include "connlimit.h"
#include "log.h"
#include "loop.h"
#include "util.h"

#include <libwebsockets.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define SWEEP_MS     250
#define LOG_EVERY_MS 10000
#define PEER_LEN     64

struct conn {
    void *h; /* the owner's handle: a struct lws *, or what cl_add was given */
    const struct cl_conn_ops *ops;
    char peer[PEER_LEN];
    enum cl_phase phase;
    int64_t since_ms; /* start of the current phase */
    int closing;      /* asked lws to close it: no longer counted */
    int trusted;      /* one of our own children (cl_trust_peers) */
    unsigned spared;  /* pick_victim's round in which it was passed over */
};

enum reason { R_PEER_PENDING, R_PENDING, R_PEER_CONN, R_DEADLINE, R_NREASONS };

struct pool {
    const char *name;
    int ready;
    struct conn *c;
    size_t n, cap;
    long max_pending_per_peer, max_pending, max_conn_per_peer;
    long pending_ms, body_ms, trusted_ms, grace_ms;
    int (*is_ours)(pid_t pid);
    struct lp_timer sweep;
    int sweeping;
    struct lp_timer log_timer;
    int logging;
    unsigned long hits[R_NREASONS];
};

static struct pool pools[CL_NPOOLS];

static const char *const reason_text[R_NREASONS] = {
    "over the pending connections allowed per peer",
    "over the pending connections allowed in all",
    "over the connections allowed per peer",
    "past their deadline",
};

static void flush_log(void *ud)
{
    struct pool *p = ud;
    p->logging = 0;
    for (int r = 0; r < R_NREASONS; r++)
        if (p->hits[r]) {
            log_warn(p->name, "limit hit: %lu connection%s closed in the last %d s (%s)",
                     p->hits[r], p->hits[r] == 1 ? "" : "s", LOG_EVERY_MS / 1000, reason_text[r]);
            p->hits[r] = 0;
            p->logging = 1;
        }
    if (p->logging) /* keep summarizing while hits go on */
        lp_timer_start(&p->log_timer, LOG_EVERY_MS, flush_log, p);
}

static void hit(struct pool *p, enum reason r, const char *peer)
{
    if (!p->logging) { /* the first one of a quiet period is logged at once */
        log_warn(p->name, "limit hit: closing a connection%s%s (%s); further ones are counted",
                 peer[0] ? " from " : "", peer, reason_text[r]);
        p->logging = 1;
        lp_timer_start(&p->log_timer, LOG_EVERY_MS, flush_log, p);
        return;
    }
    p->hits[r]++;
}

static struct conn *find(struct pool *p, const void *h)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->c[i].h == h)
            return &p->c[i];
    return NULL;
}

/* ---- lws connections (the HTTP front) ---------------------------------------------------- */

static int lws_conn_fd(void *h)
{
    return lws_get_socket_fd(h);
}

/* At once, so a flood never holds more descriptors than the limits allow; WSI_DESTROY follows
 * inside the call. */
static void lws_conn_close(void *h)
{
    lws_set_timeout(h, 1, LWS_TO_KILL_SYNC);
}

/* 1 when lws has parsed some of the request (its method and URI). (Not
 * lws_http_get_uri_and_method: it logs a warning for every connection without a URI.) */
static int lws_conn_mid_request(void *h)
{
    struct lws *wsi = h;
    return lws_hdr_total_length(wsi, WSI_TOKEN_POST_URI) > 0 ||
           lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) > 0 ||
           lws_hdr_total_length(wsi, WSI_TOKEN_DELETE_URI) > 0;
}

static const struct cl_conn_ops lws_conn_ops = {
    .fd = lws_conn_fd,
    .close = lws_conn_close,
    .mid_request = lws_conn_mid_request,
};

/* Closes c (never inside c's own callback: callers run in a timer or in another connection's
 * accept). Its removal (cl_remove, WSI_DESTROY for lws ones) may happen inside the call and
 * swap the last entry into c's place: callers re-read. */
static void close_conn(struct pool *p, struct conn *c, enum reason r)
{
    c->closing = 1;
    hit(p, r, c->peer);
    c->ops->close(c->h);
}

static void sweep(void *ud)
{
    struct pool *p = ud;
    int64_t now = now_ms();
    int any = 0;
    for (size_t i = p->n; i-- > 0;) { /* downwards: a close moves the last entry into i */
        if (i >= p->n)
            continue;
        struct conn *c = &p->c[i];
        if (c->closing || c->phase == CL_ACTIVE)
            continue;
        long limit = c->trusted               ? p->trusted_ms
                     : c->phase == CL_PENDING ? p->pending_ms
                                              : p->body_ms;
        if (now - c->since_ms >= limit)
            close_conn(p, c, R_DEADLINE);
        else
            any = 1;
    }
    p->sweeping = any;
    if (any)
        lp_timer_start(&p->sweep, SWEEP_MS, sweep, p);
}

static void arm_sweep(struct pool *p)
{
    if (!p->sweeping) {
        p->sweeping = 1;
        lp_timer_start(&p->sweep, SWEEP_MS, sweep, p);
    }
}

/* CODEMCP_HTTP_MAX_PENDING's default: 1024, or half the descriptors when there are fewer
 * than 2048 (the rest stay for sessions, upstreams and workers). Read after
 * lp_raise_nofile(). A flood that reopens every connection closed cycles through this pool,
 * so its size over the flood's rate is how long a young connection is safe. */
static long default_max_pending(void)
{
    struct rlimit rl;
    long n = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur / 2 < (rlim_t)n)
        n = (long)(rl.rlim_cur / 2);
    return n < 64 ? 64 : n;
}

/* ---- out of descriptors ------------------------------------------------------------------
 * lws 4.1 answers EMFILE/ENFILE on accept() by returning to poll() with the connection still
 * queued, so the listener stays readable and the loop spins. The remedy libuv and nginx use:
 * one descriptor is kept in reserve; when accept fails for want of descriptors, the reserve
 * is closed, every listener's queue is drained by accepting and closing at once (those
 * clients see their connection closed instead of a gateway that burns a core), and the
 * reserve is taken again. The cost then follows the rate of new connections, not the loop's
 * speed. Our own listeners (the control channel's) report their failures through
 * lp_accept_failed, which lands here the same way. Listeners are found once, by asking every
 * open descriptor whether it listens (SO_ACCEPTCONN): the HTTP front, the control listener when
 * there is one, the admin socket. */
#define MAX_LISTENERS 8
#define DRAIN_MAX     1024 /* connections closed per failure, at most */

static int reserve_fd = -1;
static int listeners[MAX_LISTENERS], n_listeners, listeners_found;
static int64_t nofd_log_ms;
static unsigned long nofd_closed;

static void find_listeners(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) && n_listeners < MAX_LISTENERS) {
        int fd = atoi(e->d_name), on = 0;
        socklen_t len = sizeof(on);
        if (e->d_name[0] != '.' && fd != dirfd(d) &&
            getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 && on)
            listeners[n_listeners++] = fd;
    }
    closedir(d);
    listeners_found = 1;
}

static unsigned long drain(int fd)
{
    unsigned long n = 0;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    while (n < DRAIN_MAX && poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN)) {
        int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c < 0)
            break;
        close(c);
        n++;
    }
    return n;
}

static void on_accept_failed(int err)
{
    if (err != EMFILE && err != ENFILE)
        return;
    if (reserve_fd >= 0)
        close(reserve_fd);
    reserve_fd = -1;
    if (!listeners_found)
        find_listeners();
    unsigned long n = 0;
    for (int i = 0; i < n_listeners; i++)
        n += drain(listeners[i]);
    reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    nofd_closed += n;
    int64_t now = now_ms();
    if (n && (!nofd_log_ms || now - nofd_log_ms >= LOG_EVERY_MS)) {
        log_warn("limits",
                 "out of descriptors: %lu new connection%s closed unserved (raise ulimit -n, "
                 "or lower CODEMCP_HTTP_MAX_PENDING)",
                 nofd_closed, nofd_closed == 1 ? "" : "s");
        nofd_closed = 0;
        nofd_log_ms = now;
    }
}

void cl_init(enum cl_pool pool, const struct cl_limits *lim)
{
    if (reserve_fd < 0 && !listeners_found) {
        reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        lp_on_accept_failed(on_accept_failed);
    }
    struct pool *p = &pools[pool];
    if (pool == CL_HTTP) {
        p->name = "http";
    } else {
        p->name = "control"; /* max_conn_per_peer 0: workers only, bounded by their pool */
    }
    p->max_pending = lim->max_pending >= 0 ? lim->max_pending : default_max_pending();
    p->max_pending_per_peer = lim->max_pending_per_peer;
    p->max_conn_per_peer = lim->max_conn_per_peer;
    p->pending_ms = lim->pending_ms;
    p->body_ms = lim->body_ms;
    p->grace_ms = lim->grace_ms;
    if (p->max_pending < 1)
        p->max_pending = 1;
    if (p->max_pending_per_peer < 1)
        p->max_pending_per_peer = 1;
    p->ready = 1;
}

/* 1 when c's whole request head is already waiting in the socket: lws reads it this round,
 * so c is about to prove itself (a client that connects and speaks at once). A peek. */
static int has_request(struct conn *c)
{
    char buf[4096];
    ssize_t n = recv(c->ops->fd(c->h), buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
    return n >= 4 && memmem(buf, (size_t)n, "\r\n\r\n", 4) != NULL;
}

/* 1 when c has sent part of its request: it is mid-request. */
static int sent_something(struct conn *c)
{
    return c->ops->mid_request && c->ops->mid_request(c->h);
}

/* How readily c is closed to make room: lower goes first. Past the grace period, connections
 * that never sent a byte (idle holders), then those stuck mid-request (slowloris); within it,
 * a young one already mid-request (a real client sends its request head at once), and last a
 * young one that has not spoken yet (a real client about to). */
static int victim_rank(const struct pool *p, struct conn *c, int64_t now)
{
    int old = now - c->since_ms >= p->grace_ms;
    int sent = sent_something(c);
    return old ? (sent ? 1 : 0) : (sent ? 2 : 3);
}

/* The pending connections of `peer` (all when NULL) that could be closed to make room. */
static int candidate(const struct conn *c, const char *peer)
{
    return !c->closing && !c->trusted && c->phase == CL_PENDING &&
           (!peer || strcmp(c->peer, peer) == 0);
}

static long count_pending(struct pool *p, const char *peer)
{
    long n = 0;
    for (size_t i = 0; i < p->n; i++)
        n += candidate(&p->c[i], peer);
    return n;
}

/* The connection to close to make room among the candidates of `peer` (all when NULL): the
 * lowest victim_rank, oldest first; with old_only, only those past the grace period. A
 * connection whose request is already readable is passed over (up to 8 of them, each a
 * peek). NULL when there is none. O(n) per try. */
static struct conn *pick_victim(struct pool *p, const char *peer, int old_only)
{
    static unsigned round;
    int64_t now = now_ms();
    round++;
    for (int tries = 0; tries < 8; tries++) {
        struct conn *best = NULL;
        int best_rank = 0;
        for (size_t i = 0; i < p->n; i++) {
            struct conn *c = &p->c[i];
            if (!candidate(c, peer) || c->spared == round)
                continue;
            int rank = victim_rank(p, c, now);
            if (old_only && rank > 1)
                continue;
            if (!best || rank < best_rank || (rank == best_rank && c->since_ms < best->since_ms)) {
                best = c;
                best_rank = rank;
            }
        }
        if (!best || !has_request(best))
            return best;
        best->spared = round; /* about to be served: the next one */
    }
    return NULL;
}

int cl_on_accept(enum cl_pool pool, struct lws *wsi)
{
    char peer[PEER_LEN] = "";
    if (pool == CL_HTTP && pools[pool].ready)
        lws_get_peer_simple(wsi, peer, sizeof(peer));
    return cl_add(pool, wsi, &lws_conn_ops, peer);
}

int cl_add(enum cl_pool pool, void *h, const struct cl_conn_ops *ops, const char *peer_name)
{
    struct pool *p = &pools[pool];
    if (!p->ready)
        return 0;
    char peer[PEER_LEN];
    snprintf(peer, sizeof(peer), "%s", peer_name ? peer_name : "");
    int trusted = 0;
    if (p->is_ours) {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        trusted = getsockopt(ops->fd(h), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
                  cred.pid > 0 && (cred.pid == getpid() || p->is_ours(cred.pid));
        /* getpid(): a socketpair carries its creator's credentials, so a worker's control
         * socket (ctl_adopt) names the gateway itself, never the worker: 100+ sessions
         * starting at once otherwise lost workers to the 1 s token deadline. */
    }
    if (p->max_conn_per_peer > 0) {
        long n = 0;
        for (size_t i = 0; i < p->n; i++)
            n += !p->c[i].closing && strcmp(p->c[i].peer, peer) == 0;
        /* at the bound: one of the peer's pending connections makes room, else refused */
        struct conn *victim =
            n >= p->max_conn_per_peer && !trusted ? pick_victim(p, peer, 0) : NULL;
        if (victim) {
            close_conn(p, victim, R_PEER_CONN);
        } else if (n >= p->max_conn_per_peer) {
            hit(p, R_PEER_CONN, peer);
            return -1;
        }
    }
    /* Make room: first among this peer's connections past their grace period (its own
     * flood pays for it), then, at the bound for all peers, among everybody's, this peer's
     * first when it is over its share. A young connection is closed only in that last case. */
    long mine = trusted ? 0 : count_pending(p, peer);
    struct conn *victim = NULL;
    if (mine >= p->max_pending_per_peer && (victim = pick_victim(p, peer, 1))) {
        close_conn(p, victim, R_PEER_PENDING);
        mine--;
    }
    if (!trusted && count_pending(p, NULL) >= p->max_pending) {
        victim = mine >= p->max_pending_per_peer ? pick_victim(p, peer, 0) : NULL;
        if (!victim)
            victim = pick_victim(p, NULL, 0);
        if (victim)
            close_conn(p, victim, R_PENDING);
    }
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 64;
        p->c = xrealloc(p->c, p->cap * sizeof(*p->c));
    }
    struct conn *c = &p->c[p->n++];
    memset(c, 0, sizeof(*c));
    c->h = h;
    c->ops = ops;
    snprintf(c->peer, sizeof(c->peer), "%s", peer);
    c->phase = CL_PENDING;
    c->trusted = trusted;
    c->since_ms = now_ms();
    arm_sweep(p);
    return 0;
}

void cl_trust_peers(enum cl_pool pool, int (*is_ours)(pid_t pid), long trusted_ms)
{
    pools[pool].is_ours = is_ours;
    pools[pool].trusted_ms = trusted_ms;
}

void cl_remove(enum cl_pool pool, const void *h)
{
    struct pool *p = &pools[pool];
    struct conn *c = find(p, h);
    if (c)
        *c = p->c[--p->n];
}

void cl_on_destroy(enum cl_pool pool, struct lws *wsi)
{
    cl_remove(pool, wsi);
}

void cl_set_phase(enum cl_pool pool, const void *h, enum cl_phase phase)
{
    struct pool *p = &pools[pool];
    struct conn *c = find(p, h);
    if (!c || c->phase == phase)
        return;
    c->phase = phase;
    c->since_ms = now_ms();
    if (phase != CL_ACTIVE)
        arm_sweep(p);
}

void cl_free_all(void)
{
    if (reserve_fd >= 0)
        close(reserve_fd);
    reserve_fd = -1;
    n_listeners = listeners_found = 0;
    for (int i = 0; i < CL_NPOOLS; i++) {
        lp_timer_stop(&pools[i].sweep);
        lp_timer_stop(&pools[i].log_timer);
        free(pools[i].c);
        memset(&pools[i], 0, sizeof(pools[i]));
    }
}
