/* worker_spawn — starting a worker slot's process and ending it, for workers.c.
 *
 * Two paths: forked by the prototype (default, prototype.h: the gateway hands over the
 * descriptors and learns the session's pid; a status pipe tells when and how it ended) or
 * exec'd (CODEMCP_PROTOTYPE=off, or a control listener: a fresh codemcp-worker through
 * worker_proc.h, reaped by loop.c). Either way the slot goes STARTING until its worker
 * authenticates on the control channel (workers.c). In docker isolation the container is
 * made by worker_docker.h, reached only from here. Must not: decide which session gets a
 * slot (worker_sessions.c) or touch runs. Loop thread only. */
#include "workers_int.h"
#include "control.h"
#include "log.h"
#include "metrics.h"
#include "prototype.h"
#include "util.h"
#include "worker_docker.h"
#include "worker_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* SIGKILL for everything a worker is made of (its sandbox, or its process group). */
static void cancel_fork(void *ud)
{
    struct worker *w = ud;
    if (w->forked && !w->pid && w->state != WK_DOWN && !w->st_io)
        on_worker_exit(w, 0, SIGKILL);
}

/* A queued start ended before it began (shutdown): no process to kill. */
static void cancel_queued(void *ud)
{
    struct worker *w = ud;
    if (w->state == WK_STARTING && !w->pid && !w->st_io)
        on_worker_exit(w, 0, SIGKILL);
}

int docker_init(const struct settings *s)
{
    return wkd_init(s);
}

int has_process(const struct worker *w)
{
    return w->pid > 0 || (dockered && wkd_alive(w));
}

void hard_kill(struct worker *w)
{
    if (w->start_queued) {
        w->start_queued = 0;
        lp_timer_start(&w->start_timer, 0, cancel_queued, w);
        return;
    }
    if (dockered) {
        wkd_kill(w);
        return;
    }
    if (w->forked && w->awaiting_pt) { /* nothing was forked yet: end the start (soon) */
        w->awaiting_pt = 0;
        lp_timer_start(&w->start_timer, 0, cancel_fork, w);
        return;
    }
    if (w->forked)
        wkp_kill(w->pid, sandboxed ? WKP_FORK_SANDBOX : WKP_FORK_HOST);
    else
        wkp_kill(w->pid, sandboxed ? WKP_EXEC_SANDBOX : WKP_EXEC_HOST);
}

/* ---- process output → log ------------------------------------------------------------ */

static void on_out_line(void *ud, const char *line, size_t len)
{
    struct worker *w = ud;
    if (line && log_get_level() >= LOG_INFO && log_budget_take(&w->log_budget, "worker"))
        log_info("worker", "[worker %d] %.*s", w->slot, (int)(len > 2000 ? 2000 : len), line);
}

static void on_out(void *ud, const char *data, size_t len)
{
    struct worker *w = ud;
    rpc_lines_feed(&w->out_lines, data, len, on_out_line, w);
}

static void on_err(void *ud, const char *data, size_t len)
{
    struct worker *w = ud;
    rpc_lines_feed(&w->err_lines, data, len, on_out_line, w);
}

static void on_out_close(void *ud)
{
    ((struct worker *)ud)->out_io = NULL;
}

static void on_err_close(void *ud)
{
    ((struct worker *)ud)->err_io = NULL;
}

static const struct lp_io_ops out_ops = {.on_read = on_out, .on_close = on_out_close};
static const struct lp_io_ops err_ops = {.on_read = on_err, .on_close = on_err_close};

static void start_timed_out(void *ud)
{
    struct worker *w = ud;
    if (w->state != WK_STARTING)
        return;
    log_warn("worker", "worker %d did not connect in time: killing it", w->slot);
    w->kill_reason = xstrdup("the Python worker did not start in time");
    hard_kill(w);
}

/* The exec path (CODEMCP_PROTOTYPE=off): a fresh codemcp-worker per start. */
static int spawn_exec(struct worker *w, int ctl_fd)
{
    char url_e[400], tok_e[128], id_e[64], mem_e[64], iso_e[64];
    snprintf(url_e, sizeof(url_e), "CODEMCP_CONTROL_URL=%s", ctl_fd >= 0 ? "fd:3" : ctl_url());
    snprintf(tok_e, sizeof(tok_e), "CODEMCP_WORKER_TOKEN=%s", w->token);
    snprintf(id_e, sizeof(id_e), "CODEMCP_WORKER_ID=%d", w->slot);
    snprintf(mem_e, sizeof(mem_e), "CODEMCP_WORKER_MEMORY_MB=%ld", memory_mb);
    snprintf(iso_e, sizeof(iso_e), "CODEMCP_ISOLATION=%s", sandboxed ? "sandbox" : "host");
    char *extra[] = {url_e, tok_e, id_e, mem_e, iso_e, NULL};
    char **env = wkp_env(extra);
    /* The worker applies CODEMCP_WORKER_MEMORY_MB (RLIMIT_AS) itself, before Python starts:
     * a sanitizer build must skip it (ASan reserves terabytes of address space). With
     * CODEMCP_ISOLATION=sandbox it builds its sandbox first (src/sandbox/sandbox.h). */
    int fds[3];
    char err[512];
    w->forked = 0;
    w->pid = wkp_spawn(env, ctl_fd >= 0 ? ctl_fd : 0, fds, err, sizeof(err));
    explicit_bzero(tok_e, sizeof(tok_e));
    wkp_env_free(env);
    if (w->pid < 0) {
        log_error("worker", "cannot start %s: %s", wkp_bin(), err);
        free(w->start_failure);
        w->start_failure = xstrdup(err);
        w->pid = 0;
        return -1;
    }
    lp_on_child_exit(w->pid, on_worker_exit, w);
    w->out_io = lp_io_watch(fds[1], 1, &out_ops, w);
    w->err_io = lp_io_watch(fds[2], 1, &err_ops, w);
    return 0;
}

