/* workers — see workers.h. Split in three (workers_int.h): this file (slots' lifecycle, runs,
 * control-channel events, shutdown), worker_spawn.c (starting and killing a slot's process,
 * forked by the prototype or exec'd), worker_sessions.c (which session owns which slot).
 *
 * A slot is one worker process position in the pool; its process may be restarted many
 * times. States: DOWN → STARTING (spawned, waiting for the connection and token) →
 * READY (connected, SDK sent) ⇄ BUSY (a run is executing). A worker that exits while
 * BUSY fails its run with the reason; a slot that fails to start three times in a row
 * reports a start failure to the runs waiting for it instead of looping forever. A slot
 * belongs to at most one session at a time (see "sessions" below). In sandbox isolation the
 * spawned process is the sandbox's waiter (sandbox.h) and kills go through hard_kill(). */
#include "workers.h"
#include "workers_int.h"
#include "catalog.h"
#include "control.h"
#include "jsonscan.h"
#include "jsonrpc.h"
#include "log.h"
#include "loop.h"
#include "sandbox.h"
#include "shapes.h"
#include "util.h"
#include "prototype.h"
#include "worker_proc.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct wk_hooks hooks;
struct worker *workers;
int n_workers;
int64_t next_rpc_id = 1;
long memory_mb;
int sandboxed;     /* CODEMCP_ISOLATION=sandbox */
int use_prototype; /* CODEMCP_PROTOTYPE (default on): fork workers from a prototype */
long session_idle_ms;
static void (*shutdown_done)(void);
int shutting_down;

/* ---- lifecycle -------------------------------------------------------------------------- */

void wk_set_hooks(const struct wk_hooks *h)
{
    hooks = *h;
}

void became_idle(void)
{
    start_queued_now(); /* a start that ended frees its place */
    if (hooks.idle)
        hooks.idle();
}

/* Whether an unfinished run was given this slot (runs.c's answer, through the hook). */
int wk__slot_in_use(int slot)
{
    return hooks.slot_in_use && hooks.slot_in_use(slot);
}

/* Forgets the slot's run first (the hook may start the next one), then reports its end. */
void end_current_run(struct worker *w, json_t *envelope, const char *failure)
{
    char run_id[sizeof(w->run_id)];
    memcpy(run_id, w->run_id, sizeof(run_id));
    w->run_id[0] = '\0';
    if (run_id[0] && hooks.run_ended)
        hooks.run_ended(run_id, envelope, failure);
}

/* True when another unowned slot is up (or coming up) for the next new session. */
int other_spare(const struct worker *w)
{
    for (int s = 0; s < n_workers; s++)
        if (&workers[s] != w && !workers[s].owned && workers[s].state != WK_DOWN)
            return 1;
    return 0;
}

static void restart_later(void *ud)
{
    struct worker *w = ud;
    if (w->state == WK_DOWN && !shutting_down)
        spawn(w);
}

/* Shutdown ends when every slot is down and the prototype's sandboxes are reaped. Sessions
 * forked in host isolation are our children (CLONE_PARENT): reaped here too, or they would
 * outlive us as zombies. */
static pid_t *orphans;
static int n_orphans, pt_gone;

static void shutdown_check(void)
{
    for (int i = 0; i < n_workers; i++)
        if (workers[i].state != WK_DOWN)
            return;
    if (!pt_gone || !shutdown_done)
        return;
    int64_t until = now_ms() + 200;
    for (int i = 0; i < n_orphans; i++)
        while (waitpid(orphans[i], NULL, WNOHANG) == 0 && now_ms() < until)
            usleep(1000);
    void (*done)(void) = shutdown_done;
    shutdown_done = NULL;
    done();
}

static void on_pt_gone(void)
{
    pt_gone = 1;
    shutdown_check();
}

