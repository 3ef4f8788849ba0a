/* workers — see workers.h.
 *
 * A slot is one worker process position in the pool; its process may be restarted many
 * times. States: DOWN → STARTING (spawned, waiting for the connection and token) →
 * READY (connected, SDK sent) ⇄ BUSY (a run is executing). A worker that exits while
 * BUSY fails its run with the reason; a slot that fails to start three times in a row
 * reports a start failure to the runs waiting for it instead of looping forever. A slot
 * belongs to at most one session at a time (see "sessions" below). In sandbox isolation the
 * spawned process is the sandbox's waiter (sandbox.h) and kills go through hard_kill(). */
#include "workers.h"
#include "catalog.h"
#include "control.h"
#include "jsonrpc.h"
#include "log.h"
#include "loop.h"
#include "namespaces.h"
#include "sandbox.h"
#include "shapes.h"
#include "util.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

enum wk_state { WK_DOWN, WK_STARTING, WK_READY, WK_BUSY };

struct worker {
    int slot;
    enum wk_state state;
    pid_t pid;
    char token[65];
    uint64_t conn_id;
    int sdk_sent;    /* catalog source version last sent */
    int shapes_sent; /* shapes version last sent */
    char run_id[32]; /* the run executing (BUSY), "" when none: the one record of where a run is */
    int64_t run_rpc_id;
    char *kill_reason; /* set when we kill it on purpose */
    int failed_starts;
    int runs_done; /* runs completed by the current process */
    char *start_failure;
    struct lp_timer start_timer;
    struct lp_timer restart_timer;
    struct lp_io *out_io, *err_io;
    struct rpc_lines out_lines, err_lines;
    int owned;        /* a session owns this slot (its one interpreter) */
    uint64_t session; /* the owner, when owned */
    int64_t last_used_ms;
    struct lp_timer idle_timer;
    char *notice; /* for the owner's next answer (variables discarded) */
};

/* A session whose worker was ended while it lives on, and why (told on its next run). */
struct pin {
    uint64_t session_id;
    const char *why; /* static text */
};

static struct wk_hooks hooks;
static struct worker *workers;
static int n_workers;
static struct pin *pins;
static size_t n_pins, cap_pins;
static char worker_bin[PATH_MAX + 128];
static int64_t next_rpc_id = 1;
static long memory_mb;
static int sandboxed; /* CODEMCP_ISOLATION=sandbox */
static long session_idle_ms;
static void (*shutdown_done)(void);
static int shutting_down;

static int spawn(struct worker *w);

/* SIGKILL for a worker and its process group (lp_spawn makes it a group leader); a sandboxed
 * one is ended through its PID 1 (sandbox.h). */
static void hard_kill(pid_t pid)
{
    if (sandboxed) {
        sbx_kill(pid);
    } else if (pid > 0) { /* its whole process group: what the agent's code started dies too */
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
    }
}

/* ---- locating the binary ------------------------------------------------------------ */

static int try_bin(const char *path)
{
    if (access(path, X_OK) == 0) {
        snprintf(worker_bin, sizeof(worker_bin), "%s", path);
        return 1;
    }
    return 0;
}

static int find_worker_bin(void)
{
    const char *env = getenv("CODEMCP_WORKER_BIN");
    if (env && *env)
        return try_bin(env);
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        char *dir = dirname(self);
        char p[PATH_MAX + 64];
        snprintf(p, sizeof(p), "%s/worker/codemcp-worker", dir); /* build tree */
        if (try_bin(p))
            return 1;
        snprintf(p, sizeof(p), "%s/codemcp-worker", dir);
        if (try_bin(p))
            return 1;
        snprintf(p, sizeof(p), "%s/../libexec/codemcp/codemcp-worker", dir);
        if (try_bin(p))
            return 1;
    }
    return try_bin(CODEMCP_LIBEXECDIR "/codemcp-worker");
}

/* ---- process output → log ------------------------------------------------------------ */