/* ---- the prototype path: workers forked from it (prototype.h) ----------------------------- */

/* The session's PID 1 writes the worker's wait status here when it ends; end of file without
 * one means the whole session sandbox was killed. Either way the worker is gone. */
static void on_status(void *ud, const char *data, size_t len)
{
    struct worker *w = ud;
    for (size_t i = 0; i < len && w->st_len < (int)sizeof(w->st_raw); i++)
        w->st_raw[w->st_len++] = (unsigned char)data[i];
}

static void on_status_close(void *ud)
{
    struct worker *w = ud;
    int status = SIGKILL; /* as waitpid reports a SIGKILLed process */
    if (w->st_len == (int)sizeof(int))
        memcpy(&status, w->st_raw, sizeof(int));
    w->st_io = NULL;
    w->fork_gen++; /* a late "forked" answer for this attempt is stale */
    on_worker_exit(w, w->pid, status);
}

static const struct lp_io_ops status_ops = {.on_read = on_status, .on_close = on_status_close};

/* Sends the fork request for a STARTING slot whose prototype is ready. */
static void send_fork(struct worker *w)
{
    int sp[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, st[2] = {-1, -1};
    w->awaiting_pt = 0;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
        pipe2(err, O_CLOEXEC) < 0 || pipe2(st, O_CLOEXEC) < 0) {
        log_error("worker", "worker %d: cannot make its descriptors: %s", w->slot, strerror(errno));
        goto fail;
    }
    int fds[4] = {sp[1], out[1], err[1], st[1]};
    w->fork_gen++;
    if (pt_fork(w->slot, w->ids, w->fork_gen, w->token, fds) < 0)
        goto fail;
    close(sp[1]);
    close(out[1]);
    close(err[1]);
    close(st[1]);
    if (ctl_adopt(sp[0]) < 0) { /* it closed sp[0] */
        w->kill_reason = xstrdup("the Python worker's control channel could not be set up");
    }
    w->st_len = 0;
    w->out_io = lp_io_watch(out[0], 1, &out_ops, w);
    w->err_io = lp_io_watch(err[0], 1, &err_ops, w);
    w->st_io = lp_io_watch(st[0], 1, &status_ops, w);
    if (!pt_versions(&w->sdk_sent, &w->shapes_sent))
        w->sdk_sent = w->shapes_sent = 0;
    return;
fail:;
    int *all[] = {sp, out, err, st};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            if (all[i][j] >= 0)
                close(all[i][j]);
    /* Counted as a failed start; the restart path retries. */
    w->st_io = NULL;
    w->st_len = 0;
    on_worker_exit(w, 0, 1 << 8);
}

static void on_pt_ready(void)
{
    for (int s = 0; s < n_workers; s++)
        if (workers[s].awaiting_pt && workers[s].state == WK_STARTING)
            send_fork(&workers[s]);
}

static void on_pt_failed(void)
{
    for (int s = 0; s < n_workers; s++) {
        struct worker *w = &workers[s];
        if (!w->awaiting_pt || w->state != WK_STARTING)
            continue;
        w->awaiting_pt = 0;
        lp_timer_stop(&w->start_timer);
        w->state = WK_DOWN;
        free(w->start_failure);
        w->start_failure = xstrdup(pt_failure());
    }
    became_idle();
}

static void on_pt_forked(int slot, uint64_t gen, pid_t pid)
{
    struct worker *w = slot >= 0 && slot < n_workers ? &workers[slot] : NULL;
    if (!w || !w->forked || gen != w->fork_gen || w->state == WK_DOWN || w->pid)
        return;
    if (pid <= 0) {
        /* Not forked (its status pipe closes: a failed start), or forked but not found: a
         * worker we could not kill must not run anything. Its token is replaced (it cannot
         * authenticate), or its connection closed (it exits). */
        log_warn("worker", "worker %d: the prototype could not fork it, or it was not found", slot);
        if (!w->kill_reason)
            w->kill_reason = xstrdup("the Python worker could not be started from the prototype");
        if (w->conn_id)
            ctl_close(w->conn_id);
        else if (random_hex(w->token, 32) < 0)
            explicit_bzero(w->token, sizeof(w->token));
        return;
    }
    w->pid = pid;
    log_debug("worker", "worker %d forked (pid %d)", w->slot, (int)pid);
    if (w->kill_reason) /* a kill asked for before the pid was known */
        hard_kill(w);
    else if (w->state == WK_READY)
        became_idle(); /* a run may have waited for the pid (know_worker) */
}