void on_worker_exit(void *ud, pid_t pid, int status)
{
    struct worker *w = ud;
    if (pid != w->pid)
        return;
    lp_timer_stop(&w->start_timer);
    lp_timer_stop(&w->cpu_timer);
    lp_timer_stop(&w->leftover_timer);
    char why[512];
    if (w->kill_reason)
        snprintf(why, sizeof(why), "%s", w->kill_reason);
    else if (WIFSIGNALED(status) &&
             (WTERMSIG(status) == SIGXCPU || (WTERMSIG(status) == SIGKILL && sandboxed)))
        snprintf(why, sizeof(why),
                 "the Python worker was ended by the kernel (%s) while running this code: %s; "
                 "it was restarted and this session's variables were lost",
                 WTERMSIG(status) == SIGXCPU ? "SIGXCPU" : "SIGKILL",
                 WTERMSIG(status) == SIGXCPU
                     ? "the run used up its CPU time (its timeout_ms, or CODEMCP_RUN_CPU_MS)"
                     : "its CPU time ran out (its timeout_ms, or CODEMCP_RUN_CPU_MS), or the "
                       "system was out of memory");
    else if (WIFSIGNALED(status))
        snprintf(why, sizeof(why),
                 "the Python worker crashed (signal %d) while running this code; it was "
                 "restarted and this session's variables were lost",
                 WTERMSIG(status));
    else
        snprintf(why, sizeof(why),
                 "the Python worker exited (status %d) while running this code; it was "
                 "restarted and this session's variables were lost",
                 WEXITSTATUS(status));
    /* A process that dies while idle before finishing any run failed to start, even if
     * it connected: counting it stops a crash loop. */
    int was_started =
        (w->state == WK_READY || w->state == WK_BUSY) && (w->run_id[0] || w->runs_done);
    log_info("worker", "worker %d (pid %d) exited: %s", w->slot, (int)pid,
             WIFSIGNALED(status) ? "signal" : "status");
    w->state = WK_DOWN;
    w->pid = 0;
    wkp_watch_close(&w->watch);
    free(w->kill_reason);
    w->kill_reason = NULL;
    if (w->conn_id)
        ctl_close(w->conn_id);
    w->conn_id = 0;
    end_current_run(w, NULL, why);
    if (shutting_down) {
        shutdown_check();
        return;
    }
    if (!was_started) {
        w->failed_starts++;
        free(w->start_failure);
        char msg[PATH_MAX + 512];
        snprintf(msg, sizeof(msg),
                 "the Python worker (%s) failed to start (exit %s %d); see codemcp's log "
                 "(CODEMCP_LOG=info)",
                 wkp_bin(), WIFSIGNALED(status) ? "signal" : "status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        w->start_failure = w->failed_starts >= 3 ? xstrdup(msg) : NULL;
    }
    /* Restart right away after a run-induced crash; back off when it cannot start. An
     * unowned slot comes back only as the one warm spare. */
    if (!w->start_failure && (w->owned || !other_spare(w)))
        lp_timer_start(&w->restart_timer, w->failed_starts ? 200L * w->failed_starts : 0,
                       restart_later, w);
    became_idle();
}

/* CODEMCP_ISOLATION: sandbox (default; probed now, fail closed) or host (warned). 0 / -2. */
static int choose_isolation(void)
{
    const char *iso = getenv("CODEMCP_ISOLATION");
    if (iso && strcmp(iso, "host") == 0) {
        log_warn("worker", "CODEMCP_ISOLATION=host: agent code runs WITHOUT a sandbox, with this "
                           "user's files, network and processes in reach");
        sandboxed = 0;
        return 0;
    }
    if (iso && *iso && strcmp(iso, "sandbox") != 0) {
        log_error("worker", "CODEMCP_ISOLATION=%s is not known: use sandbox (default) or host",
                  iso);
        return -2;
    }
    if (ctl_url()[0]) {
        log_error("worker", "CODEMCP_CONTROL_TCP / CODEMCP_CONTROL_UNIX make workers connect to a "
                            "listener, which a sandboxed worker cannot reach: unset them, or run "
                            "with CODEMCP_ISOLATION=host");
        return -2;
    }
    struct sbx_opts o;
    char err[1024];
    sbx_opts_from_env(&o);
    sbx_check_paths(&o);
    if (sbx_probe(&o, err, sizeof(err)) < 0) {
        log_error("worker", "%s", err);
        return -2;
    }
    sandboxed = 1;
    return 0;
}

int wk_init(int max_workers)
{
    if (choose_isolation() < 0)
        return -2;
    if (!wkp_find_bin()) {
        log_error("worker",
                  "cannot find codemcp-worker (set CODEMCP_WORKER_BIN or reinstall codemcp)");
        return -1;
    }
    memory_mb = env_long("CODEMCP_WORKER_MEMORY_MB", 512);
    session_idle_ms = env_long("CODEMCP_SESSION_IDLE_MS", 900000);
    /* Workers come from the prototype unless a listener was asked for (remote workers
     * connect to it: nothing to fork) or CODEMCP_PROTOTYPE=off. */
    use_prototype = env_bool("CODEMCP_PROTOTYPE", 1) && !ctl_url()[0];
    pt_init(sandboxed, memory_mb, &pt_hooks_of_pool);
    /* Processes of a sandbox whose parent died first (a prototype's sessions, a waiter's
     * PID 1) are reparented here and reaped by the loop, not left to PID 1 as zombies. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    n_workers = max_workers < 1 ? 1 : max_workers;
    workers = xcalloc((size_t)n_workers, sizeof(*workers));
    for (int i = 0; i < n_workers; i++) {
        workers[i].slot = i;
        workers[i].out_lines.max_line = 64 * 1024;
        workers[i].err_lines.max_line = 64 * 1024;
    }
    return 0;
}

void wk_prewarm(void)
{
    if (n_workers && workers[0].state == WK_DOWN && !shutting_down)
        spawn(&workers[0]);
}

int wk_available(void)
{
    return n_workers > 0;
}

/* ---- runs ------------------------------------------------------------------------------------ */

const char *wk_start_failure(int slot)
{
    if (!n_workers)
        return "codemcp-worker was not found, so Python cannot run (set CODEMCP_WORKER_BIN "
               "or reinstall codemcp)";
    if (slot < 0)
        return "every Python worker is running another session's program or holds another "
               "principal's recently used variables (CODEMCP_WORKERS caps them): try again in "
               "a moment";
    return workers[slot].start_failure;
}

int wk_ready(int slot)
{
    if (slot < 0 || slot >= n_workers)
        return 0;
    struct worker *w = &workers[slot];
    if (w->state == WK_READY)
        return 1;
    if (w->state == WK_DOWN && !w->start_failure && !shutting_down)
        spawn(w);
    return 0;
}

const char *wk_running(int slot)
{
    return slot >= 0 && slot < n_workers && workers[slot].run_id[0] ? workers[slot].run_id : NULL;
}

static struct worker *running(const char *run_id)
{
    for (int i = 0; i < n_workers; i++)
        if (workers[i].run_id[0] && strcmp(workers[i].run_id, run_id) == 0)
            return &workers[i];
    return NULL;
}

/* ---- what a run leaves behind, seen from outside ------------------------------------------ */

/* The gateway's own check that no code of one run executes during another: the worker's
 * threads and children, read from /proc (agent code owns the worker, so its own end-of-run
 * check, pystray.h, is a courtesy). Sandbox only: host isolation has no such promise. 1 and
 * a description in what when something is left. */
static int leftovers(struct worker *w, int identity, char *what, size_t n)
{
    if (!sandboxed || w->watch.pid <= 0)
        return 0;
    int threads = wkp_extra_threads(&w->watch, identity);
    if (threads == -1)
        return 0; /* gone: its exit ends the run and the session's worker anyway */
    int kids = wkp_has_children(&w->watch);
    if (threads == WKP_LOST)
        snprintf(what, n, "a thread of its own in place of one of the worker's%s",
                 kids ? ", and child processes" : "");
    else if (threads > 0)
        snprintf(what, n, "%d thread(s)%s", threads, kids ? " and child processes" : "");
    else if (kids)
        snprintf(what, n, "child processes");
    return threads != 0 || kids;
}

/* Before the first run: which process is the worker and how many threads it has with no
 * agent code run yet. 0, or -1 when it cannot be known yet (the run waits). */
static int know_worker(struct worker *w)
{
    if (!sandboxed || w->watch.pid > 0)
        return 0;
    if (!w->pid || w->runs_done)
        return w->runs_done ? 0 : -1; /* the prototype's answer with its pid is on its way */
    if (wkp_watch_open(&w->watch, w->pid, w->forked) == 0)
        return 0;
    log_warn("worker", "worker %d: its process cannot be found in its sandbox: ended", w->slot);
    w->state = WK_BUSY;
    hard_kill(w);
    return -1;
}

/* Threads a run leaves get a moment to end (a cancelled run's thread waiting for a call the
 * gateway has just cancelled ends on its own); the next run waits meanwhile, so nothing of one
 * run ever executes during another, and past it the worker is ended. */
#define WK_LEFTOVER_GRACE_MS 500

static void end_for_leftovers(struct worker *w, const char *what)
{
    char msg[512];
    snprintf(msg, sizeof(msg),
             "the session's previous run left %s running after its answer: codemcp ended this "
             "session's Python worker, so that no code of one run executes during another; the "
             "session's variables were lost and this run started in a fresh interpreter",
             what);
    log_warn("worker", "worker %d: a run left %s running: ending the worker", w->slot, what);
    free(w->notice);
    w->notice = xstrdup(msg);
    w->state = WK_BUSY; /* no run until the replacement connects */
    hard_kill(w);
}

/* 0: nothing left over, the slot may take a run; -1: not now (waiting out the grace, or the
 * worker is being ended). */
static int settle_leftovers(struct worker *w);

static void leftover_recheck(void *ud)
{
    struct worker *w = ud;
    if (w->state == WK_READY && !w->run_id[0] && settle_leftovers(w) == 0)
        became_idle();
}

static int settle_leftovers(struct worker *w)
{
    char what[96];
    if (!w->runs_done || !leftovers(w, 1, what, sizeof(what)))
        return 0;
    int64_t wait = w->answered_ms + WK_LEFTOVER_GRACE_MS - now_ms();
    if (wait > 0)
        lp_timer_start(&w->leftover_timer, wait, leftover_recheck, w);
    else
        end_for_leftovers(w, what);
    return -1;
}

/* At the answer to the slot's run (once per answer): from now on the grace runs. */
static void note_answer(struct worker *w)
{
    if (w->checked_rpc == w->run_rpc_id)
        return;
    w->checked_rpc = w->run_rpc_id;
    w->answered_ms = now_ms();
    char what[96];
    if (sandboxed && leftovers(w, 0, what, sizeof(what)))
        lp_timer_start(&w->leftover_timer, WK_LEFTOVER_GRACE_MS, leftover_recheck, w);
}

/* A run's CPU time. The kernel stops the worker at the budget: RLIMIT_CPU's soft limit, set
 * from outside before the run at what the process has used plus the budget, sends SIGXCPU
 * (fatal unless caught; agent code cannot raise the limit, seal.c). Agent code can block or
 * catch SIGXCPU, so the gateway also reads the process's CPU clock once a second while the run
 * lasts and ends the worker a second past the budget. (The hard limit would do that in the
 * kernel, but raising it again for the next run needs CAP_SYS_RESOURCE.) */
#define WK_CPU_CHECK_MS 1000

static void cpu_check(void *ud)
{
    struct worker *w = ud;
    if (w->state != WK_BUSY || !w->run_id[0] || w->watch.pid <= 0 || !w->pid)
        return;
    int64_t used = wkp_cpu_ms(&w->watch);
    if (used >= 0 && used > w->cpu_until_ms + WK_CPU_CHECK_MS) {
        free(w->kill_reason);
        w->kill_reason = xstrdup("the run used up its CPU time (its timeout_ms, or "
                                 "CODEMCP_RUN_CPU_MS): the Python worker was ended and restarted, "
                                 "and this session's variables were lost");
        log_warn("worker", "worker %d (pid %d): CPU time used up: ending it", w->slot, (int)w->pid);
        hard_kill(w);
        return;
    }
    if (used >= 0)
        lp_timer_start(&w->cpu_timer, WK_CPU_CHECK_MS, cpu_check, w);
}

static void limit_cpu(struct worker *w, int64_t cpu_ms)
{
    int64_t used = wkp_cpu_ms(&w->watch);
    if (used < 0 || cpu_ms <= 0)
        return;
    if (cpu_ms > (INT64_C(1) << 40))
        cpu_ms = INT64_C(1) << 40;
    w->cpu_until_ms = used + cpu_ms;
    /* One call in the usual case; the hard limit is never lowered here (agent code may have). */
    rlim_t soft = (rlim_t)((w->cpu_until_ms + 999) / 1000);
    struct rlimit rl = {soft, RLIM_INFINITY};
    if (prlimit(w->watch.pid, RLIMIT_CPU, &rl, NULL) < 0 &&
        prlimit(w->watch.pid, RLIMIT_CPU, NULL, &rl) == 0) {
        rl.rlim_cur = soft < rl.rlim_max ? soft : rl.rlim_max;
        if (prlimit(w->watch.pid, RLIMIT_CPU, &rl, NULL) < 0)
            log_warn("worker", "worker %d: cannot set its CPU time limit: %s", w->slot,
                     strerror(errno));
    }
    lp_timer_start(&w->cpu_timer, WK_CPU_CHECK_MS, cpu_check, w);
}

int wk_start_run(int slot, const char *run_id, const char *params, size_t len, int64_t cpu_ms)
{
    struct worker *w = slot >= 0 && slot < n_workers ? &workers[slot] : NULL;
    if (!w || w->state != WK_READY || strlen(run_id) >= sizeof(w->run_id))
        return -1;
    if (know_worker(w) < 0)
        return -1;
    if (settle_leftovers(w) < 0)
        return -1;
    if (sandboxed)
        limit_cpu(w, cpu_ms);
    w->run_rpc_id = next_rpc_id++;
    /* the bytes rpc_dump(rpc_request(id, "run", params)) gives, params spliced in */
    static const char a[] = "{\"jsonrpc\":\"2.0\",\"method\":\"run\",\"id\":";
    char head[80];
    size_t n = sizeof(a) - 1;
    memcpy(head, a, n);
    n += fmt_i64(head + n, w->run_rpc_id);
    memcpy(head + n, ",\"params\":", 10);
    struct iovec iov[3] = {{head, n + 10}, {(void *)params, len}, {"}", 1}};
    if (ctl_send_parts(w->conn_id, iov, 3) < 0)
        return -1;
    memcpy(w->run_id, run_id, strlen(run_id) + 1); /* fits: checked above (no printf per run) */
    w->state = WK_BUSY;
    lp_timer_stop(&w->idle_timer);
    return 0;
}

void wk_cancel_run(const char *run_id, const char *reason)
{
    struct worker *w = running(run_id);
    if (w && w->conn_id)
        ctl_send(w->conn_id,
                 rpc_request(NULL, "cancel",
                             json_pack("{s:s, s:s}", "run_id", run_id, "reason", reason)));
}

void wk_kill_run(const char *run_id, const char *why)
{
    struct worker *w = running(run_id);
    if (!w || !w->pid)
        return;
    free(w->kill_reason);
    w->kill_reason = xstrdup(why);
    log_warn("worker", "killing worker %d (pid %d): %s", w->slot, (int)w->pid, why);
    hard_kill(w);
}

/* ---- control-channel events ---------------------------------------------------------------- */

static void send_shapes(struct worker *w)
{
    int v = shapes_version();
    if (!w->conn_id || w->shapes_sent == v || !shapes_enabled())
        return;
    w->shapes_sent = v;
    json_t *id = json_integer(next_rpc_id++);
    ctl_send(w->conn_id, rpc_request(id, "set_shapes", json_pack("{s:O}", "shapes", shapes_all())));
    json_decref(id);
}

static void send_sdk(struct worker *w)
{
    send_shapes(w);
    int v = cat_source_version();
    if (!w->conn_id || w->sdk_sent == v)
        return;
    w->sdk_sent = v;
    json_t *id = json_integer(next_rpc_id++);
    ctl_send(w->conn_id, rpc_request(id, "load_sdk",
                                     json_pack("{s:s, s:i, s:O*}", "source", cat_source(),
                                               "version", v, "catalog", cat_discovery())));
    json_decref(id);
}

int wk_authenticate(const char *token, uint64_t conn_id)
{
    int match = -1;
    /* Compare against every starting worker: constant time per comparison, no early exit. */
    for (int i = 0; i < n_workers; i++)
        if (workers[i].state == WK_STARTING && secure_streq(token, workers[i].token))
            match = i;
    if (match < 0)
        return -1;
    struct worker *w = &workers[match];
    explicit_bzero(w->token, sizeof(w->token)); /* used once: nothing left to steal */
    lp_timer_stop(&w->start_timer);
    w->conn_id = conn_id;
    w->state = WK_READY;
    w->failed_starts = 0;
    free(w->start_failure);
    w->start_failure = NULL;
    int64_t t = now_ms();
    log_info("worker", "worker %d connected (pid %d) in %lld ms (%lld ms queued)", match,
             (int)w->pid, (long long)(t - w->start_ms), (long long)(w->launch_ms - w->start_ms));
    send_sdk(w);
    became_idle();
    return match;
}

void wk_on_message(int slot, json_t *msg)
{
    struct worker *w = &workers[slot];
    json_t *id = json_object_get(msg, "id");
    json_t *error = json_object_get(msg, "error");
    if (json_is_integer(id) && json_integer_value(id) == w->run_rpc_id && w->run_id[0]) {
        w->state = WK_READY;
        w->runs_done++;
        json_t *result = json_object_get(msg, "result");
        /* The runtime asks for a fresh process when a run leaves threads behind under
         * enforcement: they must not act under a later run's allow_mutations. */
        int recycle = json_is_true(json_object_get(result, "recycle"));
        note_answer(w);
        if (w->notice && json_is_object(result)) {
            json_object_set_new(result, "notice", json_string(w->notice));
            free(w->notice);
            w->notice = NULL;
        }
        if (w->owned)
            touch(w);
        if (error) {
            json_t *m = json_object_get(error, "message");
            end_current_run(w, NULL, json_is_string(m) ? json_string_value(m) : "worker error");
        } else {
            end_current_run(w, result, NULL);
        }
        if (recycle && w->pid) {
            log_info("worker", "worker %d: restarting it (the run left threads running)", slot);
            w->state = WK_BUSY; /* no new run until the replacement connects */
            hard_kill(w);
            return;
        }
        became_idle();
        return;
    }
    if (error) {
        json_t *m = json_object_get(error, "message");
        log_error("worker", "worker %d: %s", slot,
                  json_is_string(m) ? json_string_value(m) : "error reply");
    }
}

void wk_on_broken(int slot, uint64_t conn_id, const char *why)
{
    struct worker *w = &workers[slot];
    if (w->conn_id != conn_id || !w->pid)
        return;
    log_warn("worker", "worker %d: %s", slot, why);
    free(w->kill_reason);
    w->kill_reason = xstrdup(why); /* its run ends with it (wk_on_disconnect follows) */
}

/* The head the worker writes on its answer to the run request numbered id. */
static size_t answer_head(char out[64], int64_t id)
{
    static const char a[] = "{\"jsonrpc\":\"2.0\",\"id\":", b[] = ",\"result\":{";
    size_t n = sizeof(a) - 1;
    memcpy(out, a, n);
    n += fmt_i64(out + n, id);
    memcpy(out + n, b, sizeof(b) - 1);
    return n + sizeof(b) - 1;
}

int wk_on_frame(int slot, const char *text, size_t len)
{
    struct worker *w = &workers[slot];
    if (!w->run_id[0] || w->notice || !hooks.run_answered)
        return 0;
    char head[64];
    size_t hn = answer_head(head, w->run_rpc_id);
    if (len < hn || memcmp(text, head, hn) != 0)
        return 0; /* not the answer to this run, or not in the form the worker writes */
    note_answer(w);
    /* One pass checks the whole frame is in jf_dumps' form and records the envelope's
     * members; the head above makes jsonrpc, id and result the first three, n == 3 the only
     * ones (no error). Anything else: the tree path (wk_on_message), which decides. */
    struct js_member m[4], e[16];
    struct js_scan sc = {.m = m, .max = 4, .sub = "result", .sm = e, .smax = 16};
    if (js_canon_scan(text, len, 1, &sc) < 0 || sc.n != 3 || sc.sn < 0 ||
        js_get(e, sc.sn, "recycle"))
        return 0;
    const struct js_member *env = &m[2];
    w->state = WK_READY;
    w->runs_done++;
    if (w->owned)
        touch(w);
    char run_id[sizeof(w->run_id)];
    memcpy(run_id, w->run_id, sizeof(run_id));
    w->run_id[0] = '\0'; /* as end_current_run: forgotten before the hook runs */
    hooks.run_answered(run_id, env->val, env->vlen);
    became_idle();
    return 1;
}

void wk_on_disconnect(int slot, uint64_t conn_id)
{
    struct worker *w = &workers[slot];
    if (w->conn_id != conn_id)
        return;
    w->conn_id = 0;
    /* A worker that has died (its CPU time ran out, it crashed) closed the connection as it
     * went: its exit status, on its way, says why; a kill now could lose it. */
    if (sandboxed && w->watch.pid > 0 && !wkp_alive(&w->watch))
        return;
    /* The process exit (reaped via SIGCHLD) does the rest; make sure it happens. */
    if (w->pid && !shutting_down) {
        if (!w->kill_reason)
            w->kill_reason = xstrdup("the Python worker lost its control connection; it was "
                                     "restarted and this session's variables were lost");
        hard_kill(w);
    }
}

void wk_on_catalog_changed(void)
{
    pt_on_catalog_changed();
    for (int i = 0; i < n_workers; i++)
        if (workers[i].state == WK_READY || workers[i].state == WK_BUSY)
            send_sdk(&workers[i]);
}

void wk_shutdown_all(void (*done)(void))
{
    shutting_down = 1;
    shutdown_done = done;
    orphans = xcalloc((size_t)n_workers + 1, sizeof(*orphans));
    for (int i = 0; i < n_workers; i++) {
        struct worker *w = &workers[i];
        lp_timer_stop(&w->start_timer);
        lp_timer_stop(&w->restart_timer);
        lp_timer_stop(&w->idle_timer);
        lp_timer_stop(&w->cpu_timer);
        lp_timer_stop(&w->leftover_timer);
        if (w->forked && w->pid && !sandboxed)
            orphans[n_orphans++] = w->pid;
        if (w->pid || w->state != WK_DOWN) {
            if (!w->kill_reason)
                w->kill_reason = xstrdup("codemcp is shutting down");
            hard_kill(w);
        }
    }
    pt_shutdown(on_pt_gone);
    shutdown_check();
}

long wk_rss_kib(int slot)
{
    if (slot < 0 || slot >= n_workers || !workers[slot].pid)
        return -1;
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)workers[slot].pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long kib = -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

int wk_is_starting(pid_t pid)
{
    for (int i = 0; i < n_workers; i++)
        if (workers[i].pid == pid && workers[i].state == WK_STARTING)
            return 1;
    return 0;
}

int wk_pid(int slot)
{
    return slot >= 0 && slot < n_workers ? (int)workers[slot].pid : 0;
}
