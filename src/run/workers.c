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
#include "codemcp_limits.h"
#include "control.h"
#include "jsonscan.h"
#include "jsonrpc.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "namespaces.h"
#include "sandbox.h"
#include "settings.h"
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
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct wk_hooks hooks;
struct worker *workers;
int n_workers;
int64_t next_rpc_id = 1;
long memory_mb;
int sandboxed;     /* CODEMCP_ISOLATION=sandbox */
int dockered;      /* CODEMCP_ISOLATION=docker */
int use_prototype; /* CODEMCP_PROTOTYPE (default on): fork workers from a prototype */
/* CODEMCP_PROTOTYPE_EARLY (default on): the prototype starts with the gateway in the
 * background (SCHED_IDLE: only CPU nothing else wants, yielded at once to a task that wakes)
 * and is moved to SCHED_OTHER once the upstreams settled (or before its first fork). Off (or
 * when we could not move it back), it starts with the first worker, once they settled. With a
 * core free it brings the first result 0.79-0.80x sooner and leaves initialize and tools/list
 * as they were; with both cores busy it changes nothing either way
 * (bench/results/coldstart-debpy.md). */
static int prototype_early;
long session_idle_ms;
unsigned long id_count;
unsigned long id_start;
static unsigned long id_base; /* this gateway's block of the range (worker_idblock.c) */
long min_hold_ms;
long start_timeout_ms;
long start_concurrency;
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

/* Each slot owns the places slot, slot + n_workers, slot + 2 n_workers, ... of the id range
 * and takes the next of them at every start: two live processes never share a uid outside
 * (they differ modulo n_workers), and a slot's next session does not get the uid of the one
 * before, whose kernel objects (a socket in flight, a pipe a process still holds while it is
 * reaped) may outlive it, until the slot has cycled through all of its places. A range too
 * small for that keeps one place per slot. */
int next_ids(struct worker *w)
{
    unsigned long turns = id_count / (unsigned long)n_workers;
    if (turns > 1)
        w->id_turn = (int)(((unsigned long)w->id_turn + 1) % turns);
    w->ids = (int)id_base + w->slot + n_workers * w->id_turn;
    return w->ids;
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
    guard_stop(w);
    char why[512];
    int killed_why = w->kill_reason != NULL; /* a start we ended says why it failed */
    if (w->kill_reason)
        snprintf(why, sizeof(why), "%s", w->kill_reason);
    else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU)
        snprintf(why, sizeof(why),
                 "the run used up its CPU time (its timeout_ms, or CODEMCP_RUN_CPU_MS): the "
                 "Python worker was ended by the kernel (SIGXCPU) and restarted, and this "
                 "session's variables were lost");
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
    int was_started = w->ended_idle || ((w->state == WK_READY || w->state == WK_BUSY) &&
                                        (w->run_id[0] || w->runs_done));
    if (!killed_why && !w->ended_idle && !shutting_down)
        mx_worker(MX_WORKER_CRASH); /* nothing here asked it to end */
    w->ended_idle = 0;
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
        w->start_failure = w->failed_starts >= 3 ? xstrdup(killed_why ? why : msg) : NULL;
    }
    /* Restart right away after a run-induced crash; back off when it cannot start. An
     * unowned slot comes back only as the one warm spare. */
    if (!w->start_failure && (w->owned || !other_spare(w)))
        lp_timer_start(&w->restart_timer, w->failed_starts ? 200L * w->failed_starts : 0,
                       restart_later, w);
    became_idle();
}

int wk_choose_isolation(const struct settings *s)
{
    const char *iso = s->isolation;
    if (iso && strcmp(iso, "docker") == 0) {
        sandboxed = 0;
        dockered = 1;
        return docker_init(s) < 0 ? -2 : 0;
    }
    if (iso && strcmp(iso, "host") == 0) {
        log_warn("worker", "CODEMCP_ISOLATION=host: agent code runs WITHOUT a sandbox, with this "
                           "user's files, network and processes in reach");
        sandboxed = 0;
        return 0;
    }
    if (iso && *iso && strcmp(iso, "sandbox") != 0) {
        log_error("worker",
                  "CODEMCP_ISOLATION=%s is not known: use sandbox (default), docker or host", iso);
        return -2;
    }
    if (s->control_tcp || s->control_unix) {
        log_error("worker", "CODEMCP_CONTROL_TCP / CODEMCP_CONTROL_UNIX make workers connect to a "
                            "listener, which a sandboxed worker cannot reach: unset them, or run "
                            "with CODEMCP_ISOLATION=host");
        return -2;
    }
    struct sbx_opts o;
    char err[1024];
    sbx_opts_from_settings(s, &o);
    sbx_check_paths(&o);
    if (sbx_probe(&o, err, sizeof(err)) < 0) {
        log_error("worker", "%s", err);
        return -2;
    }
    id_count = sbx_session_ids(&o, &id_start);
    if (!sbx_uid_mode(&o, err, sizeof(err)))
        log_warn("worker", "sandbox ids: %s", err);
    else if (!s->prototype)
        log_warn("worker", "sandbox ids: every worker runs as the gateway's own user outside "
                           "(CODEMCP_PROTOTYPE=off: only sessions forked from the prototype get "
                           "a uid of their own from the subordinate id range)");
    else
        log_info("worker", "sandbox ids: %s", err);
    sandboxed = 1;
    return 0;
}

