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
 *                             else, configured by CODEMCP_SANDBOX_*; anything else: none
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
#include "importer.h"
#include "log.h"
#include "pymod.h"
#include "sandbox.h"
#include "seal.h"
#include "util.h"
#include "wsclient.h"

#include <fcntl.h>
#include <malloc.h>
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

/* CODEMCP_ISOLATION=sandbox: namespaces, root, credentials and limits (sandbox.c), then
 * Landlock and seccomp (seal.c). Runs before any thread exists. 0, or -1 (logged). */
static int wm_sandbox(void)
{
    const char *iso = getenv("CODEMCP_ISOLATION");
    struct sbx_opts o;
    char err[1024];
    if (!iso || strcmp(iso, "sandbox") != 0)
        return 0;
    sbx_opts_from_env(&o);
    if (sbx_enter(&o, err, sizeof(err)) < 0) {
        log_error("worker", "%s", err);
        return -1;
    }
    int abi = seal_landlock(&o);
    if (seal_seccomp(&o, err, sizeof(err)) < 0) {
        log_error("worker", "sandbox: %s", err);
        return -1;
    }
    log_debug("worker", "sandboxed (Landlock ABI %d, subprocesses %s, network %s)", abi,
              o.subprocess ? "allowed" : "denied", o.net_host ? "host" : "none");
    return 0;
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

/* Imports codemcp_rt.worker_main and runs main(). Interpreter initialised, GIL held. */
static int wm_call_main(void)
{
    int status = 1;
    PyObject *mod = NULL, *fn = NULL, *res = NULL;
    const char *dev = getenv("CODEMCP_PYTHONPATH_DEV");

    if (dev && !*dev)
        dev = NULL;
    if (!dev && imp_count() == 0) {
        log_error("worker", "built without the embedded codemcp_rt runtime: set "
                            "CODEMCP_PYTHONPATH_DEV to the python/ directory");
        return WM_EXIT_ENV;
    }
    if (imp_install(dev) < 0)
        goto fail;
    mod = PyImport_ImportModule("codemcp_rt.worker_main"); /* new ref */
    if (!mod)
        goto fail;
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
    Py_XDECREF(mod);
    return status;
}

/* Configures and starts CPython, runs the runtime, finalizes. Returns the exit status. */
static int wm_run_python(long worker_id)
{
    PyPreConfig pre;
    PyConfig config;
    PyStatus st;
    wchar_t *argv[] = {L"codemcp-worker"};

    if (pym_register(worker_id) < 0) {
        log_error("worker", "cannot register the _codemcp module");
        return 1;
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

    int status = wm_call_main();
    if (Py_FinalizeEx() < 0 && status == 0)
        status = 120; /* flushing stdout/stderr failed, as python(1) reports it */
    return status;
fail:
    PyConfig_Clear(&config);
    Py_ExitStatusException(st);
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
    log_init_from_env();
    /* The token goes first: the sandbox's PID 1 is a copy of this process. */
    char *token = wm_take_secret("CODEMCP_WORKER_TOKEN");
    if (wm_sandbox() < 0)
        return SBX_EXIT_SETUP;
    fdcap_start();
    wm_apply_memory_limit();

    const char *url = getenv("CODEMCP_CONTROL_URL");
    long worker_id = env_long("CODEMCP_WORKER_ID", 0);
    int status = WM_EXIT_ENV;

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
    if (wsc_start(url, token, pthread_self()) < 0)
        goto done;
    explicit_bzero(token, strlen(token));

    status = wm_run_python(worker_id);
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
