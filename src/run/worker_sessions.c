/* worker_sessions — which session owns which worker slot (one interpreter per session), for
 * workers.c: the owner's slot, eviction of an idle session when another waits (namespaces.c
 * picks which: fair share between principals first), the idle timeout, the "variables were
 * discarded" notice, and the one warm spare.
 * Must not: start or kill processes itself beyond asking worker_spawn.c; order the runs that
 * wait for a slot (runs.c does: round-robin across principals). Loop thread only. */
#include "workers_int.h"
#include "log.h"
#include "namespaces.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* A session whose worker was ended while it lives on, and why (told on its next run). */
struct pin {
    uint64_t session_id;
    const char *why; /* static text */
};

static struct pin *pins;
static size_t n_pins, cap_pins;
/* Wakes the dispatcher when a slot's minimum hold ends while a run waits for one. */
static struct lp_timer hold_timer;

/* ---- sessions ----------------------------------------------------------------------------- */

/* One interpreter per session: a session owns its slot (and so its worker process) until it
 * closes, idles past CODEMCP_SESSION_IDLE_MS, or is evicted to make room for a run that waits
 * when every slot is taken: a session with no run on its worker, held for at least
 * CODEMCP_WORKER_MIN_HOLD_MS (so slots do not change hands on every run: a bounded number of
 * process starts per second), chosen by namespaces.c (a principal holding more slots than the
 * waiting one's gives way first, so no principal keeps every slot while another waits). Its
 * next run then gets a fresh worker and the answer carries a `notice` saying its variables were
 * discarded. A slot is never handed to another session while a run given it has not ended
 * (run_uses_slot), so no program can land in another session's interpreter. One unowned slot is
 * kept warm for the next new session. */

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

/* Ends the slot's process so that nothing of its session reaches the next owner; no run is
 * sent to it meanwhile (BUSY without a run until it is reaped and replaced). */
static void end_process(struct worker *w, const char *why)
{
    lp_timer_stop(&w->idle_timer);
    if (!has_process(w))
        return;
    free(w->kill_reason);
    w->kill_reason = xstrdup(why);
    /* Not READY again (a starting one must not connect and take the next owner's run), and its
     * exit is not a failed start. */
    if (w->state == WK_READY || w->state == WK_STARTING)
        w->state = WK_BUSY;
    w->ended_idle = 1;
    hard_kill(w);
}

/* Ends the worker of a session that keeps existing: its variables go. */
static void discard_session(struct worker *w, const char *why)
{
    remember_discarded(w->session, why);
    ns_home_lost(w->session); /* its namespaces' handles now say so */
    w->owned = 0;
    end_process(w, why);
}

/* A slot no run is on (its owner may lose it). */
static int slot_idle(int s)
{
    return workers[s].state != WK_BUSY && !wk__slot_in_use(s);
}

static void on_idle(void *ud)
{
    struct worker *w = ud;
    if (!w->owned || !slot_idle(w->slot))
        return;
    log_info("worker", "worker %d: session idle for %ld ms: ending its worker", w->slot,
             session_idle_ms);
    discard_session(w, "this session was idle longer than CODEMCP_SESSION_IDLE_MS, so its "
                       "Python worker was ended and its variables were discarded; this run "
                       "started from a fresh interpreter");
}

void touch(struct worker *w)
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
        if (w->owned || wk__slot_in_use(s))
            continue;
        if (w->state != WK_DOWN)
            return;
        if (down < 0 && !w->start_failure)
            down = s;
    }
    if (down >= 0 && !shutting_down)
        spawn(&workers[down]);
}

int wk_session_slot(uint64_t session_id)
{
    if (!n_workers)
        return 0;
    struct worker *w = slot_owner_of(session_id);
    return w ? w->slot : -1;
}

static void hold_over(void *ud)
{
    (void)ud;
    became_idle();
}

/* Evicts the idle session namespaces.c picks for session_id; NULL when none may go yet (then
 * the hold timer is armed for the first idle slot whose minimum hold ends). */
static struct worker *evict_for(uint64_t session_id)
{
    struct ns_holder *h = xcalloc((size_t)n_workers, sizeof(*h));
    int *slots = xcalloc((size_t)n_workers, sizeof(*slots)), k = 0;
    int64_t now = now_ms(), wake = -1;
    for (int s = 0; s < n_workers; s++) {
        if (!workers[s].owned)
            continue;
        int64_t held = now - workers[s].granted_ms;
        int idle = slot_idle(s);
        h[k] = (struct ns_holder){workers[s].session, idle && held >= min_hold_ms};
        slots[k++] = s;
        if (idle && held < min_hold_ms && (wake < 0 || min_hold_ms - held < wake))
            wake = min_hold_ms - held;
    }
    int v = ns_pick_home_victim(session_id, h, (size_t)k);
    struct worker *w = v < 0 ? NULL : &workers[slots[v]];
    free(h);
    free(slots);
    if (!w) {
        if (wake >= 0)
            lp_timer_start(&hold_timer, wake, hold_over, NULL);
        return NULL;
    }
    log_info("worker", "worker %d: evicting an idle session for a waiting one", w->slot);
    discard_session(w, "another session was waiting for a Python worker while all "
                       "CODEMCP_WORKERS were taken (each principal gets a fair share of them, "
                       "and an idle session keeps its worker for CODEMCP_WORKER_MIN_HOLD_MS at "
                       "least), so this idle session's worker was ended and its variables were "
                       "discarded (every namespace it held); this run started from a fresh "
                       "interpreter");
    return w;
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
            if (!workers[s].owned && workers[s].state == pref[k] && !wk__slot_in_use(s))
                w = &workers[s];
    if (!w && !(w = evict_for(session_id)))
        return -1; /* the run waits: a slot frees, or a hold ends (hold_timer) */
    w->owned = 1;
    w->session = session_id;
    w->granted_ms = now_ms();
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