int wk_init(const struct settings *s, int max_workers)
{
    if (!wkp_find_bin(s->worker_bin)) {
        log_error("worker",
                  "cannot find codemcp-worker (set CODEMCP_WORKER_BIN or reinstall codemcp)");
        return -1;
    }
    memory_mb = s->worker_memory_mb;
    session_idle_ms = s->session_idle_ms;
    min_hold_ms = s->worker_min_hold_ms;
    start_timeout_ms = s->worker_start_timeout_ms;
    start_concurrency = s->worker_start_concurrency;
    /* Workers come from the prototype unless a listener was asked for (remote workers
     * connect to it: nothing to fork) or CODEMCP_PROTOTYPE=off. */
    use_prototype = s->prototype && !ctl_url()[0] && !dockered;
    prototype_early = s->prototype_early;
    pt_init(sandboxed, memory_mb, start_timeout_ms, &pt_hooks_of_pool);
    /* Processes of a sandbox whose parent died first (a prototype's sessions, a waiter's
     * PID 1) are reparented here and reaped by the loop, not left to PID 1 as zombies. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    n_workers = max_workers < 1 ? 1 : max_workers;
    if (id_count)
        id_count = idblock_claim(id_start, id_count, (unsigned long)n_workers, &id_base);
    workers = xcalloc((size_t)n_workers, sizeof(*workers));
    for (int i = 0; i < n_workers; i++) {
        workers[i].slot = i;
        workers[i].out_lines.max_line = LIM_CAPTURED_LINE_MAX;
        workers[i].err_lines.max_line = LIM_CAPTURED_LINE_MAX;
        workers[i].log_budget.per_second = s->log_worker_lines;
    }
    return 0;
}

void wk_prestart(void)
{
    if (use_prototype && prototype_early && n_workers && !shutting_down)
        pt_start_background();
}

void wk_prewarm(void)
{
    if (use_prototype)
        pt_foreground();
    if (n_workers && workers[0].state == WK_DOWN && !shutting_down)
        spawn(&workers[0]);
}

/* ---- runs ------------------------------------------------------------------------------------ */

const char *wk_start_failure(int slot)
{
    if (!n_workers)
        return "codemcp-worker was not found, so Python cannot run (set CODEMCP_WORKER_BIN "
               "or reinstall codemcp)";
    return slot >= 0 && slot < n_workers ? workers[slot].start_failure : NULL;
}

long wk_alive(void)
{
    long n = 0;
    for (int i = 0; i < n_workers; i++)
        n += workers[i].pid > 0;
    return n;
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

int64_t wk_cpu_ms(int slot)
{
    if (slot < 0 || slot >= n_workers || dockered || workers[slot].pid <= 0)
        return -1;
    return wkp_tree_cpu_ms(workers[slot].pid);
}

static struct worker *running(const char *run_id)
{
    for (int i = 0; i < n_workers; i++)
        if (workers[i].run_id[0] && strcmp(workers[i].run_id, run_id) == 0)
            return &workers[i];
    return NULL;
}

static void send_shapes(struct worker *w);

int wk_start_run(int slot, const char *run_id, const char *params, size_t len, int64_t cpu_ms)
{
    struct worker *w = slot >= 0 && slot < n_workers ? &workers[slot] : NULL;
    if (!w || w->state != WK_READY || strlen(run_id) >= sizeof(w->run_id))
        return -1;
    if (guard_before_run(w, cpu_ms) < 0)
        return -1;
    send_shapes(w); /* its owner's, once it has one */
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
    if (!w || !has_process(w))
        return;
    free(w->kill_reason);
    w->kill_reason = xstrdup(why);
    log_warn("worker", "killing worker %d (pid %d): %s", w->slot, (int)w->pid, why);
    hard_kill(w);
}

/* ---- control-channel events ---------------------------------------------------------------- */

/* Whose results w's shapes come from: its owner's principal (NULL: a spare, the shared view). */
static const char *shapes_principal(const struct worker *w)
{
    return w->owned ? ns_asker(w->session, w->session) : NULL;
}

static void send_shapes(struct worker *w)
{
    const char *principal = shapes_principal(w);
    int v = shapes_version_for(principal);
    if (!w->conn_id || w->shapes_sent == v || !shapes_enabled())
        return;
    w->shapes_sent = v;
    json_t *id = json_integer(next_rpc_id++);
    ctl_send(w->conn_id,
             rpc_request(id, "set_shapes", json_pack("{s:o}", "shapes", shapes_view(principal))));
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
        guard_answered(w);
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
        if (recycle && has_process(w)) {
            log_info("worker", "worker %d: restarting it (the run left threads running)", slot);
            mx_worker(MX_WORKER_RECYCLE);
            free(w->kill_reason); /* asked for: no crash */
            w->kill_reason = xstrdup("recycled: the run left threads running");
            w->state = WK_BUSY; /* no new run until the replacement connects */
            hard_kill(w);
            return;
        }
        became_idle();
        return;
    }
    if (error && log_budget_take(&w->log_budget, "worker")) {
        json_t *m = json_object_get(error, "message");
        log_error("worker", "worker %d: %s", slot,
                  json_is_string(m) ? json_string_value(m) : "error reply");
    }
}

void wk_on_broken(int slot, uint64_t conn_id, const char *why)
{
    struct worker *w = &workers[slot];
    if (w->conn_id != conn_id || !has_process(w))
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
    guard_answered(w);
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
    if (guard_worker_died(w))
        return;
    /* The process exit (reaped via SIGCHLD) does the rest; make sure it happens. */
    if (has_process(w) && !shutting_down) {
        /* A container's end brings its own status (the OOM killer's SIGKILL), after this. */
        if (!w->kill_reason && !dockered)
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
        guard_stop(w);
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

int wk_is_starting(pid_t pid)
{
    for (int i = 0; i < n_workers; i++)
        if (workers[i].pid == pid && workers[i].state == WK_STARTING)
            return 1;
    return 0;
}
