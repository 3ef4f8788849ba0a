/* codemcp-worker — the worker host: runs agent Python for the gateway.
 *
 * Owns process setup and the embedded interpreter's life: resource limits, stdio, the
 * environment contract, starting the control client (wsclient) and CPython (with the
 * `_codemcp` module from pymod and the embedded codemcp_rt from importer), then hands
 * control to codemcp_rt.worker_main.main() and exits with its status.
 *
 * Environment (the gateway passes a scrubbed one):
 *   CODEMCP_CONTROL_URL       ws://127.0.0.1:PORT/PATH or unix:/path/to.sock (required)
 *   CODEMCP_WORKER_TOKEN      first frame sent to the gateway (required; removed from the
 *                             environment, and wiped from /proc/self/environ, at once)
 *   CODEMCP_WORKER_ID         slot number for logs and _codemcp.worker_id() (default 0)
 *   CODEMCP_WORKER_MEMORY_MB  RLIMIT_AS applied here too (the gateway sets it before exec)
 *   CODEMCP_PYTHONPATH_DEV    dev only: directories searched before the embedded runtime
 *   CODEMCP_ISOLATION         "sandbox": build the sandbox (sandbox.h, seal.h) before anything
 *                             else, configured by CODEMCP_SANDBOX_* (read as the gateway
 *                             reads them: settings.def, sbx_opts_from_settings);
 *                             "container": in a container the gateway made (docker isolation:
 *                             the container is the sandbox): connect the control socket, then
 *                             seal (seal.h) as a sandboxed worker does; else none
 *   CODEMCP_WORKER_ROLE       "prototype": be the gateway's prototype (forksrv.h): sandbox,
 *                             interpreter and runtime first, then fork a worker per request
 *                             received on fd 3; each child continues below as a worker
 *                             (control socket on fd 3, token from the request)
 *   CODEMCP_CONTROL_MAX_FRAME the longest control frame read, the gateway's own cap (the
 *                             gateway always passes it: a raised setting must not make this
 *                             worker drop frames the gateway may send)
 *   CODEMCP_LOG               log level (see log.h)
 * Exit status: worker_main.main()'s, 0 once the gateway closed the connection, 2 for a bad
 * environment, 3 if the connection could never be established, 125 (SBX_EXIT_SETUP) when the
 * sandbox could not be built.
 *
 * The main thread runs Python and, while Python waits for the gateway, reads the control
 * socket itself (see wsclient.h); a watcher thread covers the times it computes. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "fdcap.h"
#include "forksrv.h"
#include "importer.h"
#include "log.h"
#include "pymod.h"
#include "sandbox.h"
#include "seal.h"
#include "settings.h"
#include "util.h"
#include "wsclient.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define WM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WM_ASAN 1
#endif
#endif

#define WM_EXIT_ENV 2

/* A non-negative integer variable; def when unset or invalid (logged). */
static long env_long(const char *name, long def)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || *end || n < 0) {
        log_warn("config", "%s=%s is not a non-negative integer; using %ld", name, v, def);
        return def;
    }
    return n;
}

/* fd 0 becomes /dev/null (agent code must not read the gateway's stdin); fds 1 and 2 are
 * opened on /dev/null if closed, so no socket can take their numbers. */
static void wm_fix_stdio(void)
{
    int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return;
    dup2(fd, 0);
    for (int i = 1; i <= 2; i++)
        if (fcntl(i, F_GETFD) < 0)
            dup2(fd, i);
    if (fd > 2)
        close(fd);
}

/* Belt and braces for the gateway's RLIMIT_AS: soft and hard, never raising it. */
static void wm_apply_memory_limit(void)
{
    long mb = env_long("CODEMCP_WORKER_MEMORY_MB", 0);
    if (mb <= 0)
        return;
#ifdef WM_ASAN
    log_warn("worker", "CODEMCP_WORKER_MEMORY_MB ignored: AddressSanitizer reserves terabytes "
                       "of address space");
#else
    struct rlimit rl;
    rlim_t want = (rlim_t)mb << 20;
    if (getrlimit(RLIMIT_AS, &rl) < 0)
        return;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want)
        want = rl.rlim_max;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want)
        want = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max = want;
    if (setrlimit(RLIMIT_AS, &rl) < 0)
        log_warn("worker", "cannot apply RLIMIT_AS of %ld MB", mb);
