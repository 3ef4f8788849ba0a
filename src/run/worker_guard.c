/* worker_guard — what a run may leave behind and how much CPU it may take, enforced by the
 * gateway from outside the sandbox (agent code owns the worker process, so whatever the worker
 * itself checks, pystray.h, is a courtesy). Part of the worker pool (workers_int.h).
 *
 * Leftovers: before a slot's first run its worker process is watched (worker_proc.h: its
 * threads by identity, its children); they are looked at before the next run is sent, and
 * in an idle worker once a grace after the answer is over. Threads or processes still there
 * get that grace (a cancelled
 * run's thread waiting for a call the gateway has just cancelled ends on its own) during which
 * the next run waits; then the worker is ended and the session's next answer says why. So no
 * code of one run executes during another. Sandbox only: host isolation makes no such promise.
 *
 * CPU time: RLIMIT_CPU's soft limit, set from outside before each run at what the process has
 * used plus the run's budget, makes the kernel end it (SIGXCPU, fatal unless caught; agent
 * code cannot raise the limit, seal.c). Agent code can block or catch SIGXCPU, so the worker's
 * CPU clock is also read once a second while the run lasts and the worker is ended a second
 * past the budget. (The hard limit would do that in the kernel, but raising it again for the
 * next run needs CAP_SYS_RESOURCE.) Loop thread only. */
#include "workers_int.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define WK_LEFTOVER_GRACE_MS 500
#define WK_CPU_CHECK_MS      1000

/* 1 and a description in what when the worker holds more than it did before its first run. */
static int leftovers(struct worker *w, char *what, size_t n)
{
    if (!sandboxed || w->watch.pid <= 0)
        return 0;
    int threads = wkp_extra_threads(&w->watch);
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

/* Before the first run: which process is the worker, and its threads with no agent code run
 * yet. 0, or -1 when it cannot be known yet (the run waits). */
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

static int settle_leftovers(struct worker *w);

static void leftover_recheck(void *ud)
{
    struct worker *w = ud;
    if (w->state == WK_READY && !w->run_id[0] && settle_leftovers(w) == 0)
        became_idle();
}

/* 0: nothing left over; -1: not now (waiting out the grace, or the worker is being ended). */
static int settle_leftovers(struct worker *w)
{
    char what[96];
    if (!w->runs_done || !leftovers(w, what, sizeof(what)))
        return 0;
    int64_t wait = w->answered_ms + WK_LEFTOVER_GRACE_MS - now_ms();
    if (wait > 0)
        lp_timer_start(&w->leftover_timer, wait, leftover_recheck, w);
    else
        end_for_leftovers(w, what);
    return -1;
}

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

int guard_before_run(struct worker *w, int64_t cpu_ms)
{
    if (know_worker(w) < 0 || settle_leftovers(w) < 0)
        return -1;
    if (sandboxed)
        limit_cpu(w, cpu_ms);
    return 0;
}

void guard_answered(struct worker *w)
{
    if (w->checked_rpc == w->run_rpc_id)
        return;
    w->checked_rpc = w->run_rpc_id;
    w->answered_ms = now_ms();
    /* Looked at when the grace is over, unless a run came first (which looks before it
     * starts): what is left in an idle worker does not wait for the session's next run. */
    if (sandboxed)
        lp_timer_start(&w->leftover_timer, WK_LEFTOVER_GRACE_MS, leftover_recheck, w);
}

int guard_worker_died(struct worker *w)
{
    return sandboxed && w->watch.pid > 0 && !wkp_alive(&w->watch);
}

void guard_stop(struct worker *w)
{
    lp_timer_stop(&w->cpu_timer);
    lp_timer_stop(&w->leftover_timer);
}
