/* calls_gate — what the calls in flight hold: each run's gate (its calls in flight and the
 * ones waiting for a place, oldest first) and each principal's hold (argument bytes, reads in
 * flight, result bytes queued to its workers). calls.c decides; this file only counts, so every
 * cap (calls.h) is checked against one set of numbers. Loop thread only. */
#include "calls_int.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A principal_hold at zero is kept (a principal calling one tool after another would
 * allocate one per call) unless more than HELD_KEPT principals have one. */
#define HELD_KEPT 16

static struct principal_hold *held_by;
static size_t n_held_by;
struct gate *calls__gates;

struct principal_hold *calls__held_find(const char *principal)
{
    struct principal_hold *h = held_by;
    while (h && strcmp(h->principal, principal) != 0)
        h = h->next;
    return h;
}

struct principal_hold *calls__held_get(const char *principal)
{
    struct principal_hold *h = calls__held_find(principal);
    if (!h) {
        h = xcalloc(1, sizeof(*h));
        h->principal = xstrdup(principal);
        h->next = held_by;
        held_by = h;
        n_held_by++;
    }
    return h;
}

/* Frees h when it holds nothing and enough others are kept. */
void calls__held_drop_idle(struct principal_hold *h)
{
    if (h->bytes || h->reads || h->n_conns || n_held_by <= HELD_KEPT)
        return;
    LIST_UNLINK(&held_by, h);
    free(h->conns);
    free(h->principal);
    free(h);
    n_held_by--;
}

/* Returns call's bytes to its run and principal. */
void calls__held_release(struct call *call)
{
    if (!call->held)
        return;
    struct gate *g = calls__gate_find(call->run_id);
    if (g)
        g->held -= call->held < g->held ? call->held : g->held;
    struct principal_hold *h = calls__held_find(call->principal);
    if (h) {
        h->bytes -= call->held < h->bytes ? call->held : h->bytes;
        calls__held_drop_idle(h);
    }
    call->held = 0;
}

/* Counts call's argument bytes against its run (g) and principal: 0, or -1 with why when
 * either would pass its cap (calls_hooks.max_run_bytes, max_principal_bytes). */
int calls__held_take(struct call *call, struct gate *g, char *why, size_t cap)
{
    size_t n = call->args_len;
    const char *p = call->principal;
    struct principal_hold *h = calls__held_find(p);
    size_t mine = h ? h->bytes : 0;
    if (g->held + n > calls__hooks.max_run_bytes || mine + n > calls__hooks.max_principal_bytes) {
        snprintf(why, cap,
                 "the gateway holds %zu bytes of arguments of this run's calls and %zu of its "
                 "principal's (CODEMCP_MAX_ARGS_BYTES_PER_RUN %zu, _PER_PRINCIPAL %zu): wait for "
                 "earlier calls before starting more",
                 g->held, mine, calls__hooks.max_run_bytes, calls__hooks.max_principal_bytes);
        return -1;
    }
    if (!h) /* one list walk when the principal has a hold already (the usual case) */
        h = calls__held_get(p);
    h->bytes += n;
    g->held += n;
    call->held = n;
    return 0;
}

/* Bytes queued to h's worker connections and not yet written; connections that wrote all
 * theirs are forgotten. */
static size_t results_held(struct principal_hold *h)
{
    size_t sum = 0;
    for (size_t i = 0; i < h->n_conns;) {
        size_t n = calls__hooks.pending(h->conns[i]);
        if (n) {
            sum += n;
            i++;
        } else {
            h->conns[i] = h->conns[--h->n_conns];
        }
    }
    return sum;
}

/* Whether a result of len bytes of call may be queued to its worker: 0 (its connection now
 * counted for its principal), or -1 with why when the principal's workers have not read
 * calls__hooks.max_principal_results bytes queued to them. */
int calls__results_room(const struct call *call, size_t len, char *why, size_t cap)
{
    if (!calls__hooks.pending || !calls__hooks.max_principal_results)
        return 0;
    struct principal_hold *h = calls__held_get(call->principal);
    size_t held = results_held(h);
    if (held + len <= calls__hooks.max_principal_results) {
        int known = 0;
        for (size_t i = 0; i < h->n_conns && !known; i++)
            known = h->conns[i] == call->conn_id;
        if (!known) {
            if (h->n_conns == h->cap_conns) {
                h->cap_conns = h->cap_conns ? h->cap_conns * 2 : 8;
                h->conns = xrealloc(h->conns, h->cap_conns * sizeof(*h->conns));
            }
            h->conns[h->n_conns++] = call->conn_id;
        }
        return 0;
    }
    snprintf(why, cap,
             "the result of %.200s was dropped: this principal's Python workers have not read "
             "%zu bytes the gateway queued to them (CODEMCP_MAX_RESULT_BYTES_PER_PRINCIPAL %zu); "
             "the call itself was made",
             call->fn ? call->fn : call->tool, held, calls__hooks.max_principal_results);
    calls__held_drop_idle(h);
    return -1;
}

struct gate *calls__gate_find(const char *run_id)
{
    struct gate *g = calls__gates;
    while (g && strcmp(g->run_id, run_id) != 0)
        g = g->next;
    return g;
}

struct gate *calls__gate_get(const char *run_id)
{
    struct gate *g = calls__gate_find(run_id);
    if (!g) {
        g = xcalloc(1, sizeof(*g));
        g->run_id = xstrdup(run_id);
        g->next = calls__gates;
        calls__gates = g;
    }
    return g;
}

/* Frees g once nothing of its run is in flight or waiting. */
void calls__gate_release(struct gate *g)
{
    if (g->in_flight > 0 || g->head)
        return;
    LIST_UNLINK(&calls__gates, g);
    free(g->run_id);
    free(g);
}

struct call *calls__gate_pop(struct gate *g)
{
    struct call *c = g->head;
    if (c) {
        g->head = c->next;
        if (!g->head)
            g->tail = NULL;
        c->next = NULL;
    }
    return c;
}

int calls__gate_full(const struct gate *g)
{
    return calls__hooks.max_per_run > 0 && g->in_flight >= calls__hooks.max_per_run;
}

void calls__held_free_all(void)
{
    while (held_by) {
        struct principal_hold *h = held_by;
        held_by = h->next;
        free(h->conns);
        free(h->principal);
        free(h);
    }
    n_held_by = 0;
}
