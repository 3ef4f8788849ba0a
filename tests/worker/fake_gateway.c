/* fake_gateway — drives the real codemcp-worker binary through its control channel.
 *
 * Plays the gateway's side of docs/control-protocol.md with libwebsockets as a server:
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
 *   io        a request in fragments with a ping between them (pong echoes it); SDK calls
 *             from four threads and the main thread at once; a reply that arrives while
 *             agent code computes without waiting (read by the worker's watcher)
 *   eval      not a test: runs $FG_CODE and prints the envelope
 * The lws loop runs on its own thread; the scenario is plain sequential code on the main
 * thread talking to it through locked queues (the same shape as the worker itself).
 * Exit status 0 = pass. */
#include "gw_harness.h"

#include "log.h"

#include <libwebsockets.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
                 "import inspect, linecache, codemcp_rt.redact as m\n"
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
                       strcmp(file, "<codemcp-worker>/codemcp_rt/redact.py") == 0),
              "codemcp_rt.redact not loaded from the embedded table: %s", file ? file : "?");
        CHECK(line && (strstr(line, "def ") || strchr(line, '@')),
              "no source line for embedded code: '%s'", line ? line : "?");
        json_decref(res);
        res = NULL;
    }

    /* 50 calls in flight, answered last first. */
    {
        json_t *calls[50] = {NULL};
        gw_run(5, "r4",
               "ps = [demo_add(a=i, b=i) for i in range(50)]\n"
               "result = sum(p['sum'] for p in ps)\n");
        int got = 0;
        while (got < 50 && (calls[got] = gw_recv(10000)))
            got++;
        for (int i = got - 1; i >= 0; i--)
            gw_answer_add(calls[i]);
        CHECK(got == 50, "expected 50 call_tool frames in flight, got %d", got);
        r = gw_recv_response(5, 10000);
        CHECK(r && json_integer_value(json_object_get(json_object_get(r, "result"), "result")) ==
                       2450,
              "50 out-of-order replies");
        json_decref(r);
        r = NULL;
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

/* Reads call_tool frames and answers each demo_add until `want` were answered; the
 * frames are answered in batches of up to 3, last first, so replies reach threads out of
 * order. Returns how many were answered. */
static int gw_answer_calls(int want, int ms)
{
    int done = 0;
    while (done < want) {
        json_t *batch[3];
        int n = 0;
        batch[n] = gw_recv(ms);
        if (!batch[n])
            break;
        n++;
        while (n < 3 && done + n < want && (batch[n] = gw_recv(50)))
            n++;
        for (int i = n - 1; i >= 0; i--)
            gw_answer_add(batch[i]);
        done += n;
    }
    return done;
}

static int scenario_io(const char *url)
{
    pid_t pid = gw_worker(url, gw.token);
    json_t *r = NULL, *res = NULL;
    char *req = NULL;
    int st;
    CHECK(pid > 0, "worker did not start");
    CHECK(gw_load_sdk(1) == 0, "load_sdk");

    /* A run request in three fragments, a ping between the first two. */
    json_t *run =
        json_pack("{s:s, s:i, s:s, s:{s:s, s:s, s:s, s:i, s:b, s:[], s:b, s:i, s:i, "
                  "s:b, s:b}}",
                  "jsonrpc", "2.0", "id", 2, "method", "run", "params", "run_id", "r1", "session",
                  "s1", "code", "result = 'fragments ' + 'joined'", "timeout_ms", 30000, "dry_run",
                  0, "allow_mutations", "enforce_mutations", 0, "max_output_bytes", 1048576,
                  "max_result_bytes", 16777216, "reset", 0, "validate", 1);
    req = json_dumps(run, JSON_COMPACT);
    json_decref(run);
    size_t n = strlen(req), a = n / 3, b = 2 * n / 3;
    gw_send_frame(req, a, LWS_WRITE_TEXT | LWS_WRITE_NO_FIN);
    gw_send_frame("are you there", 13, LWS_WRITE_PING);
    gw_send_frame(req + a, b - a, LWS_WRITE_CONTINUATION | LWS_WRITE_NO_FIN);
    gw_send_frame(req + b, n - b, LWS_WRITE_CONTINUATION);
    r = gw_recv_response(2, 10000);
    res = json_object_get(json_object_get(r, "result"), "result");
    CHECK(json_is_string(res) && strcmp(json_string_value(res), "fragments joined") == 0,
          "fragmented request reassembled");
    res = NULL;
    json_decref(r);
    r = NULL;
    CHECK(gw_wait_flag(&gw.pongs, 5000) == 0 && strcmp(gw.last_pong, "are you there") == 0,
          "ping answered with its payload (got %d pongs, '%s')", gw.pongs, gw.last_pong);

    /* Five threads calling at once: whoever waits reads for the others. */
    gw_run(3, "r2",
           "import threading\n"
           "out = {}\n"
           "def work(k):\n"
           "    out[k] = [demo_add(a=k, b=i)['sum'] for i in range(5)]\n"
           "ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]\n"
           "for t in ts: t.start()\n"
           "mine = [demo_add(a=100, b=i)['sum'] for i in range(5)]\n"
           "for t in ts: t.join()\n"
           "result = [mine] + [out[k] for k in range(4)]\n");
    CHECK(gw_answer_calls(25, 10000) == 25, "expected 25 call_tool frames");
    r = gw_recv_response(3, 10000);
    res = json_object_get(json_object_get(r, "result"), "result");
    int good = json_array_size(res) == 5;
    for (int k = 0; good && k < 5; k++)
        for (int i = 0; i < 5; i++)
            if (json_integer_value(json_array_get(json_array_get(res, (size_t)k), (size_t)i)) !=
                (k == 0 ? 100 : k - 1) + i)
                good = 0;
    if (!good && r)
        gw_dump("threads run", r);
    res = NULL;
    CHECK(good, "every thread got its own replies");
    json_decref(r);
    r = NULL;

    /* The reply comes while agent code computes without waiting for 300 ms. */
    gw_run(4, "r3",
           "import time\n"
           "p = demo_add(a=1, b=2)\n"
           "t = time.monotonic()\n"
           "while time.monotonic() - t < 0.3:\n"
           "    pass\n"
           "result = p['sum']\n");
    CHECK(gw_answer_calls(1, 10000) == 1, "expected the call_tool frame");
    r = gw_recv_response(4, 10000);
    res = json_object_get(json_object_get(r, "result"), "result");
    CHECK(json_integer_value(res) == 3, "reply read while computing");
    res = NULL;
    json_decref(r);
    r = NULL;

    gw_close_conn();
    st = gw_wait_exit(pid, 10000);
    pid = -1;
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status (got %#x)", st);
out:
    free(req);
    json_decref(r);
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

    log_init(getenv("CODEMCP_LOG"));
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
    else if (strcmp(scenario, "io") == 0)
        rc = scenario_io(url);
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