#endif
}

static int wm_sandboxed(void)
{
    const char *iso = getenv("CODEMCP_ISOLATION");
    return iso && strcmp(iso, "sandbox") == 0;
}

static int wm_contained(void)
{
    const char *iso = getenv("CODEMCP_ISOLATION");
    return iso && strcmp(iso, "container") == 0;
}

/* Landlock and seccomp (seal.c): the last step before agent code can run. 0 / -1. */
static int wm_seal(const struct sbx_opts *o)
{
    char err[1024];
    int abi = seal_landlock(o);
    if (seal_seccomp(o, err, sizeof(err)) < 0) {
        log_error("worker", "sandbox: %s", err);
        return -1;
    }
    log_debug("worker", "sandboxed (Landlock ABI %d, subprocesses %s, network %s)", abi,
              o->subprocess ? "allowed" : "denied", o->net_host ? "host" : "none");
    return 0;
}

/* CODEMCP_ISOLATION=sandbox: namespaces, root, credentials and limits (sandbox.c), then
 * (not in the prototype, whose children seal themselves) Landlock and seccomp (seal.c).
 * Runs before any thread exists. 0, or -1 (logged). */
static int wm_sandbox(const struct settings *s, struct sbx_opts *o, int prototype)
{
    char err[1024];
    sbx_opts_from_settings(s, o);
    o->prototype = prototype;
    if (!wm_sandboxed())
        return 0;
    if (sbx_enter(o, err, sizeof(err)) < 0) {
        log_error("worker", "%s", err);
        return -1;
    }
    return prototype ? 0 : wm_seal(o);
}

/* CODEMCP_ISOLATION=container: the control socket (unix:/path) is connected here, and the
 * URL becomes its descriptor (fd:N), because the seal that follows refuses socket(); then the
 * worker seals itself as a sandboxed one does (the container gave the namespaces, the
 * read-only root, the dropped capabilities and no-new-privileges). 0, or -1 (logged). */