static int spawn_forked(struct worker *w)
{
    w->forked = 1;
    w->pid = 0;
    if (pt_failure()) {
        free(w->start_failure);
        w->start_failure = xstrdup(pt_failure());
        return -1;
    }
    if (pt_ready()) {
        w->state = WK_STARTING; /* before send_fork: a failure there ends the start */
        send_fork(w);
        return 0;
    }
    w->awaiting_pt = 1;
    pt_start();
    return 0;
}

/* Starts under way at once (CODEMCP_WORKER_START_CONCURRENCY): every start needs CPU, so N
 * starts at once on P cores each take about N / P times one start; past
 * CODEMCP_WORKER_START_TIMEOUT_MS all of them are killed together and none ever finishes. The
 * rest wait in FIFO order (their timeout not yet running). Default per CPU: 4 exec'd starts
 * (a whole interpreter's start-up, ~0.2 s of CPU each), 16 forked ones (~10x cheaper, and
 * mostly waiting on round trips, so fewer places would only slow a burst down). */
static long start_places(void)
{
    static long places;
    if (!places) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        places = start_concurrency >= 0 ? start_concurrency
                                        : (use_prototype ? 16 : 4) * (cpus > 0 ? cpus : 1);
        if (places < 1)
            places = 1;
    }
    return places;
}

static int starts_under_way(void)
{
    int n = 0;
    for (int i = 0; i < n_workers; i++)
        n += workers[i].state == WK_STARTING && !workers[i].start_queued;
    return n;
}

static int launch(struct worker *w);

int spawn(struct worker *w)
{
    static uint64_t queue_seq;
    if (random_hex(w->token, 32) < 0) {
        log_error("worker", "cannot get random bytes for the worker token");
        return -1;
    }
    w->sdk_sent = 0;
    w->shapes_sent = 0;
    w->runs_done = 0;
    w->start_ms = now_ms();
    next_ids(w);
    if (starts_under_way() >= start_places()) {
        w->state = WK_STARTING;
        w->start_queued = ++queue_seq;
        log_debug("worker", "worker %d: start queued (%ld under way)", w->slot, start_places());
        return 0;
    }
    return launch(w);
}

void start_queued_now(void)
{
    static int active; /* a launch that fails at once passes through became_idle again */
    if (active || shutting_down)
        return;
    active = 1;
    int failed = 0;
    while (starts_under_way() < start_places()) {
        struct worker *next = NULL;
        for (int i = 0; i < n_workers; i++)
            if (workers[i].start_queued && (!next || workers[i].start_queued < next->start_queued))
                next = &workers[i];
        if (!next)
            break;
        next->start_queued = 0;
        if (launch(next) < 0) {
            next->state = WK_DOWN;
            failed = 1;
        }
    }
    active = 0;
    if (failed) /* runs waiting for those slots learn it (start_failure, or a retry) */
        became_idle();
}

void arm_start_timer(struct worker *w)
{
    lp_timer_start(&w->start_timer, start_timeout_ms, start_timed_out, w);
}

static int launch(struct worker *w)
{
    mx_worker(MX_WORKER_SPAWN);
    w->launch_ms = now_ms();
    arm_start_timer(w);
    if (dockered || use_prototype) { /* a container (worker_docker.h), or a fork */
        w->state = WK_STARTING;
        if ((dockered ? wkd_spawn(w) : spawn_forked(w)) < 0) {
            lp_timer_stop(&w->start_timer);
            w->state = WK_DOWN;
            return -1;
        }
        return 0;
    }
    /* The control channel: one end of a socketpair, inherited as fd 3 (nothing listens),
     * unless a listener was asked for (CODEMCP_CONTROL_TCP/UNIX). */
    int sp[2] = {-1, -1};
    if (!ctl_url()[0] && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
        log_error("worker", "socketpair: %s", strerror(errno));
        lp_timer_stop(&w->start_timer);
        return -1;
    }
    int rc = spawn_exec(w, sp[1]);
    if (sp[1] >= 0)
        close(sp[1]);
    if (sp[0] >= 0 && rc < 0) {
        close(sp[0]);
    } else if (sp[0] >= 0 && ctl_adopt(sp[0]) < 0) { /* it closed sp[0] */
        w->kill_reason = xstrdup("the Python worker's control channel could not be set up");
        hard_kill(w);
    }
    if (rc < 0) {
        lp_timer_stop(&w->start_timer);
        return -1;
    }
    w->state = WK_STARTING;
    log_debug("worker", "worker %d started (pid %d)", w->slot, (int)w->pid);
    return 0;
}

const struct pt_hooks pt_hooks_of_pool = {on_pt_ready, on_pt_failed, on_pt_forked};
