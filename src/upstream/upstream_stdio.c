/* upstream_stdio — the stdio transport for upstream MCP servers.
 *
 * Spawns the configured command with its env and cwd (in its own process group), writes
 * newline-delimited JSON-RPC to its stdin, splits its stdout into lines for upstream.c,
 * and logs its stderr line by line prefixed with the server name. Shutdown is graceful
 * first: close stdin, then SIGTERM to the group after a grace period, then SIGKILL. The
 * transport is gone (up__transport_closed) once the child is reaped. Loop thread only. */
#include "jsonrpc.h"
#include "codemcp_limits.h"
#include "log.h"
#include "upstream.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define STDIN_GRACE_MS 500  /* after closing stdin, before SIGTERM */
#define GRACE_MS       1500 /* after SIGTERM, before SIGKILL */

struct stdio_tp {
    struct upstream *up;
    pid_t pid;
    int exited;
    int stopping;
    struct lp_io *in, *out, *err;
    struct rpc_lines out_lines, err_lines;
    struct lp_timer kill_timer;
    int kill_stage;
};

static void on_stdout_line(void *ud, char *line, size_t len)
{
    struct stdio_tp *tp = ud;
    if (!line) {
        log_warn("upstream", "%s: dropped a message larger than %zu bytes", tp->up->name,
                 LIM_UPSTREAM_MESSAGE_MAX);
        return;
    }
    up__transport_line(tp->up, line, len);
}

static void on_stdout(void *ud, const char *data, size_t len)
{
    struct stdio_tp *tp = ud;
    rpc_lines_feed_take(&tp->out_lines, data, len, on_stdout_line, tp);
}

static void on_stderr_line(void *ud, const char *line, size_t len)
{
    struct stdio_tp *tp = ud;
    if (line)
        log_info("upstream", "[%s] %.*s", tp->up->name, (int)(len > 2000 ? 2000 : len), line);
}

static void on_stderr(void *ud, const char *data, size_t len)
{
    struct stdio_tp *tp = ud;
    rpc_lines_feed(&tp->err_lines, data, len, on_stderr_line, tp);
}

static void maybe_closed(struct stdio_tp *tp)
{
    /* Gone once reaped, both output pipes drained and stdin closed: the loop calls
     * on_stdin_close later (lp_io_close is asynchronous), so tp must outlive that call. */
    if (!tp->exited || tp->out || tp->err)
        return;
    if (tp->in) {
        lp_io_close(tp->in);
        return;
    }
    up__transport_closed(tp->up);
}

static void on_stdout_close(void *ud)
{
    struct stdio_tp *tp = ud;
    tp->out = NULL;
    maybe_closed(tp);
}

static void on_stderr_close(void *ud)
{
    struct stdio_tp *tp = ud;
    tp->err = NULL;
    maybe_closed(tp);
}

static void on_stdin_close(void *ud)
{
    struct stdio_tp *tp = ud;
    tp->in = NULL;
    maybe_closed(tp);
}

static const struct lp_io_ops out_ops = {.on_read = on_stdout, .on_close = on_stdout_close};
static const struct lp_io_ops err_ops = {.on_read = on_stderr, .on_close = on_stderr_close};
static const struct lp_io_ops in_ops = {.on_close = on_stdin_close};

static void on_exit_status(void *ud, pid_t pid, int status)
{
    (void)pid;
    struct stdio_tp *tp = ud;
    tp->exited = 1;
    lp_timer_stop(&tp->kill_timer);
    if (tp->in)
        lp_io_close(tp->in);
    if (!tp->stopping) {
        char why[128];
        if (WIFEXITED(status))
            snprintf(why, sizeof(why), "the server process exited with status %d",
                     WEXITSTATUS(status));
        else if (WIFSIGNALED(status))
            snprintf(why, sizeof(why), "the server process was killed by signal %d",
                     WTERMSIG(status));
        else
            snprintf(why, sizeof(why), "the server process ended");
        up__transport_failed(tp->up, why);
    }
    maybe_closed(tp);
}

static void kill_step(void *ud)
{
    struct stdio_tp *tp = ud;
    if (tp->exited)
        return;
    int sig = tp->kill_stage++ == 0 ? SIGTERM : SIGKILL;
    log_debug("upstream", "%s: sending %s", tp->up->name, sig == SIGTERM ? "SIGTERM" : "SIGKILL");
    kill(-tp->pid, sig);
    kill(tp->pid, sig);
    if (sig == SIGTERM)
        lp_timer_start(&tp->kill_timer, GRACE_MS, kill_step, tp);
}

/* What a stdio server inherits from the gateway: the official SDKs' default list (HOME,
 * LOGNAME, PATH, SHELL, TERM, USER), locale and time zone (LANG, LC_*, TZ), TMPDIR and the
 * XDG base directories. Everything else (GITHUB_TOKEN, OPENAI_API_KEY, ...) must be
 * configured for the server in its "environment"/"env", or "inheritEnv": true. */