static int wm_contain(const struct sbx_opts *o, const char **url)
{
    static char fd_url[32];
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    const char *u = *url;
    if (!u || strncmp(u, "unix:/", 6) != 0 || strlen(u + 5) >= sizeof(a.sun_path)) {
        log_error("worker", "CODEMCP_ISOLATION=container needs CODEMCP_CONTROL_URL=unix:/path");
        return -1;
    }
    memcpy(a.sun_path, u + 5, strlen(u + 5) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        log_error("worker", "control connection failed: %s: %s", u, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    snprintf(fd_url, sizeof(fd_url), "fd:%d", fd);
    *url = fd_url;
    return wm_seal(o);
}

/* Returns a copy of a secret variable and removes every trace of it from the environment:
 * the value is overwritten in place first, because /proc/self/environ keeps showing the
 * original block after unsetenv(). NULL if unset. Caller wipes and frees. */
static char *wm_take_secret(const char *name)
{
    char *v = getenv(name);
    if (!v)
        return NULL;
    char *copy = xstrdup(v);
    explicit_bzero(v, strlen(v));
    unsetenv(name);
    return copy;
}

/* Exit status for the exception that ended main() (consumes it). */
static int wm_exception_status(void)
{
    if (PyErr_ExceptionMatches(PyExc_SystemExit)) {
        /* Not PyErr_Print(): it would call exit() itself, skipping our cleanup. */
        PyObject *type, *value, *tb; /* owned after Fetch */
        int status = 1;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        PyObject *code = value ? PyObject_GetAttrString(value, "code") : NULL; /* new ref */
        if (!code || code == Py_None) {
            status = 0;
        } else if (PyLong_Check(code)) {
            status = (int)PyLong_AsLong(code);
        } else {
            PyObject_Print(code, stderr, Py_PRINT_RAW);
            fputc('\n', stderr);
        }
        PyErr_Clear();
        Py_XDECREF(code);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return status;
    }
    if (PyErr_ExceptionMatches(PyExc_ConnectionError) && wsc_is_closed()) {
        PyErr_Clear(); /* the gateway went away: the normal way to end */
        return 0;
    }
    PyErr_Print();
    return 1;
}

/* Installs the runtime and imports codemcp_rt.worker_main: new reference, or NULL with
 * *status set (a Python error is consumed). Interpreter initialised, GIL held. */
static PyObject *wm_import_main(int *status)
{
    const char *dev = getenv("CODEMCP_PYTHONPATH_DEV");
    PyObject *mod;

    if (dev && !*dev)
        dev = NULL;
    if (!dev && imp_count() == 0) {
        log_error("worker", "built without the embedded codemcp_rt runtime: set "
                            "CODEMCP_PYTHONPATH_DEV to the python/ directory");
        *status = WM_EXIT_ENV;
        return NULL;
    }
    if (imp_install(dev) < 0 || !(mod = PyImport_ImportModule("codemcp_rt.worker_main"))) {
        *status = wm_exception_status();
        return NULL;
    }
    return mod;
}

/* Runs mod.main() (mod borrowed). Returns the exit status. GIL held. */
static int wm_call_main(PyObject *mod)
{
    int status = 1;
    PyObject *fn = NULL, *res = NULL;

    fn = PyObject_GetAttrString(mod, "main"); /* new ref */
    if (!fn)
        goto fail;
    res = PyObject_CallNoArgs(fn); /* new ref */
    if (!res)
        goto fail;
    if (res == Py_None) {
        status = 0;
    } else if (PyLong_Check(res)) {
        status = (int)PyLong_AsLong(res);
    } else {
        log_warn("worker", "worker_main.main() returned a non-integer");
        status = 1;
    }
    goto done;
fail:
    status = wm_exception_status();
done:
    Py_XDECREF(res);
    Py_XDECREF(fn);
    return status;
}

/* Configures and starts CPython. Exits the process when that fails. */
static void wm_init_python(long worker_id)
{
    PyPreConfig pre;
    PyConfig config;
    PyStatus st;
    wchar_t *argv[] = {L"codemcp-worker"};

    if (pym_register(worker_id) < 0) {
        log_error("worker", "cannot register the _codemcp module");
        exit(1);
    }
    /* UTF-8 mode: agent code gets UTF-8 files and stdio whatever LANG the gateway passed. */
    PyPreConfig_InitIsolatedConfig(&pre);
    pre.utf8_mode = 1;
    st = Py_PreInitialize(&pre);
    if (PyStatus_Exception(st))
        Py_ExitStatusException(st);

    /* Isolated: no PYTHON* variables, no user site, no script directory on sys.path. The
     * stdlib is found from the prefix of the executable named below. */
    PyConfig_InitIsolatedConfig(&config);
    config.install_signal_handlers = 1; /* SIGUSR1 handlers need Python's C handler */
    config.buffered_stdio = 0;          /* fds 1/2 reach fdcap at once, in order */
    config.write_bytecode = 0;          /* never write .pyc next to the system stdlib */
    st = PyConfig_SetArgv(&config, 1, argv);
    if (PyStatus_Exception(st))
        goto fail;
#ifdef CODEMCP_PYTHON_EXECUTABLE
    /* sys.executable: a real interpreter for agent code that runs `sys.executable -c`,
     * never this host. */
    if (access(CODEMCP_PYTHON_EXECUTABLE, X_OK) == 0) {
        st = PyConfig_SetBytesString(&config, &config.executable, CODEMCP_PYTHON_EXECUTABLE);
        if (PyStatus_Exception(st))
            goto fail;
    }
#endif
    st = Py_InitializeFromConfig(&config);
    if (PyStatus_Exception(st))
        goto fail;
    PyConfig_Clear(&config);
    return;
fail:
    PyConfig_Clear(&config);
    Py_ExitStatusException(st);
}

/* Runs the runtime (mod: worker_main, stolen; NULL: import it now), finalizes. Returns the
 * exit status. */
static int wm_run_python(PyObject *mod)
{
    int status = 1;
    if (!mod)
        mod = wm_import_main(&status);
    if (mod)
        status = wm_call_main(mod);
    Py_XDECREF(mod);
    if (Py_FinalizeEx() < 0 && status == 0)
        status = 120; /* flushing stdout/stderr failed, as python(1) reports it */
    return status;
}

/* ---- the prototype (forksrv.h) ---------------------------------------------------------- */

/* fsv_ops.load: each line to worker_main.handle(); any error reply fails it. */
static int wm_proto_load(const char *text, size_t len)
{
    int rc = 0;
    PyObject *mod = PyImport_ImportModule("codemcp_rt.worker_main");       /* new ref */
    PyObject *handle = mod ? PyObject_GetAttrString(mod, "handle") : NULL; /* new ref */
    const char *p = text, *end = text + len;
    if (!handle)
        rc = -1;
    while (handle && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (n) {
            PyObject *r = PyObject_CallFunction(handle, "s#", p, (Py_ssize_t)n); /* new ref */
            const char *u = r && PyUnicode_Check(r) ? PyUnicode_AsUTF8(r) : NULL;
            if (!r || (u && strstr(u, "\"error\":{\"code\"")))
                rc = -1;
            Py_XDECREF(r);
        }
        p += n + 1;
    }
    if (PyErr_Occurred())
        PyErr_Print();
    Py_XDECREF(handle);
    Py_XDECREF(mod);
    return rc;
}

/* What every worker's first run would import and build lazily is done once here, so that the
 * children share it copy-on-write instead of each making its own: the modules a validated run
 * uses (validator & co.) and one empty run in a throwaway namespace. Only what a first run
 * needs: the rest waits until the prototype is idle (wm_proto_idle). */
static void wm_proto_warm_up(void)
{
    static const char warm[] =
        "from codemcp_rt import runner as _r\n"
        "for _m in ('validator', 'callcheck', 'argcheck', 'follow', 'jsnames', 'shapes',\n"
        "           'policycheck'):\n"
        "    try:\n"
        "        __import__('codemcp_rt.' + _m)\n"
        "    except ImportError:\n"
        "        pass\n"
        "import encodings.ascii\n"
        "_r.run_json({'run_id': 'prototype-warm-up', 'session': 'prototype-warm-up',\n"
        "             'code': 'x = [i for i in range(3)]\\nresult = {\"x\": x}'})\n"
        "_r.drop_session('prototype-warm-up')\n"
        "del _r, _m\n";
    if (PyRun_SimpleString(warm) < 0)
        log_warn("prototype", "warm-up failed: workers start colder");
}

/* fsv_ops.idle: what only some programs need, built once the prototype is ready and idle —
 * error hints, search's tables and the loaded snapshot's index (codemcp_rt.search's module
 * body alone is about half the runtime's import), the sentence encoder when semantic search
 * is on. Sessions forked before this import what they use themselves. */
static void wm_proto_idle(void)
{
    static const char warm[] = "import difflib, heapq\n"
                               "import codemcp_rt.errhint\n"
                               "from codemcp_rt import discovery as _d\n"
                               "_d.warm()\n"
                               "del _d\n";
    PyObject *mod = NULL, *version = NULL;
    if (PyRun_SimpleString(warm) < 0)
        log_warn("prototype", "idle warm-up failed: sessions build what they use themselves");
    mod = PyImport_ImportModule("codemcp_rt.discovery");                 /* new ref */
    version = mod ? PyObject_CallMethod(mod, "warm_index", NULL) : NULL; /* new ref */
    if (version && PyLong_Check(version))
        log_debug("prototype", "search warmed (SDK version %ld)", PyLong_AsLong(version));
    else
        log_warn("prototype", "search warm-up failed: sessions build the index themselves");
    if (PyErr_Occurred())
        PyErr_Print();
    Py_XDECREF(version);
    Py_XDECREF(mod);
}

static void wm_proto_freeze(void)
{
    if (PyRun_SimpleString("import gc\ngc.collect()\ngc.freeze()\n") < 0)
        log_warn("prototype", "gc.freeze() failed");
}

/* The prototype's life: sandbox (prototype mode), interpreter and runtime, then the fork
 * server. Returns only in a forked session worker (0, with *slot and token set), or exits. */
static int wm_prototype(const struct settings *s, struct sbx_opts *o, long *slot, char *token,
                        size_t token_len, PyObject **mod)
{
    static const struct fsv_ops ops = {wm_proto_load, wm_proto_freeze, wm_proto_idle};
    struct fsv_child child;
    int status = 1;
    if (wm_sandbox(s, o, 1) < 0)
        exit(SBX_EXIT_SETUP);
    /* Tokens pass through this process: the same user outside must not read its memory. */
    prctl(PR_SET_DUMPABLE, 0);
    log_debug("prototype", "sandboxed");
    wm_init_python(0);
    log_debug("prototype", "interpreter up");
    *mod = wm_import_main(&status);
    if (!*mod)
        exit(status);
    log_debug("prototype", "runtime imported");
    wm_proto_warm_up();
    log_debug("prototype", "warmed up");
    int rc = fsv_serve(3, o, wm_sandboxed(), &ops, &child);
    if (rc != 1) {
        Py_CLEAR(*mod);
        Py_FinalizeEx();
        exit(rc == 0 ? 0 : 1);
    }
    /* What fork() does not pass on: the subreaper flag (a run's orphans are ours to end,
     * codemcp_rt/procs.py). */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    *slot = child.slot;
    snprintf(token, token_len, "%s", child.token);
    explicit_bzero(child.token, sizeof(child.token));
    pym_set_worker_id(child.slot);
    if (wm_sandboxed() && wm_seal(o) < 0)
        exit(SBX_EXIT_SETUP);
    return 0;
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    /* One malloc arena: every extra arena reserves 64 MiB of address space, which
     * RLIMIT_AS counts (measured under a 256 MB cap: 165 MB usable with 2 arenas, 229 MB
     * with 1). Only the watcher thread competes with Python for it, rarely. */
    mallopt(M_ARENA_MAX, 1);
    /* Orphans of what a run starts become ours, so a stopped run's processes can be found and
     * killed (codemcp_rt/procs.py) even after a double fork or setsid. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    wm_fix_stdio();
    log_init(getenv("CODEMCP_LOG"));
#ifdef CODEMCP_ENCODER_MODEL
    /* search's sentence encoder (codemcp_rt/encoder.py reads the variable; the sandbox binds
     * the file read-only when it exists) */
    setenv("CODEMCP_ENCODER_MODEL", CODEMCP_ENCODER_MODEL, 0);
#endif
    const char *role = getenv("CODEMCP_WORKER_ROLE");
    int prototype = role && strcmp(role, "prototype") == 0;
    struct settings s; /* the gateway's own settings, from the environment it passed down */
    settings_load(&s);
    struct sbx_opts o;
    PyObject *mod = NULL; /* the prototype's worker_main, kept across the fork */
    const char *url = prototype ? "fd:3" : getenv("CODEMCP_CONTROL_URL");
    long worker_id = env_long("CODEMCP_WORKER_ID", 0);
    int status = WM_EXIT_ENV;
    char *token = NULL;

    if (prototype) {
        token = xmalloc(PW_TOKEN_MAX);
        if (wm_prototype(&s, &o, &worker_id, token, PW_TOKEN_MAX, &mod) < 0)
            goto done;
    } else {
        /* The token goes first: the sandbox's PID 1 is a copy of this process. */
        token = wm_take_secret("CODEMCP_WORKER_TOKEN");
        if (wm_sandbox(&s, &o, 0) < 0 || (wm_contained() && wm_contain(&o, &url) < 0))
            return SBX_EXIT_SETUP;
    }
    fdcap_start();
    wm_apply_memory_limit();

    if (!url || !*url) {
        log_error("worker", "CODEMCP_CONTROL_URL is not set: codemcp-worker is started by the "
                            "codemcp gateway");
        goto done;
    }
    if (!token || !*token) {
        log_error("worker", "CODEMCP_WORKER_TOKEN is not set");
        goto done;
    }
    /* Connect while Python initialises; the token is copied and wiped by wsclient. */
    if (wsc_start(url, token, (size_t)s.control_max_frame, pthread_self()) < 0)
        goto done;
    explicit_bzero(token, strlen(token));

    if (!prototype)
        wm_init_python(worker_id);
    status = wm_run_python(mod);
    mod = NULL;
    if (status == 0 && !wsc_was_connected())
        status = WSC_EXIT_NO_CONNECT;
done:
    wsc_stop();
    if (token) {
        explicit_bzero(token, strlen(token));
        free(token);
    }
    return status;
}
