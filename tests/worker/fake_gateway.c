/* fake_gateway — drives the real codemcp-worker binary through its control channel.
 *
 * Plays the gateway's side of notes/control-protocol.md with libwebsockets as a server:
 * listens on 127.0.0.1:0 (or a Unix socket), spawns $CODEMCP_WORKER_BIN with the worker
 * environment, checks the token (constant time), then runs one scenario given as argv[1]:
 *   basic     load_sdk, a run whose two SDK calls must be in flight together (answered
 *             out of order), stdout capture, the token hidden from agent code, a bad frame
 *   cancel    cancel of a busy loop (timeout) and of a wait on a call (cancelled), a cancel
 *             for another run id ignored, a cancel that overtakes its run, and normal runs
 *             still work after each
 *   badtoken  a worker with the wrong token is refused and exits
 *   close     the worker exits when the gateway closes, idle and in the middle of a run
 *   unix      `basic`'s call round trip over a Unix socket
 *   bigframe  10 MiB frames both ways; a frame over 64 MiB drops the connection
 *   memory    CODEMCP_WORKER_MEMORY_MB: MemoryError above the cap, room below (not ASan)
 *   eval      not a test: runs $FG_CODE and prints the envelope
 * The lws loop runs on its own thread; the scenario is plain sequential code on the main
 * thread talking to it through locked queues (the same shape as the worker itself).
 * Exit status 0 = pass. */
#include "log.h"
#include "util.h"

#include <jansson.h>
#include <libwebsockets.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define GW_PROTOCOL "codemcp-control"
#define GW_PATH     "/control"

struct gw_msg {
    struct gw_msg *next;
    size_t len;
    unsigned char data[]; /* LWS_PRE headroom, text, NUL */
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    struct gw_msg *in_head, *in_tail;   /* worker -> test, after auth */
    struct gw_msg *out_head, *out_tail; /* test -> worker */
    int authed, rejected, closed, close_req, connections;
    atomic_int stop;
    char token[65];
    /* service thread only */
    struct lws_context *ctx;
    struct lws *conn;
    struct buf rx;
} gw = {.mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static int gw_failures;
static const char *gw_extra_env; /* one more NAME=value for spawned workers, or NULL */

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            gw_failures++;                                                                         \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

static void gw_push(struct gw_msg **head, struct gw_msg **tail, const char *text, size_t len)
{
    struct gw_msg *m = xmalloc(sizeof(*m) + LWS_PRE + len + 1);
    m->next = NULL;
    m->len = len;
    memcpy(m->data + LWS_PRE, text, len);
    m->data[LWS_PRE + len] = '\0';
    if (*tail)
        (*tail)->next = m;
    else
        *head = m;
    *tail = m;
}

static struct gw_msg *gw_pop(struct gw_msg **head, struct gw_msg **tail)
{
    struct gw_msg *m = *head;
    if (m) {
        *head = m->next;
        if (!*head)
            *tail = NULL;
    }
    return m;
}

/* ---- lws side (service thread) ----------------------------------------------------- */

static int gw_http_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                      size_t len)
{
    if (reason == LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION)
        return -1; /* a WS upgrade without our subprotocol lands here: refuse it */
    return lws_callback_http_dummy(wsi, reason, user, in, len);
}

static void gw_on_frame(struct lws *wsi, const char *text, size_t len)
{
    pthread_mutex_lock(&gw.mu);
    if (!gw.authed) {
        /* The first frame is the raw token: compare in constant time. */
        char *got = xstrndup(text, len);
        if (secure_streq(got, gw.token)) {
            gw.authed = 1;
        } else {
            gw.rejected = 1;
            gw.close_req = 1;
            lws_callback_on_writable(wsi);
        }
        free(got);
    } else {
        gw_push(&gw.in_head, &gw.in_tail, text, len);
    }
    pthread_cond_broadcast(&gw.cond);
    pthread_mutex_unlock(&gw.mu);
}