static void on_out_line(void *ud, const char *line, size_t len)
{
    struct worker *w = ud;
    if (line)
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

static const struct lp_io_ops out_ops = {on_out, on_out_close};
static const struct lp_io_ops err_ops = {on_err, on_err_close};

/* ---- lifecycle -------------------------------------------------------------------------- */

void wk_set_hooks(const struct wk_hooks *h)
{
    hooks = *h;
}

static void became_idle(void)
{
    if (hooks.idle)
        hooks.idle();
}

/* Whether an unfinished run was given this slot (runs.c's answer, through the hook). */
static int slot_in_use(int slot)
{
    return hooks.slot_in_use && hooks.slot_in_use(slot);
}

/* Forgets the slot's run first (the hook may start the next one), then reports its end. */
static void end_current_run(struct worker *w, json_t *envelope, const char *failure)
{
    char run_id[sizeof(w->run_id)];
    memcpy(run_id, w->run_id, sizeof(run_id));
    w->run_id[0] = '\0';
    if (run_id[0] && hooks.run_ended)
        hooks.run_ended(run_id, envelope, failure);
}

/* True when another unowned slot is up (or coming up) for the next new session. */
static int other_spare(const struct worker *w)
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

static void on_worker_exit(void *ud, pid_t pid, int status)
{
    struct worker *w = ud;
    if (pid != w->pid)
        return;
    lp_timer_stop(&w->start_timer);
    char why[512];
    if (w->kill_reason)
        snprintf(why, sizeof(why), "%s", w->kill_reason);
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
    free(w->kill_reason);
    w->kill_reason = NULL;
    if (w->conn_id)
        ctl_close(w->conn_id);
    w->conn_id = 0;
    end_current_run(w, NULL, why);
    if (shutting_down) {
        for (int i = 0; i < n_workers; i++)
            if (workers[i].state != WK_DOWN)
                return;
        if (shutdown_done) {
            void (*done)(void) = shutdown_done;
            shutdown_done = NULL;
            done();
        }
        return;
    }
    if (!was_started) {
        w->failed_starts++;
        free(w->start_failure);
        char msg[PATH_MAX + 512];
        snprintf(msg, sizeof(msg),
                 "the Python worker (%s) failed to start (exit %s %d); see codemcp's log "
                 "(CODEMCP_LOG=info)",
                 worker_bin, WIFSIGNALED(status) ? "signal" : "status",
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

static void start_timed_out(void *ud)
{
    struct worker *w = ud;
    if (w->state != WK_STARTING)
        return;
    log_warn("worker", "worker %d did not connect in time: killing it", w->slot);
    w->kill_reason = xstrdup("the Python worker did not start in time");
    hard_kill(w->pid);
}

static char *env_entry(const char *name)
{
    const char *v = getenv(name);
    if (!v)
        return NULL;
    size_t n = strlen(name) + strlen(v) + 2;
    char *e = xmalloc(n);
    snprintf(e, n, "%s=%s", name, v);
    return e;
}

static int spawn(struct worker *w)
{
    if (random_hex(w->token, 32) < 0) {
        log_error("worker", "cannot get random bytes for the worker token");
        return -1;
    }
    /* A scrubbed environment: nothing of the gateway's secrets or upstream credentials. */
    static const char *const pass[] = {"PATH",
                                       "HOME",
                                       "LANG",
                                       "LC_ALL",
                                       "LC_CTYPE",
                                       "TZ",
                                       "TMPDIR",
                                       "CODEMCP_LOG",
                                       "CODEMCP_PYTHONPATH_DEV",
                                       "ASAN_OPTIONS",
                                       "UBSAN_OPTIONS",
                                       "LSAN_OPTIONS",
                                       "CODEMCP_SANDBOX_NET",
                                       "CODEMCP_SANDBOX_SUBPROCESS",
                                       "CODEMCP_SANDBOX_RO",
                                       "CODEMCP_SANDBOX_RW",
                                       "CODEMCP_SANDBOX_TMP_MB",
                                       "CODEMCP_SANDBOX_NPROC",
                                       "CODEMCP_SANDBOX_NOFILE",
                                       NULL};
    char *env[40];
    int n = 0;
    for (int i = 0; pass[i]; i++) {
        char *e = env_entry(pass[i]);
        if (e)
            env[n++] = e;
    }
    /* The control channel: one end of a socketpair, inherited as fd 3 (nothing listens),
     * unless a listener was asked for (CODEMCP_CONTROL_TCP/UNIX). */
    int sp[2] = {-1, -1};
    if (!ctl_url()[0] && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
        log_error("worker", "socketpair: %s", strerror(errno));
        return -1;
    }
    char url_e[400], tok_e[128], id_e[64], mem_e[64], iso_e[64];
    snprintf(url_e, sizeof(url_e), "CODEMCP_CONTROL_URL=%s", sp[1] >= 0 ? "fd:3" : ctl_url());
    snprintf(tok_e, sizeof(tok_e), "CODEMCP_WORKER_TOKEN=%s", w->token);
    snprintf(id_e, sizeof(id_e), "CODEMCP_WORKER_ID=%d", w->slot);
    snprintf(mem_e, sizeof(mem_e), "CODEMCP_WORKER_MEMORY_MB=%ld", memory_mb);
    snprintf(iso_e, sizeof(iso_e), "CODEMCP_ISOLATION=%s", sandboxed ? "sandbox" : "host");
    int own = n;
    env[n++] = url_e;
    env[n++] = tok_e;
    env[n++] = id_e;
    env[n++] = mem_e;
    env[n++] = iso_e;
    env[n] = NULL;
    char *argv[] = {worker_bin, NULL};
    struct lp_spawn_opts o = {.argv = argv,
                              .env = env,
                              .clear_env = 1,
                              .want_stdout = 1,
                              .want_stderr = 1,
                              .keep_fd = sp[1] >= 0 ? sp[1] : 0};
    /* The worker applies CODEMCP_WORKER_MEMORY_MB (RLIMIT_AS) itself, before Python starts:
     * a sanitizer build must skip it (ASan reserves terabytes of address space). With
     * CODEMCP_ISOLATION=sandbox it builds its sandbox first (src/sandbox.h). */
    int fds[3];
    char err[512];
    w->pid = lp_spawn(&o, fds, err, sizeof(err));
    explicit_bzero(tok_e, sizeof(tok_e));
    for (int i = 0; i < own; i++)
        free(env[i]);
    if (sp[1] >= 0)
        close(sp[1]);
    if (sp[0] >= 0 && (w->pid < 0 || ctl_adopt(sp[0]) < 0)) {
        close(sp[0]);
        if (w->pid > 0) {
            w->kill_reason = xstrdup("the Python worker's control channel could not be set up");
            hard_kill(w->pid);
        }
    }
    if (w->pid < 0) {
        log_error("worker", "cannot start %s: %s", worker_bin, err);
        free(w->start_failure);
        w->start_failure = xstrdup(err);
        w->pid = 0;
        return -1;
    }
    w->state = WK_STARTING;
    w->sdk_sent = 0;
    w->shapes_sent = 0;
    w->runs_done = 0;
    lp_on_child_exit(w->pid, on_worker_exit, w);
    w->out_io = lp_io_watch(fds[1], 1, &out_ops, w);
    w->err_io = lp_io_watch(fds[2], 1, &err_ops, w);
    lp_timer_start(&w->start_timer, env_long("CODEMCP_WORKER_START_TIMEOUT_MS", 15000),
                   start_timed_out, w);
    log_debug("worker", "worker %d started (pid %d)", w->slot, (int)w->pid);
    return 0;
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
    if (!find_worker_bin()) {
        log_error("worker",
                  "cannot find codemcp-worker (set CODEMCP_WORKER_BIN or reinstall codemcp)");
        return -1;
    }
    memory_mb = env_long("CODEMCP_WORKER_MEMORY_MB", 512);
    session_idle_ms = env_long("CODEMCP_SESSION_IDLE_MS", 900000);
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

/* ---- sessions ----------------------------------------------------------------------------- */

/* One interpreter per session: a session owns its slot (and so its worker process) until it
 * closes, idles past CODEMCP_SESSION_IDLE_MS, or is evicted (least recently used, idle) to
 * make room when every slot is taken. Its next run then gets a fresh worker and the answer
 * carries a `notice` saying its variables were discarded. A slot is never handed to another
 * session while a run still refers to it (run_uses_slot), so no program can land in another
 * session's interpreter. One unowned slot is kept warm for the next new session. */

static struct worker *slot_owner_of(uint64_t session_id)
{
    for (int s = 0; s < n_workers; s++)
        if (workers[s].owned && workers[s].session == session_id)
            return &workers[s];
    return NULL;
}

static void remember_discarded(uint64_t session_id, const char *why)
{
    for (size_t i = 0; i < n_pins; i++)
        if (pins[i].session_id == session_id)
            return;
    if (n_pins == cap_pins) {
        cap_pins = cap_pins ? cap_pins * 2 : 16;
        pins = xrealloc(pins, cap_pins * sizeof(*pins));
    }
    pins[n_pins++] = (struct pin){session_id, why};
}

/* Ends the worker of a session that keeps existing: its variables go. */
/* Ends the slot's process so that nothing of its session reaches the next owner; no run is
 * sent to it meanwhile (BUSY without a run until it is reaped and replaced). */
static void end_process(struct worker *w, const char *why)
{
    lp_timer_stop(&w->idle_timer);
    if (!w->pid)
        return;
    free(w->kill_reason);
    w->kill_reason = xstrdup(why);
    if (w->state == WK_READY)
        w->state = WK_BUSY;
    hard_kill(w->pid);
}

/* Ends the worker of a session that keeps existing: its variables go. */
static void discard_session(struct worker *w, const char *why)
{
    remember_discarded(w->session, why);
    ns_home_lost(w->session); /* its namespaces' handles now say so */
    w->owned = 0;
    end_process(w, why);
}

static void on_idle(void *ud)
{
    struct worker *w = ud;
    if (!w->owned || w->state == WK_BUSY || slot_in_use(w->slot))
        return;
    log_info("worker", "worker %d: session idle for %ld ms: ending its worker", w->slot,
             session_idle_ms);
    discard_session(w, "this session was idle longer than CODEMCP_SESSION_IDLE_MS, so its "
                       "Python worker was ended and its variables were discarded; this run "
                       "started from a fresh interpreter");
}

static void touch(struct worker *w)
{
    w->last_used_ms = now_ms();
    if (session_idle_ms > 0 && n_workers > 0)
        lp_timer_start(&w->idle_timer, session_idle_ms, on_idle, w);
}

/* Keeps one unowned slot warm (started) for the next new session. */
static void keep_spare(void)
{
    int down = -1;
    for (int s = 0; s < n_workers; s++)
        if (workers[s].start_failure)
            return; /* workers cannot start: no spare to keep */
    for (int s = 0; s < n_workers; s++) {
        struct worker *w = &workers[s];
        if (w->owned || slot_in_use(s))
            continue;
        if (w->state != WK_DOWN)
            return;
        if (down < 0 && !w->start_failure)
            down = s;
    }
    if (down >= 0 && !shutting_down)
        spawn(&workers[down]);
}

int wk_slot_for_session(uint64_t session_id)
{
    if (!n_workers)
        return 0;
    struct worker *w = slot_owner_of(session_id);
    if (w)
        return w->slot;
    /* A free slot: warm first, then starting, then down. */
    static const enum wk_state pref[] = {WK_READY, WK_STARTING, WK_DOWN};
    for (size_t k = 0; k < 3 && !w; k++)
        for (int s = 0; s < n_workers && !w; s++)
            if (!workers[s].owned && workers[s].state == pref[k] && !slot_in_use(s))
                w = &workers[s];
    if (!w) { /* evict an idle session: namespaces.c's rule (same principal first) picks it */
        uint64_t *homes = xcalloc((size_t)n_workers, sizeof(*homes));
        int *slots = xcalloc((size_t)n_workers, sizeof(*slots)), k = 0;
        for (int s = 0; s < n_workers; s++)
            if (workers[s].owned && workers[s].state != WK_BUSY && !slot_in_use(s)) {
                homes[k] = workers[s].session;
                slots[k++] = s;
            }
        int v = ns_pick_home_victim(session_id, homes, (size_t)k);
        w = v < 0 ? NULL : &workers[slots[v]];
        free(homes);
        free(slots);
        if (!w)
            return -1; /* every slot runs or holds another principal's recent session */
        log_info("worker", "worker %d: evicting an idle session for a new one", w->slot);
        discard_session(w, "more sessions were active than CODEMCP_WORKERS allows, so this "
                           "idle session's Python worker was ended and its variables were "
                           "discarded; this run started from a fresh interpreter");
    }
    w->owned = 1;
    w->session = session_id;
    free(w->notice);
    w->notice = NULL;
    for (size_t i = 0; i < n_pins; i++)
        if (pins[i].session_id == session_id) {
            w->notice = xstrdup(pins[i].why);
            pins[i] = pins[--n_pins];
            break;
        }
    touch(w);
    keep_spare();
    return w->slot;
}

void wk_session_closed(uint64_t session_id)
{
    for (size_t i = 0; i < n_pins; i++)
        if (pins[i].session_id == session_id) {
            pins[i] = pins[--n_pins];
            break;
        }
    struct worker *w = slot_owner_of(session_id);
    if (!w)
        return;
    w->owned = 0;
    /* Its namespace must not reach the next session: the process goes, a fresh one (the
     * spare) comes back. */
    end_process(w, "the session was closed");
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

int wk_start_run(int slot, const char *run_id, json_t *params)
{
    struct worker *w = slot >= 0 && slot < n_workers ? &workers[slot] : NULL;
    if (!w || w->state != WK_READY || strlen(run_id) >= sizeof(w->run_id)) {
        json_decref(params);
        return -1;
    }
    w->run_rpc_id = next_rpc_id++;
    json_t *id = json_integer(w->run_rpc_id);
    json_t *msg = rpc_request(id, "run", params);
    json_decref(id);
    if (ctl_send(w->conn_id, msg) < 0)
        return -1;
    snprintf(w->run_id, sizeof(w->run_id), "%s", run_id);
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
    hard_kill(w->pid);
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
    log_info("worker", "worker %d connected (pid %d)", match, (int)w->pid);
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
            hard_kill(w->pid);
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

void wk_on_disconnect(int slot, uint64_t conn_id)
{
    struct worker *w = &workers[slot];
    if (w->conn_id != conn_id)
        return;
    w->conn_id = 0;
    /* The process exit (reaped via SIGCHLD) does the rest; make sure it happens. */
    if (w->pid && !shutting_down) {
        if (!w->kill_reason)
            w->kill_reason = xstrdup("the Python worker lost its control connection; it was "
                                     "restarted and this session's variables were lost");
        hard_kill(w->pid);
    }
}

void wk_on_catalog_changed(void)
{
    for (int i = 0; i < n_workers; i++)
        if (workers[i].state == WK_READY || workers[i].state == WK_BUSY)
            send_sdk(&workers[i]);
}

void wk_shutdown_all(void (*done)(void))
{
    shutting_down = 1;
    shutdown_done = done;
    int any = 0;
    for (int i = 0; i < n_workers; i++) {
        struct worker *w = &workers[i];
        lp_timer_stop(&w->start_timer);
        lp_timer_stop(&w->restart_timer);
        lp_timer_stop(&w->idle_timer);
        if (w->pid) {
            any = 1;
            if (!w->kill_reason)
                w->kill_reason = xstrdup("codemcp is shutting down");
            hard_kill(w->pid);
        }
    }
    if (!any && shutdown_done) {
        shutdown_done = NULL;
        done();
    }
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
