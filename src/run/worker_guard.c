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
 * CPU time: once a run has lasted a second, the worker's CPU clock is read once a second; the
 * first look sets where the run's budget ends (that first second counted as spent) and puts
 * RLIMIT_CPU's soft limit there, so the kernel ends the worker at the budget (SIGXCPU, fatal
 * unless caught; agent code cannot raise the limit, seal.c); agent code can block or catch
 * SIGXCPU, so a later look ends the worker a second past the budget. (The hard limit would do
 * that in the kernel, but raising it again for the next run needs CAP_SYS_RESOURCE.) Runs
 * under a second, most of them, cost no system call for it. Loop thread only. */
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
    if (w->state != WK_READY || w->run_id[0])
        return;
    int64_t wait = w->answered_ms + WK_LEFTOVER_GRACE_MS - now_ms();
    if (wait > 0) /* armed for an earlier answer (guard_answered): the grace runs from the last */
        lp_timer_start(&w->leftover_timer, wait, leftover_recheck, w);
    else if (settle_leftovers(w) == 0)
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

/* Sets the soft RLIMIT_CPU of the worker (seconds, rounded up); RLIM_INFINITY lifts it. */
static void set_cpu_limit(struct worker *w, rlim_t soft)
{
    struct rlimit rl = {soft, RLIM_INFINITY};
    if (prlimit(w->watch.pid, RLIMIT_CPU, &rl, NULL) == 0)
        return;
    /* agent code lowered its own hard limit: stay under it */
    if (prlimit(w->watch.pid, RLIMIT_CPU, NULL, &rl) == 0) {
        rl.rlim_cur = soft < rl.rlim_max ? soft : rl.rlim_max;
        if (prlimit(w->watch.pid, RLIMIT_CPU, &rl, NULL) == 0)
            return;
    }
    log_warn("worker", "worker %d: cannot set its CPU time limit: %s", w->slot, strerror(errno));
}

/* Once a second while a run lasts. The first look sets where the budget ends (taking that
 * first second as spent) and the kernel's limit there; later looks end a worker past it. A run
 * shorter than a second costs nothing here. */
static void cpu_check(void *ud)
{
    struct worker *w = ud;
    if (w->state != WK_BUSY || !w->run_id[0] || w->watch.pid <= 0 || !w->pid)
        return;
    int64_t early = w->cpu_until_ms < 0 ? w->cpu_look_ms - now_ms() : 0;
    if (early > 0) { /* armed for an earlier run (budget_cpu): this one has not lasted a second */
        lp_timer_start(&w->cpu_timer, early, cpu_check, w);
        return;
    }
    int64_t used = wkp_cpu_ms(&w->watch);
    if (used < 0)
        return;
    if (w->cpu_until_ms < 0) {
        int64_t left = w->cpu_budget_ms - WK_CPU_CHECK_MS;
        w->cpu_until_ms = used + (left > 0 ? left : 0);
        set_cpu_limit(w, (rlim_t)((w->cpu_until_ms + 999) / 1000));
        w->cpu_limited = 1;
    } else if (used > w->cpu_until_ms + WK_CPU_CHECK_MS) {
        free(w->kill_reason);
        w->kill_reason = xstrdup("the run used up its CPU time (its timeout_ms, or "
                                 "CODEMCP_RUN_CPU_MS): the Python worker was ended and restarted, "
                                 "and this session's variables were lost");
        log_warn("worker", "worker %d (pid %d): CPU time used up: ending it", w->slot, (int)w->pid);
        hard_kill(w);
        return;
    }
    lp_timer_start(&w->cpu_timer, WK_CPU_CHECK_MS, cpu_check, w);
}

static void budget_cpu(struct worker *w, int64_t cpu_ms)
{
    if (w->cpu_limited) { /* a long run's limit must not cut short a later run */
        set_cpu_limit(w, RLIM_INFINITY);
        w->cpu_limited = 0;
    }
    w->cpu_budget_ms = cpu_ms > (INT64_C(1) << 40) ? INT64_C(1) << 40 : cpu_ms;
    w->cpu_until_ms = -1;
    /* An armed timer is left be (most runs are shorter than it): cpu_check looks at
     * cpu_look_ms and waits for the rest. */
    w->cpu_look_ms = now_ms() + WK_CPU_CHECK_MS;
    if (cpu_ms > 0 && !lp_timer_armed(&w->cpu_timer))
        lp_timer_start(&w->cpu_timer, WK_CPU_CHECK_MS, cpu_check, w);
}

int guard_before_run(struct worker *w, int64_t cpu_ms)
{
    if (know_worker(w) < 0 || settle_leftovers(w) < 0)
        return -1;
    if (sandboxed)
        budget_cpu(w, cpu_ms);
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
    if (sandboxed && !lp_timer_armed(&w->leftover_timer)) /* else it waits for the rest */
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
