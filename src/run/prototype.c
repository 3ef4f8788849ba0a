/* prototype — see prototype.h.
 *
 * States: DOWN → STARTING (spawned; waiting for its "ready") → READY. Replies come in
 * request order, so the fork requests on their way are a FIFO (slot, gen). */
#include "prototype.h"
#include "catalog.h"
#include "codemcp_limits.h"
#include "jsonrpc.h"
#include "log.h"
#include "loop.h"
#include "protowire.h"
#include "shapes.h"
#include "util.h"
#include "worker_proc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

enum pt_state { PT_DOWN, PT_STARTING, PT_READY };

struct pt_req {
    int slot;
    uint64_t gen;
    int is_fork;
};

static struct {
    enum pt_state state;
    int sandboxed;
    long memory_mb;
    long start_timeout_ms;
    struct pt_hooks hooks;
    pid_t spawned; /* what lp_spawn started (the sandbox's waiter, or the prototype) */
    pid_t pid;     /* the prototype itself */
    int level;     /* its PID namespace's depth below ours */
    int fd;        /* our end of the channel (owned by io) */
    struct lp_io *io, *out_io, *err_io;
    struct rpc_lines out_lines, err_lines;
    struct pt_req *q; /* requests not answered yet */
    size_t nq, capq;
    int sdk_sent, shapes_sent;     /* versions pushed */
    int sdk_loaded, shapes_loaded; /* versions it confirmed */
    int failed_starts;
    int background; /* started in the background (SCHED_IDLE), not raised back yet */
    char *failure;
    struct lp_timer start_timer, restart_timer;
    pid_t *sandboxes; /* every waiter spawned and not reaped yet (old ones linger) */
    size_t nsb, capsb;
    int shutting_down;
    void (*gone)(void);
} pt = {.fd = -1};

/* ---- output and the processes --------------------------------------------------------------- */

static void on_line(void *ud, const char *line, size_t len)
{
    (void)ud;
    if (line)
        log_info("worker", "[prototype] %.*s", (int)(len > 2000 ? 2000 : len), line);
}
static void on_out(void *ud, const char *d, size_t n)
{
    (void)ud;
    rpc_lines_feed(&pt.out_lines, d, n, on_line, NULL);
}
static void on_err(void *ud, const char *d, size_t n)
{
    (void)ud;
    rpc_lines_feed(&pt.err_lines, d, n, on_line, NULL);
}
static void on_out_close(void *ud)
{
    (void)ud;
    pt.out_io = NULL;
}
static void on_err_close(void *ud)
{
    (void)ud;
    pt.err_io = NULL;
}
static const struct lp_io_ops out_ops = {.on_read = on_out, .on_close = on_out_close};
static const struct lp_io_ops err_ops = {.on_read = on_err, .on_close = on_err_close};

static void forget_sandbox(pid_t pid)
{
    for (size_t i = 0; i < pt.nsb; i++)
        if (pt.sandboxes[i] == pid) {
            pt.sandboxes[i] = pt.sandboxes[--pt.nsb];
            return;
        }
}

