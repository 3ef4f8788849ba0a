/* floor-gateway — the relay "gateway" of the topology floor (bench/floor.mjs).
 *
 * Why it exists: codemcp's execute_python crosses client -> gateway -> worker -> gateway ->
 * upstream and back for every SDK call. This program keeps that process topology and drops
 * everything else (no Python, no WebSocket, no SDK, no policy), so its timings are a lower
 * bound for any implementation of the design on the machine that runs it.
 *
 *   [FLOOR_PIN_CPU=n] floor-gateway WORKER UPSTREAM [ARGS...]
 *
 * With FLOOR_PIN_CPU the gateway and the worker are pinned to CPU n (the upstream is spawned
 * first and keeps every CPU): the placement variant of the floor, since a hop between two
 * processes on one CPU costs a fraction of a hop across CPUs (see floor-hop).
 * With FLOOR_SETSID=1 the worker calls setsid() before it runs, as a codemcp session's
 * processes do: the floor of a design whose sessions are kernel sessions of their own (where
 * scheduler autogroups are on, that also puts the worker in a task group of its own).
 *
 * - Client: newline-delimited JSON-RPC on stdin/stdout. Answers initialize, ping and
 *   tools/list (one tool, `run {workload}`); ignores notifications; a tools/call of `run` is
 *   handed to the worker (one at a time) and answered with its total as text and as
 *   structuredContent.result.
 * - Upstream: UPSTREAM ARGS spawned on pipes; MCP initialize handshake (blocking, before the
 *   loop); every worker `call <wid> <a> <b>` becomes a tools/call get-sum with our own id,
 *   and the reply line goes back to the worker verbatim, prefixed by the worker's id.
 * - Worker: WORKER spawned with a SOCK_STREAM socketpair end on fd 3 (protocol in worker.c),
 *   every message one WebSocket text frame as on codemcp's control channel (lineio.h).
 *
 * One thread, poll() over the three input descriptors, every line out in one write(2),
 * jansson only where JSON must be read (client requests, upstream replies: the id). Writes
 * block: lines are small and pipes hold 64 KiB, so they never do in practice. */
#include "lineio.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define PENDING_MAX 256 /* upstream calls in flight; the worker has at most 50 */

struct gw {
    int up_in, up_out, wk;
    pid_t up_pid, wk_pid;
    struct lines from_client, from_up, from_wk;
    struct wsin wk_raw; /* the worker link is WebSocket-framed, as codemcp's */
    json_t *run_id;     /* id of the client's tools/call in progress, or NULL */
    long next_up_id;    /* ids of our upstream requests */
    struct {
        long up_id; /* 0 when free */
        int wid;
    } pending[PENDING_MAX];
    char scratch[65536];
};

