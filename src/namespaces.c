/* namespaces — see namespaces.h. Owns the table of kept namespaces and the eviction policy;
 * it never talks to a worker itself (the drop callback does) and never blocks. */
#include "namespaces.h"
#include "log.h"
#include "loop.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SWEEP_MS  10000
#define PRINCIPAL 64

struct ns {
    uint64_t session_id;
    char principal[PRINCIPAL];
    int live;          /* a namespace exists (a run started since the last drop) */
    int busy;          /* runs in flight */
    int64_t last_used; /* end of the last run (or start of the current one) */
    char note[200];    /* why its variables went away, for the next run */
};

static struct ns *tab;
static size_t n_tab, cap_tab;
static long max_live;
static int64_t idle_ms;
static void (*drop_cb)(uint64_t);
static struct lp_timer sweep_timer;
static int sweeping;

static struct ns *find(uint64_t id, int create)
{
    for (size_t i = 0; i < n_tab; i++)
        if (tab[i].session_id == id)
            return &tab[i];
    if (!create)
        return NULL;
    if (n_tab == cap_tab) {
        cap_tab = cap_tab ? cap_tab * 2 : 32;
        tab = xrealloc(tab, cap_tab * sizeof(*tab));
    }
    struct ns *e = &tab[n_tab++];
    memset(e, 0, sizeof(*e));
    e->session_id = id;
    snprintf(e->principal, sizeof(e->principal), "local");
    return e;
}

static void drop(struct ns *e, const char *why_log, const char *note)
{
    log_info("namespaces", "session %llu (%s): variables dropped (%s)",
             (unsigned long long)e->session_id, e->principal, why_log);
    e->live = 0;
    snprintf(e->note, sizeof(e->note), "%s", note);
    if (drop_cb)
        drop_cb(e->session_id);
}

static void idle_note(struct ns *e, int64_t idle)
{
    char note[200];
    if (idle >= 60000)
        snprintf(note, sizeof(note), "this session's variables were discarded after %lld min idle",
                 (long long)(idle / 60000));
    else
        snprintf(note, sizeof(note), "this session's variables were discarded after %lld s idle",
                 (long long)(idle / 1000));
    drop(e, "idle", note);
}

static size_t live_count(void)
{
    size_t n = 0;
    for (size_t i = 0; i < n_tab; i++)
        n += tab[i].live;
    return n;
}

static void sweep(void *ud)
{
    (void)ud;
    int64_t now = now_ms();
    for (size_t i = 0; i < n_tab; i++)
        if (tab[i].live && !tab[i].busy && now - tab[i].last_used >= idle_ms)
            idle_note(&tab[i], now - tab[i].last_used);
    sweeping = live_count() > 0;
    if (sweeping)
        lp_timer_start(&sweep_timer, idle_ms < SWEEP_MS ? idle_ms : SWEEP_MS, sweep, NULL);
}

void ns_init(void (*drop_fn)(uint64_t session_id))
{
    drop_cb = drop_fn;
    max_live = env_long("CODEMCP_MAX_NAMESPACES", 256);
    if (max_live < 1)
        max_live = 1;
    idle_ms = env_long("CODEMCP_NAMESPACE_IDLE_MS", 30L * 60 * 1000);
    if (idle_ms < 100)
        idle_ms = 100;
}

void ns_set_principal(uint64_t session_id, const char *principal)
{
    struct ns *e = find(session_id, 1);
    snprintf(e->principal, sizeof(e->principal), "%s",
             principal && *principal ? principal : "local");
}

/* The namespace to drop to make room for `who`, or NULL: the least recently used idle one of
 * the same principal, else another principal's that is past the idle TTL. */
static struct ns *victim(const struct ns *who)
{
    struct ns *same = NULL, *other = NULL;
    int64_t now = now_ms();
    for (size_t i = 0; i < n_tab; i++) {
        struct ns *e = &tab[i];
        if (!e->live || e->busy || e == who)
            continue;
        if (strcmp(e->principal, who->principal) == 0) {
            if (!same || e->last_used < same->last_used)
                same = e;
        } else if (now - e->last_used >= idle_ms && (!other || e->last_used < other->last_used)) {
            other = e;
        }
    }
    return same ? same : other;
}

int ns_run_start(uint64_t session_id, const char **note, char *err, size_t errlen)
{
    static char note_buf[200];
    struct ns *e = find(session_id, 1);
    note_buf[0] = '\0';
    if (!e->live) {
        while ((long)live_count() >= max_live) {
            struct ns *v = victim(e);
            if (!v) {
                snprintf(err, errlen,
                         "codemcp keeps the variables of at most %ld sessions "
                         "(CODEMCP_MAX_NAMESPACES) and none can be dropped now (they are in use "
                         "or belong to other principals and are not idle): end an unused session "
                         "or retry later",
                         max_live);
                log_warn("namespaces", "session %llu (%s): refused, %ld namespaces kept",
                         (unsigned long long)session_id, e->principal, max_live);
                return -1;
            }
            drop(v, "room was needed",
                 "this session's variables were discarded to make room: its principal has more "
                 "sessions with variables than CODEMCP_MAX_NAMESPACES allows (least recently "
                 "used first)");
        }
        e->live = 1;
        snprintf(note_buf, sizeof(note_buf), "%s", e->note);
        e->note[0] = '\0';
    }
    e->busy++;
    e->last_used = now_ms();
    if (!sweeping) {
        sweeping = 1;
        lp_timer_start(&sweep_timer, idle_ms < SWEEP_MS ? idle_ms : SWEEP_MS, sweep, NULL);
    }
    *note = note_buf;
    return 0;
}

void ns_run_end(uint64_t session_id)
{
    struct ns *e = find(session_id, 0);
    if (!e)
        return;
    if (e->busy > 0)
        e->busy--;
    e->last_used = now_ms();
}

void ns_forget(uint64_t session_id)
{
    struct ns *e = find(session_id, 0);
    if (e)
        *e = tab[--n_tab];
}

size_t ns_count(void)
{
    return live_count();
}

void ns_free_all(void)
{
    lp_timer_stop(&sweep_timer);
    sweeping = 0;
    free(tab);
    tab = NULL;
    n_tab = cap_tab = 0;
}