static void on_exit_cb(void *ud, pid_t pid, int status)
{
    (void)ud;
    forget_sandbox(pid);
    if (pt.shutting_down && !pt.nsb && pt.gone) {
        void (*gone)(void) = pt.gone;
        pt.gone = NULL;
        gone();
    }
    log_debug("worker", "prototype sandbox (pid %d) ended (%s %d)", (int)pid,
              WIFSIGNALED(status) ? "signal" : "status",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

/* ---- the channel -------------------------------------------------------------------------------
 */

static void restart_later(void *ud)
{
    (void)ud;
    pt_start();
}

/* The prototype is gone (its channel closed) or must go. Sessions it forked live on. */
static void went_down(const char *why)
{
    int was_ready = pt.state == PT_READY;
    lp_timer_stop(&pt.start_timer);
    if (pt.pid > 0)
        kill(pt.pid, SIGKILL); /* the prototype only: not its sandbox, the sessions live there */
    else if (pt.spawned > 0 && pt.state == PT_STARTING)
        wkp_kill(pt.spawned, pt.sandboxed ? WKP_EXEC_SANDBOX : WKP_EXEC_HOST);
    pt.state = PT_DOWN;
    pt.background = 0;
    pt.pid = 0;
    pt.spawned = 0;
    pt.nq = 0; /* their status pipes close with the prototype: workers.c sees each end */
    pt.sdk_sent = pt.shapes_sent = pt.sdk_loaded = pt.shapes_loaded = 0;
    if (pt.shutting_down)
        return;
    if (!was_ready) {
        pt.failed_starts++;
        if (pt.failed_starts >= PT_MAX_FAILED_STARTS) {
            char msg[1024];
            snprintf(msg, sizeof(msg),
                     "the Python prototype (%s) failed to start %d times (%s); see codemcp's "
                     "log (CODEMCP_LOG=info)",
                     wkp_bin(), pt.failed_starts, why);
            free(pt.failure);
            pt.failure = xstrdup(msg);
            log_error("worker", "%s", msg);
            if (pt.hooks.failed)
                pt.hooks.failed();
            return;
        }
    }
    log_info("worker", "prototype down (%s): starting a new one", why);
    lp_timer_start(&pt.restart_timer, pt.failed_starts ? 200L * pt.failed_starts : 0, restart_later,
                   NULL);
}

static void on_ready(pid_t inner)
{
    pid_t cand[3] = {pt.spawned, -1, -1};
    /* The prototype is the spawned process (host) or its grandchild (waiter → PID 1 → it). */
    if (pt.sandboxed) {
        cand[1] = wkp_child_by_nspid(pt.spawned, 1, 1);
        cand[2] = cand[1] > 0 ? wkp_child_by_nspid(cand[1], 1, inner) : -1;
        pt.pid = cand[2];
    } else {
        pt.pid = pt.spawned;
    }
    pt.level = pt.pid > 0 ? wkp_ns_level(pt.pid) : -1;
    if (pt.pid <= 0 || pt.level < 0) {
        log_error("worker", "prototype: cannot find its process (pid %d inside)", (int)inner);
        went_down("its process could not be found");
        return;
    }
    lp_timer_stop(&pt.start_timer);
    pt.state = PT_READY;
    pt.failed_starts = 0;
    log_info("worker", "prototype ready (pid %d)", (int)pt.pid);
    pt_on_catalog_changed();
    if (pt.hooks.ready)
        pt.hooks.ready();
}

static void on_reply(const char *msg)
{
    int a = 0, b = 0;
    char word[16] = "";
    if (sscanf(msg, "ready %d", &a) == 1 && pt.state == PT_STARTING) {
        on_ready((pid_t)a);
        return;
    }
    if (!pt.nq) {
        log_warn("worker", "prototype: unexpected reply %.80s", msg);
        return;
    }
    struct pt_req r = pt.q[0];
    memmove(pt.q, pt.q + 1, (--pt.nq) * sizeof(*pt.q));
    if (r.is_fork) {
        pid_t pid = -1;
        /* Sandboxed, the session's PID 1 is the prototype's child; in host isolation ours
         * (CLONE_PARENT, see sandbox_session.c). */
        if (sscanf(msg, "forked %d %d", &a, &b) == 2 && a == r.slot)
            pid = wkp_child_by_nspid(pt.sandboxed ? pt.pid : getpid(), pt.level, (pid_t)b);
        else
            log_warn("worker", "prototype: %.200s", msg);
        if (pt.hooks.forked)
            pt.hooks.forked(r.slot, r.gen, pid);
    } else if (sscanf(msg, "sdk %d %d %15s", &a, &b, word) == 3 && strcmp(word, "ok") == 0) {
        pt.sdk_loaded = a;
        pt.shapes_loaded = b;
        log_debug("worker", "prototype has SDK version %d (shapes %d)", a, b);
    } else {
        log_warn("worker",
                 "prototype: the SDK did not load (%.80s): new workers load it "
                 "themselves",
                 msg);
        pt.sdk_loaded = pt.shapes_loaded = 0;
    }
}

static void on_chan_read(void *ud, const char *data, size_t len)
{
    (void)ud;
    char msg[256];
    size_t n = len < sizeof(msg) - 1 ? len : sizeof(msg) - 1;
    memcpy(msg, data, n);
    msg[n] = '\0';
    on_reply(msg);
}

static void on_chan_close(void *ud)
{
    (void)ud;
    pt.io = NULL;
    pt.fd = -1;
    went_down("its control channel closed");
}

static const struct lp_io_ops chan_ops = {.on_read = on_chan_read, .on_close = on_chan_close};

static void start_timed_out(void *ud)
{
    (void)ud;
    if (pt.state == PT_STARTING)
        went_down("it did not become ready in time");
}

/* Sends one request; the channel is replaced when that fails. 0 / -1. */
static int send_msg(const struct pw_msg *m, const int *fds, int nfds, int slot, uint64_t gen)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } u;
    struct iovec iov = {(void *)m, sizeof(*m)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    memset(&u, 0, sizeof(u));
    if (nfds) {
        mh.msg_control = u.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
    }
    if (pt.fd < 0 || sendmsg(pt.fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(*m)) {
        log_warn("worker", "prototype: request not sent (%s): replacing it", strerror(errno));
        if (pt.state != PT_DOWN)
            went_down("a request could not be sent");
        return -1;
    }
    if (pt.nq == pt.capq) {
        pt.capq = pt.capq ? pt.capq * 2 : 16;
        pt.q = xrealloc(pt.q, pt.capq * sizeof(*pt.q));
    }
    pt.q[pt.nq++] = (struct pt_req){slot, gen, m->type == PW_FORK};
    return 0;
}

/* ---- public -------------------------------------------------------------------------------------
 */

void pt_init(int sandboxed, long memory_mb, long start_timeout_ms, const struct pt_hooks *h)
{
    pt.sandboxed = sandboxed;
    pt.memory_mb = memory_mb;
    pt.start_timeout_ms = start_timeout_ms;
    pt.hooks = *h;
    pt.out_lines.max_line = pt.err_lines.max_line = LIM_CAPTURED_LINE_MAX;
}

/* Whether we may move a process back from SCHED_IDLE: CAP_SYS_NICE, or an RLIMIT_NICE that
 * allows our own nice value (sched(7)). */
static int can_raise_priority(void)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
    struct rlimit rl;
    int own = getpriority(PRIO_PROCESS, 0);
    if (syscall(SYS_capget, &h, d) == 0 && (d[0].effective & (1U << CAP_SYS_NICE)))
        return 1;
    return getrlimit(RLIMIT_NICE, &rl) == 0 &&
           (rl.rlim_cur == RLIM_INFINITY || (long)rl.rlim_cur >= 20 - own);
}

static void start(int background)
{
    if (pt.state != PT_DOWN || pt.failure || pt.shutting_down)
        return;
    int sp[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
        log_error("worker", "prototype: socketpair: %s", strerror(errno));
        return;
    }
    char mem_e[64], iso_e[64];
    snprintf(mem_e, sizeof(mem_e), "CODEMCP_WORKER_MEMORY_MB=%ld", pt.memory_mb);
    snprintf(iso_e, sizeof(iso_e), "CODEMCP_ISOLATION=%s", pt.sandboxed ? "sandbox" : "host");
    char *extra[] = {"CODEMCP_WORKER_ROLE=prototype", "CODEMCP_WORKER_ID=0", mem_e, iso_e, NULL};
    char **env = wkp_env(extra);
    int fds[3];
    char err[512];
    pid_t pid = wkp_spawn(env, sp[1], fds, err, sizeof(err));
    wkp_env_free(env);
    close(sp[1]);
    if (pid < 0) {
        close(sp[0]);
        log_error("worker", "cannot start the prototype %s: %s", wkp_bin(), err);
        went_down(err);
        return;
    }
    /* Set from here, once it exec'd (lp_spawn returns then): set in the child before exec, it
     * kept us blocked in lp_spawn until the starved child got to exec (measured: initialize
     * 1.4x on 2 busy cores). Its sandbox and interpreter start after this, in the background. */
    if (background && sched_setscheduler(pid, SCHED_IDLE, &(struct sched_param){0}) < 0)
        background = 0;
    pt.spawned = pid;
    pt.pid = 0;
    pt.state = PT_STARTING;
    pt.background = background;
    pt.fd = sp[0];
    if (pt.nsb == pt.capsb) {
        pt.capsb = pt.capsb ? pt.capsb * 2 : 4;
        pt.sandboxes = xrealloc(pt.sandboxes, pt.capsb * sizeof(*pt.sandboxes));
    }
    pt.sandboxes[pt.nsb++] = pid;
    lp_on_child_exit(pid, on_exit_cb, NULL);
    pt.out_io = lp_io_watch(fds[1], 1, &out_ops, NULL);
    pt.err_io = lp_io_watch(fds[2], 1, &err_ops, NULL);
    pt.io = lp_io_watch(sp[0], 1, &chan_ops, NULL);
    lp_timer_start(&pt.start_timer, pt.start_timeout_ms, start_timed_out, NULL);
    log_debug("worker", "prototype started (pid %d%s)", (int)pid,
              background ? ", in the background" : "");
}

void pt_start(void)
{
    start(0);
}

void pt_start_background(void)
{
    if (can_raise_priority())
        start(1);
}

int pt_foreground(void)
{
    if (!pt.background)
        return 0;
    /* What lp_spawn started and everything below it: the sandbox's processes and the
     * prototype's threads. */
    if (wkp_foreground_tree(pt.spawned) < 0) {
        log_warn("worker", "prototype: cannot raise its priority back (%s)", strerror(errno));
        went_down("its priority stayed low");
        return -1;
    }
    pt.background = 0;
    log_debug("worker", "prototype in the foreground");
    return 0;
}

int pt_ready(void)
{
    return pt.state == PT_READY;
}

const char *pt_failure(void)
{
    return pt.failure;
}

int pt_fork(int slot, int ids, uint64_t gen, const char *token, const int fds[4])
{
    /* A session inherits the prototype's priority: never a lowered one. */
    if (pt.state != PT_READY || strlen(token) >= PW_TOKEN_MAX || pt_foreground() < 0)
        return -1;
    struct pw_msg m;
    memset(&m, 0, sizeof(m));
    m.type = PW_FORK;
    m.slot = slot;
    m.ids = ids;
    snprintf(m.token, sizeof(m.token), "%s", token);
    int rc = send_msg(&m, fds, 4, slot, gen);
    explicit_bzero(&m, sizeof(m));
    return rc;
}

int pt_versions(int *sdk, int *shapes)
{
    for (size_t i = 0; i < pt.nq; i++)
        if (!pt.q[i].is_fork)
            return 0; /* a reload is on its way */
    *sdk = pt.sdk_loaded;
    *shapes = pt.shapes_loaded;
    return 1;
}

/* One JSON-RPC request line appended to b. */
static void add_request(struct buf *b, const char *method, json_t *params)
{
    json_t *id = json_integer(1);
    json_t *msg = rpc_request(id, method, params);
    char *s = json_dumps(msg, JSON_COMPACT);
    json_decref(id);
    json_decref(msg);
    if (s) {
        buf_append(b, s, strlen(s));
        buf_append(b, "\n", 1);
        free(s);
    }
}

void pt_on_catalog_changed(void)
{
    int v = cat_source_version(), sv = shapes_version_for(NULL);
    if (pt.state != PT_READY || v == 0 || (v == pt.sdk_sent && sv == pt.shapes_sent))
        return;
    struct buf b = {0};
    if (shapes_enabled())
        add_request(&b, "set_shapes", json_pack("{s:o}", "shapes", shapes_view(NULL)));
    add_request(&b, "load_sdk",
                json_pack("{s:s, s:i, s:O*}", "source", cat_source(), "version", v, "catalog",
                          cat_discovery()));
    int memfd = memfd_create("codemcp-sdk", MFD_CLOEXEC);
    size_t off = 0;
    while (memfd >= 0 && off < b.len) {
        ssize_t n = write(memfd, b.data + off, b.len - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    size_t want = b.len;
    buf_free(&b);
    if (memfd < 0 || off < want) {
        log_warn("worker", "prototype: cannot pass the SDK (%s): new workers load it themselves",
                 strerror(errno));
        if (memfd >= 0)
            close(memfd);
        return;
    }
    struct pw_msg m;
    memset(&m, 0, sizeof(m));
    m.type = PW_SDK;
    m.version = v;
    m.shapes = shapes_enabled() ? sv : 0;
    if (send_msg(&m, &memfd, 1, -1, 0) == 0) {
        pt.sdk_sent = v;
        pt.shapes_sent = sv;
    }
    close(memfd);
}

void pt_shutdown(void (*gone)(void))
{
    pt.shutting_down = 1;
    pt.gone = gone;
    if (!pt.nsb) {
        pt.gone = NULL;
        gone();
        return;
    }
    lp_timer_stop(&pt.start_timer);
    lp_timer_stop(&pt.restart_timer);
    for (size_t i = 0; i < pt.nsb; i++)
        wkp_kill(pt.sandboxes[i], pt.sandboxed ? WKP_EXEC_SANDBOX : WKP_EXEC_HOST);
}