/* fork + exec with in/out on fds 0/1 (-1: /dev/null) and keep, if >= 0, on fd 3. */
static pid_t spawn(char **argv, int in, int out, int keep, int new_session)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    if (new_session && setsid() < 0)
        _exit(127);
    if (in < 0 || out < 0) {
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        in = in < 0 ? null : in;
        out = out < 0 ? null : out;
    }
    if ((in >= 0 && dup2(in, 0) < 0) || (out >= 0 && dup2(out, 1) < 0) ||
        (keep >= 0 && dup2(keep, 3) < 0))
        _exit(127);
    if (keep == 3)
        fcntl(3, F_SETFD, 0);
    signal(SIGPIPE, SIG_DFL);
    execvp(argv[0], argv);
    fprintf(stderr, "floor-gateway: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

static int send_json(int fd, json_t *msg)
{
    char *s = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (!s)
        return -1;
    size_t n = strlen(s);
    s[n] = '\n'; /* json_dumps's NUL becomes the newline: one write per line */
    int rc = write_full(fd, s, n + 1);
    free(s);
    return rc;
}

static int reply_client(json_t *id, json_t *result)
{
    return send_json(1, json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

static int error_client(json_t *id, int code, const char *message)
{
    return send_json(1, json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id, "error",
                                  "code", code, "message", message));
}

/* ---- upstream ------------------------------------------------------------------------ */

static int upstream_handshake(struct gw *g)
{
    static const char init[] =
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
        "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
        "\"clientInfo\":{\"name\":\"floor-gateway\",\"version\":\"0\"}}}\n";
    static const char initialized[] =
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
    if (write_full(g->up_in, init, sizeof(init) - 1) < 0)
        return -1;
    for (;;) {
        size_t n;
        char *line;
        while ((line = lines_next(&g->from_up, &n))) {
            json_t *msg = json_loadb(line, n, 0, NULL);
            json_t *id = json_object_get(msg, "id");
            int done = json_is_integer(id) && json_integer_value(id) == 0;
            int ok = done && json_object_get(msg, "result");
            json_decref(msg);
            if (done)
                return ok ? write_full(g->up_in, initialized, sizeof(initialized) - 1) : -1;
        }
        if (lines_fill(&g->from_up, g->up_out) <= 0)
            return -1;
    }
}

static int on_worker_call(struct gw *g, const char *line)
{
    int wid, a, b;
    if (sscanf(line, "call %d %d %d", &wid, &a, &b) != 3)
        return -1;
    long id = ++g->next_up_id;
    int slot = (int)(id % PENDING_MAX);
    if (g->pending[slot].up_id)
        return -1;
    g->pending[slot].up_id = id;
    g->pending[slot].wid = wid;
    int n = snprintf(g->scratch, sizeof(g->scratch),
                     "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":"
                     "{\"name\":\"get-sum\",\"arguments\":{\"a\":%d,\"b\":%d}}}\n",
                     id, a, b);
    return write_full(g->up_in, g->scratch, (size_t)n);
}

static int on_upstream_line(struct gw *g, const char *line, size_t len)
{
    json_t *msg = json_loadb(line, len, 0, NULL);
    json_t *id = json_object_get(msg, "id");
    int rc = 0;
    if (!json_is_integer(id)) /* a notification (log message, list_changed): not ours */
        goto cleanup;
    if (json_object_get(msg, "method")) { /* a request from the upstream: only ping */
        rc = send_json(g->up_in, json_pack("{s:s,s:O,s:{}}", "jsonrpc", "2.0", "id", id, "result"));
        goto cleanup;
    }
    long up_id = (long)json_integer_value(id);
    int slot = (int)(up_id % PENDING_MAX);
    if (up_id <= 0 || g->pending[slot].up_id != up_id)
        goto cleanup;
    g->pending[slot].up_id = 0;
    int n = snprintf(g->scratch, sizeof(g->scratch), "%d ", g->pending[slot].wid);
    if ((size_t)n + len + 1 > sizeof(g->scratch)) {
        rc = -1;
        goto cleanup;
    }
    memcpy(g->scratch + n, line, len);
    g->scratch[(size_t)n + len] = '\n';
    rc = ws_write(g->wk, g->scratch, (size_t)n + len + 1, 0);
cleanup:
    json_decref(msg);
    return rc;
}

/* ---- worker and client --------------------------------------------------------------- */

static int on_worker_line(struct gw *g, const char *line)
{
    if (!strncmp(line, "call ", 5))
        return on_worker_call(g, line);
    if (!g->run_id)
        return -1;
    int rc;
    long total;
    if (sscanf(line, "done %ld", &total) == 1) {
        char text[32];
        snprintf(text, sizeof(text), "%ld", total);
        rc = reply_client(g->run_id,
                          json_pack("{s:[{s:s,s:s}],s:{s:I}}", "content", "type", "text", "text",
                                    text, "structuredContent", "result", (json_int_t)total));
    } else {
        rc = reply_client(g->run_id, json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text",
                                               "text", line, "isError", 1));
    }
    json_decref(g->run_id);
    g->run_id = NULL;
    return rc;
}

static json_t *tool_list(void)
{
    return json_pack("{s:[{s:s,s:s,s:{s:s,s:{s:{s:s,s:[s,s,s,s]}},s:[s]}}]}", "tools", "name",
                     "run", "description", "Runs one floor workload.", "inputSchema", "type",
                     "object", "properties", "workload", "type", "string", "enum", "one", "seq50",
                     "conc50", "empty", "required", "workload");
}

static int on_client_line(struct gw *g, const char *line, size_t len)
{
    json_t *msg = json_loadb(line, len, 0, NULL);
    json_t *id = json_object_get(msg, "id");
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *params = json_object_get(msg, "params");
    int rc = 0;
    if (!msg) {
        rc = error_client(json_null(), -32700, "parse error");
    } else if (!id || !method) {
        /* notifications (and stray replies) need no answer */
    } else if (!strcmp(method, "initialize")) {
        json_t *v = json_object_get(params, "protocolVersion");
        rc = reply_client(id, json_pack("{s:s,s:{s:{}},s:{s:s,s:s}}", "protocolVersion",
                                        json_is_string(v) ? json_string_value(v) : "2025-06-18",
                                        "capabilities", "tools", "serverInfo", "name",
                                        "floor-gateway", "version", "0"));
    } else if (!strcmp(method, "ping")) {
        rc = reply_client(id, json_object());
    } else if (!strcmp(method, "tools/list")) {
        rc = reply_client(id, tool_list());
    } else if (!strcmp(method, "tools/call")) {
        const char *w =
            json_string_value(json_object_get(json_object_get(params, "arguments"), "workload"));
        if (g->run_id || !w || strlen(w) > 16) {
            rc = error_client(id, -32602, g->run_id ? "busy" : "bad arguments");
        } else {
            int n = snprintf(g->scratch, sizeof(g->scratch), "run %s\n", w);
            g->run_id = json_incref(id);
            rc = ws_write(g->wk, g->scratch, (size_t)n, 0);
        }
    } else {
        rc = error_client(id, -32601, "method not found");
    }
    json_decref(msg);
    return rc;
}

/* Reads what one descriptor has and handles every complete line. 1 at end of file. */
static int drain(struct gw *g, int fd, struct lines *l)
{
    ssize_t r = l == &g->from_wk ? ws_fill(l, &g->wk_raw, fd) : lines_fill(l, fd);
    if (r <= 0)
        return r == 0 ? 1 : -1;
    size_t n;
    char *line;
    while ((line = lines_next(l, &n))) {
        int rc = l == &g->from_client ? on_client_line(g, line, n)
                 : l == &g->from_up   ? on_upstream_line(g, line, n)
                                      : on_worker_line(g, line);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

int main(int argc, char **argv)
{
    struct gw g = {.up_in = -1, .up_out = -1, .wk = -1, .up_pid = -1, .wk_pid = -1};
    int status = 1, up_rd = -1, up_wr = -1, wk_end = -1;
    if (argc < 3) {
        fprintf(stderr, "usage: floor-gateway WORKER UPSTREAM [ARGS...]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    int a[2] = {-1, -1}, b[2] = {-1, -1}, c[2] = {-1, -1};
    int ok = pipe2(a, O_CLOEXEC) == 0 && pipe2(b, O_CLOEXEC) == 0 &&
             socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c) == 0;
    up_rd = a[0], g.up_in = a[1], g.up_out = b[0], up_wr = b[1], g.wk = c[0], wk_end = c[1];
    if (!ok) {
        perror("floor-gateway: pipe");
        goto cleanup;
    }

    char *wk_argv[] = {argv[1], NULL};
    const char *pin = getenv("FLOOR_PIN_CPU");
    const char *setsid_env = getenv("FLOOR_SETSID");
    int setsid_worker = setsid_env && *setsid_env == '1';
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CPU_SET(pin ? atoi(pin) : 0, &cpus);
    g.up_pid = spawn(argv + 2, up_rd, up_wr, -1, 0);
    if (g.up_pid < 0 || (pin && sched_setaffinity(0, sizeof(cpus), &cpus) < 0) ||
        (g.wk_pid = spawn(wk_argv, -1, -1, wk_end, setsid_worker)) < 0) {
        perror("floor-gateway: fork/pin");
        goto cleanup;
    }
    close_fd(&up_rd);
    close_fd(&up_wr);
    close_fd(&wk_end);
    if (upstream_handshake(&g) < 0) {
        fprintf(stderr, "floor-gateway: upstream handshake failed\n");
        goto cleanup;
    }
    struct pollfd pfd[3] = {{.fd = 0, .events = POLLIN},
                            {.fd = g.up_out, .events = POLLIN},
                            {.fd = g.wk, .events = POLLIN}};
    struct lines *src[3] = {&g.from_client, &g.from_up, &g.from_wk};
    for (;;) {
        if (poll(pfd, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            perror("floor-gateway: poll");
            goto cleanup;
        }
        for (int i = 0; i < 3; i++) {
            if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            int rc = drain(&g, pfd[i].fd, src[i]);
            if (rc == 1 && i == 0)
                status = 0; /* the client hung up: the normal end */
            else if (rc == 1)
                fprintf(stderr, "floor-gateway: %s exited\n", i == 1 ? "upstream" : "worker");
            if (rc != 0)
                goto cleanup;
        }
    }
cleanup:
    close_fd(&up_rd);
    close_fd(&up_wr);
    close_fd(&wk_end);
    close_fd(&g.up_in); /* stdin EOF, then SIGTERM: the upstream's cue to exit */
    close_fd(&g.up_out);
    close_fd(&g.wk); /* EOF: the worker's cue to exit */
    if (g.up_pid > 0) {
        kill(g.up_pid, SIGTERM);
        waitpid(g.up_pid, NULL, 0);
    }
    if (g.wk_pid > 0)
        waitpid(g.wk_pid, NULL, 0);
    json_decref(g.run_id);
    lines_free(&g.from_client);
    lines_free(&g.from_up);
    lines_free(&g.from_wk);
    ws_free(&g.wk_raw);
    return status;
}
