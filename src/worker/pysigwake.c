/* pysigwake — see pysigwake.h. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "pysigwake.h"

#include "log.h"
#include "wsclient.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define PSW_DRAIN_READS 128 /* 128 x 512 bytes: more than a full pipe */

static struct {
    int r, w;  /* the pipe, or -1 */
    int stale; /* a fork copied it, or it was dropped: make a new one */
    int atfork;
    int failed; /* no pipe can be had: do not retry at every wait */
} psw = {.r = -1, .w = -1};

static void psw_after_fork_child(void)
{
    /* The copies stay open: the child's Python still writes to w until a new pipe is
     * installed, and writes to a closed descriptor would be reported as errors. */
    psw.stale = 1;
}

/* signal.set_wakeup_fd(fd, warn_on_full_buffer=False): a full pipe (signals while no wait
 * drains it) is no error, the byte already there wakes the next wait. 0 or -1 (logged). */
static int psw_install(int fd)
{
    PyObject *mod = PyImport_ImportModule("signal");                          /* new ref */
    PyObject *fn = mod ? PyObject_GetAttrString(mod, "set_wakeup_fd") : NULL; /* new ref */
    PyObject *args = fn ? Py_BuildValue("(i)", fd) : NULL;                    /* new ref */
    PyObject *kw = args ? Py_BuildValue("{sO}", "warn_on_full_buffer", Py_False) : NULL;
    PyObject *old = kw ? PyObject_Call(fn, args, kw) : NULL; /* new ref */
    int rc = old ? 0 : -1;
    if (rc < 0) {
        log_warn("worker", "cannot install the signal wakeup pipe");
        PyErr_Clear();
    }
    Py_XDECREF(old);
    Py_XDECREF(kw);
    Py_XDECREF(args);
    Py_XDECREF(fn);
    Py_XDECREF(mod);
    return rc;
}

int psw_begin(void)
{
    if ((psw.w >= 0 && !psw.stale) || psw.failed)
        return 0;
    if (!psw.atfork && pthread_atfork(NULL, NULL, psw_after_fork_child) == 0)
        psw.atfork = 1;
    int p[2];
    if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0) {
        log_warn("worker", "cannot make the signal wakeup pipe: %s", strerror(errno));
        psw.failed = 1;
        return 0;
    }
    if (psw_install(p[1]) < 0) {
        close(p[0]);
        close(p[1]);
        psw.failed = 1;
        return 0;
    }
    psw.r = p[0];
    psw.w = p[1];
    psw.stale = 0;
    wsc_set_signal_fd(psw.r);
    return 1;
}

/* Agent code closed our read end or put something else there: stop using it. The write
 * end is left alone (Python may hold it); the next psw_begin makes a new pipe. */
static void psw_drop(void)
{
    log_warn("worker", "the signal wakeup pipe was closed or replaced: making a new one");
    wsc_set_signal_fd(-1);
    psw.stale = 1;
}

void psw_drain(void)
{
    unsigned char buf[512];
    if (psw.r < 0 || psw.stale)
        return;
    for (int i = 0; i < PSW_DRAIN_READS; i++) {
        ssize_t n = read(psw.r, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            psw_drop();
            return;
        }
        if ((size_t)n < sizeof(buf))
            return;
    }
    psw_drop(); /* never empty: not our pipe any more */
}