static int gw_ctl_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                     size_t len)
{
    (void)user;
    switch (reason) {
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION: {
        char uri[64];
        if (lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI) < 0 || strcmp(uri, GW_PATH) != 0)
            return -1;
        if (gw.conn)
            return -1; /* one worker connection at a time */
        break;
    }
    case LWS_CALLBACK_ESTABLISHED:
        gw.conn = wsi;
        pthread_mutex_lock(&gw.mu);
        gw.connections++;
        pthread_cond_broadcast(&gw.cond);
        pthread_mutex_unlock(&gw.mu);
        break;
    case LWS_CALLBACK_CLOSED:
        if (gw.conn == wsi)
            gw.conn = NULL;
        pthread_mutex_lock(&gw.mu);
        gw.closed = 1;
        pthread_cond_broadcast(&gw.cond);
        pthread_mutex_unlock(&gw.mu);
        break;
    case LWS_CALLBACK_RECEIVE:
        buf_append(&gw.rx, in, len);
        if (lws_is_final_fragment(wsi) && !lws_remaining_packet_payload(wsi)) {
            gw_on_frame(wsi, gw.rx.data ? gw.rx.data : "", gw.rx.len);
            buf_free(&gw.rx);
        }
        break;
    case LWS_CALLBACK_SERVER_WRITEABLE: {
        pthread_mutex_lock(&gw.mu);
        int close_now = gw.close_req;
        struct gw_msg *m = close_now ? NULL : gw_pop(&gw.out_head, &gw.out_tail);
        int more = gw.out_head != NULL;
        pthread_mutex_unlock(&gw.mu);
        if (close_now) {
            lws_close_reason(wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION, NULL, 0);
            return -1;
        }
        if (m) {
            int n = lws_write(wsi, m->data + LWS_PRE, m->len, LWS_WRITE_TEXT);
            free(m);
            if (n < 0)
                return -1;
        }
        if (more)
            lws_callback_on_writable(wsi);
        break;
    }
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED: {
        const struct lws_protocols *p = lws_get_protocol(wsi);
        if (p && p->name && strcmp(p->name, GW_PROTOCOL) == 0 && gw.conn)
            lws_callback_on_writable(gw.conn);
        break;
    }
    default:
        break;
    }
    return 0;
}