static int inherited(const char *entry)
{
    static const char *const names[] = {"HOME",
                                        "LOGNAME",
                                        "PATH",
                                        "SHELL",
                                        "TERM",
                                        "USER",
                                        "LANG",
                                        "LANGUAGE",
                                        "TZ",
                                        "TMPDIR",
                                        "XDG_CONFIG_HOME",
                                        "XDG_DATA_HOME",
                                        "XDG_CACHE_HOME",
                                        "XDG_STATE_HOME",
                                        "XDG_RUNTIME_DIR",
                                        "XDG_CONFIG_DIRS",
                                        "XDG_DATA_DIRS",
                                        NULL};
    size_t n = strcspn(entry, "=");
    if (!entry[n] || strncmp(entry + n + 1, "()", 2) == 0) /* bash functions: as the SDKs */
        return 0;
    if (strncmp(entry, "LC_", 3) == 0)
        return 1;
    for (int i = 0; names[i]; i++)
        if (strlen(names[i]) == n && strncmp(entry, names[i], n) == 0)
            return 1;
    return 0;
}

/* The child's whole environment for a clear_env spawn: the inherited set, then the
 * configured entries (which win). Caller frees the array only (entries are borrowed). */
static char **minimal_env(char **configured)
{
    extern char **environ;
    size_t n = 0, k = 0;
    for (char **e = environ; *e; e++)
        n++;
    for (char **e = configured; e && *e; e++)
        n++;
    char **out = xcalloc(n + 1, sizeof(*out));
    for (char **e = environ; *e; e++)
        if (inherited(*e))
            out[k++] = *e;
    for (char **e = configured; e && *e; e++)
        out[k++] = *e; /* putenv in the child: later entries replace earlier ones */
    return out;
}

static int stdio_start(struct upstream *up)
{
    struct cfg_server *s = up->cfg;
    if (!s->argv || !s->argv[0]) {
        up__set_error(up, "no command configured");
        return -1;
    }
    struct stdio_tp *tp = xcalloc(1, sizeof(*tp));
    tp->up = up;
    tp->out_lines.max_line = LIM_UPSTREAM_MESSAGE_MAX;
    tp->err_lines.max_line = LIM_CAPTURED_LINE_MAX;
    char **env = s->inherit_env ? NULL : minimal_env(s->env);
    struct lp_spawn_opts o = {
        .argv = s->argv,
        .env = env ? env : s->env,
        .clear_env = !s->inherit_env,
        .cwd = s->cwd,
        .want_stdin = 1,
        .want_stdout = 1,
        .want_stderr = 1,
    };
    int fds[3];
    char err[512];
    tp->pid = lp_spawn(&o, fds, err, sizeof(err));
    free(env);
    if (tp->pid < 0) {
        up__set_error(up, "%s%s", err,
                      errno == ENOENT ? " (check \"command\" in the config and PATH)" : "");
        free(tp);
        return -1;
    }
    up->tp = tp;
    lp_on_child_exit(tp->pid, on_exit_status, tp);
    tp->in = lp_io_watch(fds[0], 0, &in_ops, tp);
    tp->out = lp_io_watch(fds[1], 1, &out_ops, tp);
    tp->err = lp_io_watch(fds[2], 1, &err_ops, tp);
    log_info("upstream", "%s: started pid %d (%s)", up->name, (int)tp->pid, s->argv[0]);
    up__transport_open(up);
    return 0;
}

static int stdio_send(struct upstream *up, const char *text, size_t len)
{
    struct stdio_tp *tp = up->tp;
    if (!tp || !tp->in || tp->exited)
        return -1;
    log_trace("upstream", "%s <- %.*s", up->name, (int)(len > 500 ? 500 : len), text);
    if (lp_io_write_line(tp->in, text, len) < 0)
        return -1;
    return 0;
}

static void stdio_shutdown(struct upstream *up)
{
    struct stdio_tp *tp = up->tp;
    if (!tp || tp->stopping)
        return;
    tp->stopping = 1;
    if (tp->exited)
        return;
    /* MCP stdio shutdown: close stdin, then SIGTERM, then SIGKILL. */
    if (tp->in)
        lp_io_close(tp->in);
    if (up__shutdown_deadline_ms > 0) { /* signalled: SIGTERM now, SIGKILL at the deadline */
        tp->kill_stage = 1;
        kill(-tp->pid, SIGTERM);
        lp_timer_start(&tp->kill_timer, up__shutdown_deadline_ms, kill_step, tp);
        return;
    }
    lp_timer_start(&tp->kill_timer, STDIN_GRACE_MS, kill_step, tp);
}

static void stdio_free(struct upstream *up)
{
    struct stdio_tp *tp = up->tp;
    if (!tp)
        return;
    lp_timer_stop(&tp->kill_timer);
    if (!tp->exited) { /* freed at teardown (a forced stop): end it now, unreaped */
        lp_forget_child(tp->pid);
        kill(-tp->pid, SIGKILL);
        kill(tp->pid, SIGKILL);
    }
    /* Pipes still open call back into tp when the loop's context closes them: detach. */
    lp_io_detach(tp->in);
    lp_io_detach(tp->out);
    lp_io_detach(tp->err);
    rpc_lines_free(&tp->out_lines);
    rpc_lines_free(&tp->err_lines);
    free(tp);
    up->tp = NULL;
}

const struct up_transport_ops up_stdio_ops = {
    .name = "stdio",
    .start = stdio_start,
    .send = stdio_send,
    .shutdown = stdio_shutdown,
    .free = stdio_free,
};