static const struct lws_protocols gw_protocols[] = {
    {"http", gw_http_cb, 0, 0, 0, NULL, 0},
    {GW_PROTOCOL, gw_ctl_cb, 0, 65536, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

static void *gw_service(void *arg)
{
    (void)arg;
    while (!gw.stop)
        lws_service(gw.ctx, 0);
    return NULL;
}

/* ---- test side (main thread) ------------------------------------------------------- */

static void gw_deadline(int ms, struct timespec *ts)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void gw_send_text(const char *text)
{
    pthread_mutex_lock(&gw.mu);
    gw_push(&gw.out_head, &gw.out_tail, text, strlen(text));
    pthread_mutex_unlock(&gw.mu);
    lws_cancel_service(gw.ctx);
}

/* Sends and decrefs msg. */
static void gw_send(json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    gw_send_text(text);
    free(text);
    json_decref(msg);
}

static void gw_close_conn(void)
{
    pthread_mutex_lock(&gw.mu);
    gw.close_req = 1;
    pthread_mutex_unlock(&gw.mu);
    lws_cancel_service(gw.ctx);
}

/* Waits until *flag is set (under the lock). 0 or -1 on timeout. */
static int gw_wait_flag(int *flag, int ms)
{
    struct timespec ts;
    int rc = 0;
    gw_deadline(ms, &ts);
    pthread_mutex_lock(&gw.mu);
    while (!*flag && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&gw.cond, &gw.mu, &ts);
    int ok = *flag;
    pthread_mutex_unlock(&gw.mu);
    return ok ? 0 : -1;
}

/* Next JSON frame from the worker (new reference), skipping `log` notifications; NULL on
 * timeout or when the connection closed with nothing left. */
static json_t *gw_recv(int ms)
{
    struct timespec ts;
    gw_deadline(ms, &ts);
    pthread_mutex_lock(&gw.mu);
    for (;;) {
        struct gw_msg *m = gw_pop(&gw.in_head, &gw.in_tail);
        if (m) {
            pthread_mutex_unlock(&gw.mu);
            json_t *j = json_loadb((char *)m->data + LWS_PRE, m->len, 0, NULL);
            if (!j)
                fprintf(stderr, "fake_gateway: worker sent non-JSON: %.200s\n",
                        (char *)m->data + LWS_PRE);
            free(m);
            const char *method = json_string_value(json_object_get(j, "method"));
            if (method && strcmp(method, "log") == 0) {
                json_decref(j);
                pthread_mutex_lock(&gw.mu);
                continue;
            }
            return j;
        }
        if (gw.closed)
            break;
        if (pthread_cond_timedwait(&gw.cond, &gw.mu, &ts) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&gw.mu);
    return NULL;
}

/* The response with integer id `id` (new reference); fails on any other frame. */
static json_t *gw_recv_response(long id, int ms)
{
    json_t *j = gw_recv(ms);
    if (!j) {
        fprintf(stderr, "fake_gateway: no response to request %ld within %d ms\n", id, ms);
        return NULL;
    }
    if (json_integer_value(json_object_get(j, "id")) != id || json_object_get(j, "method")) {
        char *t = json_dumps(j, JSON_COMPACT);
        fprintf(stderr, "fake_gateway: expected response %ld, got %.300s\n", id, t);
        free(t);
        json_decref(j);
        return NULL;
    }
    return j;
}

static void gw_dump(const char *what, json_t *j)
{
    char *t = json_dumps(j, JSON_COMPACT);
    fprintf(stderr, "%s: %.2000s\n", what, t ? t : "(null)");
    free(t);
}

static pid_t gw_spawn(const char *url, const char *token)
{
    static const char *pass[] = {"PATH",
                                 "HOME",
                                 "LANG",
                                 "CODEMCP_LOG",
                                 "ASAN_OPTIONS",
                                 "LSAN_OPTIONS",
                                 "UBSAN_OPTIONS",
                                 "CODEMCP_PYTHONPATH_DEV",
                                 "CODEMCP_WORKER_MEMORY_MB"};
    char *envp[32];
    int n = 0;
    struct buf b[4] = {{0}};
    buf_printf(&b[0], "CODEMCP_CONTROL_URL=%s", url);
    buf_printf(&b[1], "CODEMCP_WORKER_TOKEN=%s", token);
    buf_printf(&b[2], "CODEMCP_WORKER_ID=7");
    for (int i = 0; i < 3; i++)
        envp[n++] = b[i].data;
    for (size_t i = 0; i < sizeof(pass) / sizeof(pass[0]); i++) {
        const char *v = getenv(pass[i]);
        if (v) {
            char *e = xmalloc(strlen(pass[i]) + strlen(v) + 2);
            sprintf(e, "%s=%s", pass[i], v);
            envp[n++] = e;
        }
    }
    if (gw_extra_env)
        envp[n++] = xstrdup(gw_extra_env);
    envp[n] = NULL;

    /* lws set SIGPIPE to SIG_IGN, which exec would pass on: restore defaults. */
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t fa;
    sigset_t none, def;
    sigemptyset(&none);
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &def);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);

    const char *bin = getenv("CODEMCP_WORKER_BIN");
    char *argv[] = {(char *)bin, NULL};
    pid_t pid = -1;
    int rc = posix_spawn(&pid, bin, &fa, &attr, argv, envp);
    if (rc != 0) {
        fprintf(stderr, "fake_gateway: cannot spawn %s: %s\n", bin, strerror(rc));
        pid = -1;
    }
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    for (int i = 0; i < n; i++)
        free(envp[i]);
    return pid;
}

/* Waits for pid to exit; returns its wait status, or -1 after killing it on timeout. */
static int gw_wait_exit(pid_t pid, int ms)
{
    int64_t end = now_ms() + ms;
    int st;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        if (now_ms() > end)
            break;
        usleep(10000);
    }
    fprintf(stderr, "fake_gateway: worker %d still running after %d ms: killing it\n", (int)pid,
            ms);
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

static int gw_start_server(const char *unix_path)
{
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof(info));
    info.protocols = gw_protocols;
    info.gid = (gid_t)-1;
    info.uid = (uid_t)-1;
    info.fd_limit_per_thread = 1024;
    if (unix_path) {
        info.options = LWS_SERVER_OPTION_UNIX_SOCK;
        info.iface = unix_path;
        info.port = 0;
    } else {
        info.iface = "127.0.0.1";
        info.port = 0;
    }
    lws_set_log_level(LLL_ERR | LLL_WARN, NULL);
    gw.ctx = lws_create_context(&info);
    if (!gw.ctx)
        return -1;
    pthread_t t;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_create(&t, NULL, gw_service, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_detach(t);
    return 0;
}

/* Spawns a worker that connects to url with `token` (the gateway expects gw.token) and
 * waits for the handshake. Returns the pid, or -1 (the caller fails the test). */
static pid_t gw_worker(const char *url, const char *token)
{
    pid_t pid = gw_spawn(url, token);
    if (pid < 0)
        return -1;
    /* 30 s: ASan builds start CPython slowly on a loaded machine. */
    int authed = gw_wait_flag(&gw.authed, 30000) == 0;
    if (!authed) {
        fprintf(stderr, "fake_gateway: worker never authenticated (rejected=%d)\n", gw.rejected);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}

/* ---- scenarios --------------------------------------------------------------------- */

/* A tiny SDK in the shape sdkgen produces: functions that send call_tool at once. */
static const char gw_sdk_source[] =
    "from codemcp_rt.client import call as _call\n"
    "\n"
    "def demo_add(a: int, b: int, timeout_ms: int | None = None):\n"
    "    \"\"\"Add two numbers (on the fake gateway).\"\"\"\n"
    "    return _call('demo', 'add', {'a': a, 'b': b}, timeout_ms)\n"
    "\n"
    "def demo_never(timeout_ms: int | None = None):\n"
    "    \"\"\"A tool the fake gateway never answers.\"\"\"\n"
    "    return _call('demo', 'never', {}, timeout_ms)\n";

static int gw_load_sdk(long id)
{
    json_t *r = NULL;
    gw_send(json_pack("{s:s, s:I, s:s, s:{s:s, s:i}}", "jsonrpc", "2.0", "id", (json_int_t)id,
                      "method", "load_sdk", "params", "source", gw_sdk_source, "version", 1));
    r = gw_recv_response(id, 30000);
    CHECK(r, "load_sdk got no response");
    CHECK(json_is_true(json_object_get(json_object_get(r, "result"), "ok")), "load_sdk failed");
    CHECK(json_integer_value(json_object_get(json_object_get(r, "result"), "functions")) == 2,
          "load_sdk should report 2 functions");
    json_decref(r);
    return 0;
out:
    if (r)
        gw_dump("load_sdk response", r);
    json_decref(r);
    return -1;
}

/* Sends a run request; timeout_ms is the run's budget as the gateway would pass it. */
static void gw_run(long id, const char *run_id, const char *code)
{
    gw_send(json_pack("{s:s, s:I, s:s, s:{s:s, s:s, s:s, s:i, s:b, s:[], s:b, s:i, s:i, s:b, "
                      "s:b}}",
                      "jsonrpc", "2.0", "id", (json_int_t)id, "method", "run", "params", "run_id",
                      run_id, "session", "s1", "code", code, "timeout_ms", 30000, "dry_run", 0,
                      "allow_mutations", "enforce_mutations", 0, "max_output_bytes", 1048576,
                      "max_result_bytes", 16777216, "reset", 0, "validate", 1));
}

/* Answers a demo_add call_tool frame with a+b (structuredContent). Consumes call. */
static void gw_answer_add(json_t *call)
{
    json_t *args = json_object_get(json_object_get(call, "params"), "args");
    json_int_t sum = json_integer_value(json_object_get(args, "a")) +
                     json_integer_value(json_object_get(args, "b"));
    char text[32];
    snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT, sum);
    gw_send(json_pack("{s:s, s:O, s:{s:[{s:s, s:s}], s:{s:I}, s:b}}", "jsonrpc", "2.0", "id",
                      json_object_get(call, "id"), "result", "content", "type", "text", "text",
                      text, "structuredContent", "sum", sum, "isError", 0));
    json_decref(call);
}

/* Two SDK calls in flight at once, answered in reverse order; checks the envelope. */
static int gw_two_calls(long id, const char *run_id)
{
    json_t *c1 = NULL, *c2 = NULL, *r = NULL, *env;
    gw_run(id, run_id,
           "a = demo_add(a=1, b=2)\n"
           "b = demo_add(a=10, b=20)\n"
           "print('both sent')\n"
           "result = {'a': a['sum'], 'b': b['sum']}\n");
    c1 = gw_recv(10000);
    c2 = gw_recv(10000);
    CHECK(c1 && c2, "expected two call_tool frames before answering any");
    CHECK(strcmp(json_string_value(json_object_get(c1, "method")), "call_tool") == 0 &&
              strcmp(json_string_value(json_object_get(c2, "method")), "call_tool") == 0,
          "expected call_tool frames");
    CHECK(json_is_string(json_object_get(c1, "id")) && json_is_string(json_object_get(c2, "id")),
          "call_tool ids must be strings");
    CHECK(strcmp(json_string_value(json_object_get(json_object_get(c1, "params"), "run_id")),
                 run_id) == 0,
          "call_tool carries the run id");
    CHECK(strcmp(json_string_value(json_object_get(json_object_get(c1, "params"), "tool")),
                 "add") == 0,
          "call_tool names the tool");
    gw_answer_add(c2); /* out of order */
    c2 = NULL;
    gw_answer_add(c1);
    c1 = NULL;
    r = gw_recv_response(id, 10000);
    CHECK(r, "no run envelope");
    env = json_object_get(r, "result");
    CHECK(json_is_true(json_object_get(env, "ok")), "run should succeed");
    CHECK(json_integer_value(json_object_get(json_object_get(env, "result"), "a")) == 3 &&
              json_integer_value(json_object_get(json_object_get(env, "result"), "b")) == 30,
          "replies matched to the wrong calls");
    CHECK(json_integer_value(json_object_get(env, "calls")) == 2, "calls should be 2");
    CHECK(json_is_string(json_object_get(env, "stdout")) &&
              strcmp(json_string_value(json_object_get(env, "stdout")), "both sent\n") == 0,
          "stdout captured");
    json_decref(r);
    return 0;
out:
    if (r)
        gw_dump("run response", r);
    json_decref(c1);
    json_decref(c2);
    json_decref(r);
    return -1;
}

/* Runs code that must succeed; returns the envelope's result (new ref) or NULL. */
static json_t *gw_run_ok(long id, const char *run_id, const char *code, int ms)
{
    gw_run(id, run_id, code);
    json_t *r = gw_recv_response(id, ms);
    json_t *env = json_object_get(r, "result");
    if (!json_is_true(json_object_get(env, "ok"))) {
        gw_dump("run failed", r);
        json_decref(r);
        return NULL;
    }
    json_t *res = json_incref(json_object_get(env, "result"));
    json_decref(r);
    return res;
}

static int scenario_basic(const char *url)
{
    pid_t pid = gw_worker(url, gw.token);
    json_t *r = NULL, *res = NULL;
    int st;
    CHECK(pid > 0, "worker did not start");
    CHECK(gw_load_sdk(1) == 0, "load_sdk");
    CHECK(gw_two_calls(2, "r1") == 0, "two concurrent calls");

    /* The token is gone from the environment, also from /proc/self/environ; argv and
     * stdin are what the contract says; the worker id reaches Python. */
    {
        char code[1024];
        snprintf(code, sizeof(code),
                 "import os, sys, _codemcp\n"
                 "raw = open('/proc/self/environ', 'rb').read()\n"
                 "import inspect, linecache, codemcp_rt.errors as m\n"
                 "fn = next(v for v in vars(m).values()\n"
                 "          if inspect.isfunction(v) and v.__module__ == m.__name__)\n"
                 "f = fn.__code__\n"
                 "linecache.lazycache(f.co_filename, vars(m))\n"
                 "result = [os.environ.get('CODEMCP_WORKER_TOKEN'), raw.find(b'%s'),\n"
                 "          sys.argv, sys.stdin.read(), _codemcp.worker_id(),\n"
                 "          sys.flags.isolated, sys.prefix, f.co_filename,\n"
                 "          linecache.getline(f.co_filename, f.co_firstlineno)]\n",
                 gw.token);
        res = gw_run_ok(3, "r2", code, 10000);
        CHECK(res, "environment run");
        CHECK(json_is_null(json_array_get(res, 0)), "token visible in os.environ");
        CHECK(json_integer_value(json_array_get(res, 1)) == -1, "token in /proc/self/environ");
        CHECK(json_is_string(json_array_get(json_array_get(res, 2), 0)) &&
                  strcmp(json_string_value(json_array_get(json_array_get(res, 2), 0)),
                         "codemcp-worker") == 0 &&
                  json_array_size(json_array_get(res, 2)) == 1,
              "sys.argv");
        CHECK(strcmp(json_string_value(json_array_get(res, 3)), "") == 0, "stdin not empty");
        CHECK(json_integer_value(json_array_get(res, 4)) == 7, "worker_id");
        CHECK(json_integer_value(json_array_get(res, 5)) == 1, "not isolated");
        CHECK(strcmp(json_string_value(json_array_get(res, 6)), "/usr") == 0, "sys.prefix");
        /* The runtime comes from the table compiled into the binary (unless the dev path is
         * in use), and its source lines are there for tracebacks. */
        const char *file = json_string_value(json_array_get(res, 7));
        const char *line = json_string_value(json_array_get(res, 8));
        CHECK(file && (getenv("CODEMCP_PYTHONPATH_DEV") ||
                       strcmp(file, "<codemcp-worker>/codemcp_rt/errors.py") == 0),
              "codemcp_rt.errors not loaded from the embedded table: %s", file ? file : "?");
        CHECK(line && (strstr(line, "def ") || strchr(line, '@')),
              "no source line for embedded code: '%s'", line ? line : "?");
        json_decref(res);
        res = NULL;
    }

    /* A frame that is not JSON gets a JSON-RPC parse error, and the worker lives on. */
    gw_send_text("{not json");
    r = gw_recv(10000);
    CHECK(r && json_integer_value(json_object_get(json_object_get(r, "error"), "code")) == -32700,
          "bad frame should get -32700");
    json_decref(r);
    r = NULL;
    res = gw_run_ok(4, "r3", "1 + 1", 10000);
    CHECK(res && json_integer_value(res) == 2, "worker alive after a bad frame");

    gw_close_conn();
    st = gw_wait_exit(pid, 10000);
    pid = -1;
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "worker exit status 0 (got %#x)", st);
out:
    if (r)
        gw_dump("frame", r);
    json_decref(r);
    json_decref(res);
    if (pid > 0)
        gw_wait_exit(pid, 0);
    return gw_failures ? 1 : 0;
}

/* Expects the envelope of request id to be a failure of error_kind `kind` within ms. */
static int gw_expect_interrupted(long id, const char *kind, int ms)
{
    int64_t t0 = now_ms();
    json_t *r = gw_recv_response(id, ms);
    json_t *env = json_object_get(r, "result");
    CHECK(r, "no envelope after cancel");
    CHECK(json_is_false(json_object_get(env, "ok")), "interrupted run must fail");
    CHECK(json_is_string(json_object_get(env, "error_kind")) &&
              strcmp(json_string_value(json_object_get(env, "error_kind")), kind) == 0,
          "error_kind should be %s", kind);
    fprintf(stderr, "fake_gateway: %s envelope after %lld ms\n", kind, (long long)(now_ms() - t0));
    json_decref(r);
    return 0;
out:
    if (r)
        gw_dump("envelope", r);
    json_decref(r);
    return -1;
}

static int scenario_cancel(const char *url)
{
    pid_t pid = gw_worker(url, gw.token);
    json_t *res = NULL, *c = NULL;
    int st;
    CHECK(pid > 0, "worker did not start");
    CHECK(gw_load_sdk(1) == 0, "load_sdk");

    /* A busy loop stopped by a timeout cancel. */
    gw_run(2, "r1", "x = 0\nwhile True:\n    x += 1\n");
    usleep(300000);
    gw_send(json_pack("{s:s, s:s, s:{s:s, s:s}}", "jsonrpc", "2.0", "method", "cancel", "params",
                      "run_id", "r1", "reason", "timeout"));
    CHECK(gw_expect_interrupted(2, "timeout", 5000) == 0, "busy loop not interrupted");

    /* A normal run afterwards. */
    res = gw_run_ok(3, "r2", "result = sum(range(10))", 10000);
    CHECK(res && json_integer_value(res) == 45, "run after cancel");
    json_decref(res);
    res = NULL;

    /* A cancel for another run id is ignored. */
    gw_run(4, "r3", "import time\ntime.sleep(0.6)\nresult = 'slept'");
    usleep(100000);
    gw_send(json_pack("{s:s, s:s, s:{s:s, s:s}}", "jsonrpc", "2.0", "method", "cancel", "params",
                      "run_id", "r-other", "reason", "cancelled"));
    json_t *r = gw_recv_response(4, 10000);
    CHECK(r && json_is_true(json_object_get(json_object_get(r, "result"), "ok")),
          "a cancel for another run must be ignored");
    json_decref(r);

    /* A run blocked waiting for a call reply is interrupted too (GIL-free waits see the
     * signal between slices). */
    gw_run(5, "r4", "v = demo_never()\nresult = v['x']\n");
    c = gw_recv(10000);
    CHECK(c && strcmp(json_string_value(json_object_get(c, "method")), "call_tool") == 0,
          "expected the call_tool of demo_never");
    usleep(300000);
    gw_send(json_pack("{s:s, s:s, s:{s:s, s:s}}", "jsonrpc", "2.0", "method", "cancel", "params",
                      "run_id", "r4", "reason", "cancelled"));
    CHECK(gw_expect_interrupted(5, "cancelled", 5000) == 0, "wait not interrupted");
    /* The late reply to the abandoned call must not confuse the next run. */
    gw_send(json_pack("{s:s, s:O, s:{s:[], s:{s:i}}}", "jsonrpc", "2.0", "id",
                      json_object_get(c, "id"), "result", "content", "structuredContent", "x", 99));
    res = gw_run_ok(6, "r5", "result = 'still fine'", 10000);
    CHECK(res && strcmp(json_string_value(res), "still fine") == 0, "run after cancelled wait");
    json_decref(res);
    res = NULL;

    /* A cancel that overtakes its run (the run request still queued) still stops it. */
    gw_send(json_pack("{s:s, s:s, s:{s:s, s:s}}", "jsonrpc", "2.0", "method", "cancel", "params",
                      "run_id", "r6", "reason", "timeout"));
    gw_run(7, "r6", "result = 'should not run'");
    CHECK(gw_expect_interrupted(7, "timeout", 5000) == 0, "early cancel lost");
    res = gw_run_ok(8, "r7", "result = 'fine again'", 10000);
    CHECK(res && strcmp(json_string_value(res), "fine again") == 0, "run after early cancel");
    json_decref(res);
    res = NULL;

    gw_close_conn();
    st = gw_wait_exit(pid, 10000);
    pid = -1;
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status 0 (got %#x)", st);
out:
    json_decref(res);
    json_decref(c);
    if (pid > 0)
        gw_wait_exit(pid, 0);
    return gw_failures ? 1 : 0;
}

static int scenario_badtoken(const char *url)
{
    char wrong[65];
    random_hex(wrong, 32);
    pid_t pid = gw_spawn(url, wrong);
    CHECK(pid > 0, "spawn");
    CHECK(gw_wait_flag(&gw.rejected, 30000) == 0, "a wrong token must be rejected");
    CHECK(!gw.authed, "wrong token accepted");
    int st = gw_wait_exit(pid, 10000);
    pid = -1;
    CHECK(st != -1 && WIFEXITED(st), "worker must exit after rejection (got %#x)", st);
    /* It did connect, then the gateway closed: that is the normal "gateway gone" exit. */
    CHECK(WEXITSTATUS(st) == 0, "exit status 0 after close (got %d)", WEXITSTATUS(st));
out:
    if (pid > 0)
        gw_wait_exit(pid, 0);
    return gw_failures ? 1 : 0;
}

static int scenario_close(const char *url)
{
    /* Idle worker: exits at once. */
    pid_t pid = gw_worker(url, gw.token);
    int st;
    CHECK(pid > 0, "worker did not start");
    CHECK(gw_load_sdk(1) == 0, "load_sdk");
    gw_close_conn();
    st = gw_wait_exit(pid, 5000);
    pid = -1;
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "idle worker exit (got %#x)", st);

    /* Busy worker (a run that never ends): still exits, via the close grace period. */
    pthread_mutex_lock(&gw.mu);
    gw.authed = gw.closed = gw.close_req = 0;
    pthread_mutex_unlock(&gw.mu);
    pid = gw_worker(url, gw.token);
    CHECK(pid > 0, "second worker did not start");
    CHECK(gw_load_sdk(1) == 0, "load_sdk");
    gw_run(2, "r1", "while True:\n    pass\n");
    usleep(300000);
    gw_close_conn();
    st = gw_wait_exit(pid, 10000);
    pid = -1;
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "busy worker exit (got %#x)", st);

    /* A run left a non-daemon thread behind: Py_FinalizeEx() would wait for it forever;
     * the close grace period ends the process anyway. */
    pthread_mutex_lock(&gw.mu);
    gw.authed = gw.closed = gw.close_req = 0;
    pthread_mutex_unlock(&gw.mu);
    pid = gw_worker(url, gw.token);
    CHECK(pid > 0, "third worker did not start");
    CHECK(gw_load_sdk(1) == 0, "load_sdk");
    json_t *res = gw_run_ok(2, "r1",
                            "import threading, time\n"
                            "threading.Thread(target=time.sleep, args=(3600,)).start()\n"
                            "result = threading.active_count()\n",
                            10000);
    CHECK(res && json_integer_value(res) == 2, "thread started");
    json_decref(res);
    gw_close_conn();
    st = gw_wait_exit(pid, 10000);
    pid = -1;
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit with a stray thread (%#x)", st);

    /* No gateway at all: exit status 3. */
    pid = gw_spawn("ws://127.0.0.1:1/control", gw.token);
    CHECK(pid > 0, "spawn");
    st = gw_wait_exit(pid, 30000);
    pid = -1;
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 3, "no-gateway exit 3 (got %#x)", st);
out:
    if (pid > 0)
        gw_wait_exit(pid, 0);
    return gw_failures ? 1 : 0;
}

static int scenario_bigframe(const char *url)
{
    const size_t big = 10u * 1024 * 1024;
    pid_t pid = gw_worker(url, gw.token);
    json_t *res = NULL;
    struct buf code = {0};
    int st;
    CHECK(pid > 0, "worker did not start");

    /* 10 MiB in (many fragments), 10 MiB out. */
    buf_appends(&code, "s = '");
    for (size_t i = 0; i < big; i += 64)
        buf_appends(&code, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/");
    buf_appends(&code, "'\nresult = [len(s), s]\n");
    res = gw_run_ok(1, "r1", code.data, 60000);
    CHECK(res && (size_t)json_integer_value(json_array_get(res, 0)) == big &&
              json_string_length(json_array_get(res, 1)) == big,
          "10 MiB round trip");
    json_decref(res);
    res = NULL;

    /* Over the 64 MiB cap: the worker drops the connection and exits. */
    buf_reset(&code);
    buf_appends(&code, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"run\",\"params\":{\"code\":\"");
    while (code.len < 65u * 1024 * 1024)
        buf_appends(&code, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
    buf_appends(&code, "\"}}");
    gw_send_text(code.data);
    st = gw_wait_exit(pid, 20000);
    pid = -1;
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit after oversize frame (%#x)", st);
    CHECK(gw_wait_flag(&gw.closed, 1000) == 0, "connection closed");
out:
    buf_free(&code);
    json_decref(res);
    if (pid > 0)
        gw_wait_exit(pid, 0);
    return gw_failures ? 1 : 0;
}

static int scenario_unix(const char *url)
{
    pid_t pid = gw_worker(url, gw.token);
    int st;
    CHECK(pid > 0, "worker did not start over the Unix socket");
    CHECK(gw_load_sdk(1) == 0, "load_sdk");
    CHECK(gw_two_calls(2, "r1") == 0, "two concurrent calls");
    gw_close_conn();
    st = gw_wait_exit(pid, 10000);
    pid = -1;
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status (got %#x)", st);
out:
    if (pid > 0)
        gw_wait_exit(pid, 0);
    return gw_failures ? 1 : 0;
}

/* CODEMCP_WORKER_MEMORY_MB: a clean MemoryError above the cap, room left below it. */
static int scenario_memory(const char *url)
{
#if defined(__SANITIZE_ADDRESS__)
    (void)url;
    fprintf(stderr, "fake_gateway: memory limits are not applied under ASan: skipped\n");
    return 77;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    (void)url;
    fprintf(stderr, "fake_gateway: memory limits are not applied under ASan: skipped\n");
    return 77;
#endif
#endif
    pid_t pid;
    json_t *res = NULL;
    int st;
    gw_extra_env = "CODEMCP_WORKER_MEMORY_MB=400";
    pid = gw_worker(url, gw.token);
    CHECK(pid > 0, "worker did not start under a 400 MB limit");
    res = gw_run_ok(1, "r1",
                    "import resource\n"
                    "lim = resource.getrlimit(resource.RLIMIT_AS)\n"
                    "try:\n"
                    "    b = bytearray(600 * 1024 * 1024)\n"
                    "    big = 'allocated'\n"
                    "except MemoryError:\n"
                    "    big = 'MemoryError'\n"
                    "c = bytearray(150 * 1024 * 1024)\n"
                    "result = [lim[0], lim[1], big, len(c)]\n",
                    30000);
    CHECK(res, "memory run");
    CHECK(json_integer_value(json_array_get(res, 0)) == 400LL << 20 &&
              json_integer_value(json_array_get(res, 1)) == 400LL << 20,
          "RLIMIT_AS soft and hard should be 400 MB");
    CHECK(strcmp(json_string_value(json_array_get(res, 2)), "MemoryError") == 0,
          "600 MB should fail with MemoryError");
    CHECK(json_integer_value(json_array_get(res, 3)) == 150LL << 20, "150 MB should fit");
    gw_close_conn();
    st = gw_wait_exit(pid, 10000);
    pid = -1;
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status (got %#x)", st);
out:
    json_decref(res);
    if (pid > 0)
        gw_wait_exit(pid, 0);
    return gw_failures ? 1 : 0;
}

/* Not a test: runs $FG_CODE once and prints the envelope (manual poking). */
static int scenario_eval(const char *url)
{
    pid_t pid = gw_worker(url, gw.token);
    json_t *r = NULL;
    CHECK(pid > 0, "worker did not start");
    CHECK(gw_load_sdk(1) == 0, "load_sdk");
    gw_run(2, "r1", getenv("FG_CODE") ? getenv("FG_CODE") : "None");
    r = gw_recv_response(2, 60000);
    CHECK(r, "no envelope");
    gw_dump("envelope", r);
    gw_close_conn();
    gw_wait_exit(pid, 10000);
    pid = -1;
out:
    json_decref(r);
    if (pid > 0)
        gw_wait_exit(pid, 0);
    return gw_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *scenario = argc > 1 ? argv[1] : "basic";
    char url[256], sock[108] = "";
    int rc = 1;

    log_init_from_env();
    if (!getenv("CODEMCP_WORKER_BIN")) {
        fprintf(stderr, "fake_gateway: set CODEMCP_WORKER_BIN\n");
        return 2;
    }
    random_hex(gw.token, 32);
    if (strcmp(scenario, "unix") == 0) {
        snprintf(sock, sizeof(sock), "/tmp/codemcp-fg-%d.sock", (int)getpid());
        unlink(sock);
        if (gw_start_server(sock) < 0)
            return 2;
        snprintf(url, sizeof(url), "unix:%s", sock);
    } else {
        if (gw_start_server(NULL) < 0)
            return 2;
        int port = lws_get_vhost_listen_port(lws_get_vhost_by_name(gw.ctx, "default"));
        snprintf(url, sizeof(url), "ws://127.0.0.1:%d%s", port, GW_PATH);
    }
    fprintf(stderr, "fake_gateway: scenario %s on %s\n", scenario, url);

    if (strcmp(scenario, "basic") == 0)
        rc = scenario_basic(url);
    else if (strcmp(scenario, "cancel") == 0)
        rc = scenario_cancel(url);
    else if (strcmp(scenario, "badtoken") == 0)
        rc = scenario_badtoken(url);
    else if (strcmp(scenario, "close") == 0)
        rc = scenario_close(url);
    else if (strcmp(scenario, "unix") == 0)
        rc = scenario_unix(url);
    else if (strcmp(scenario, "bigframe") == 0)
        rc = scenario_bigframe(url);
    else if (strcmp(scenario, "memory") == 0)
        rc = scenario_memory(url);
    else if (strcmp(scenario, "eval") == 0)
        rc = scenario_eval(url);
    else
        fprintf(stderr, "fake_gateway: unknown scenario %s\n", scenario);

    /* The service thread is detached and the process ends here: no teardown needed beyond
     * the socket file. */
    if (*sock)
        unlink(sock);
    fprintf(stderr, "fake_gateway: %s %s\n", scenario, rc == 0 ? "PASS" : "FAIL");
    return rc;
}
