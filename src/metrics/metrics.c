/* metrics — see metrics.h. The counting half: label slots and the additions the call paths
 * make. Rendering is metrics_text.c's. Loop thread only; never blocks, and allocates only the
 * first time a label value is seen (bounded by the slot tables). */
#include "metrics_int.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

struct mx_state mx;

/* Seconds. Tool calls: a local server answers in well under 5 ms, a remote one in 50 ms to
 * seconds. Runs: a short program in tens of ms, up to CODEMCP_EXEC_TIMEOUT_MS's scale. */
const double mx_latency_bounds[MX_HIST_N] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                             0.1,   0.25,   0.5,   1,    2.5,   10};
const double mx_run_bounds[MX_HIST_N] = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120};

/* A run's outcome label: "ok", the runtime's error kinds, and "error" for anything else (an
 * envelope written by agent code may carry any error_kind). */
static const char *const run_kinds[] = {"ok",         "error",   "exception",
                                        "tool_error", "timeout", "cancelled",
                                        "validation", "syntax",  "worker"};
#define RUN_KIND_N          (int)(sizeof(run_kinds) / sizeof(run_kinds[0]))
#define RUN_KIND_ERROR      1
#define RUN_KIND_VALIDATION 6
#define RUN_KIND_SYNTAX     7

const char *const *mx__run_kinds(int *count)
{
    *count = RUN_KIND_N;
    return run_kinds;
}

void mx_init(int on)
{
    mx.on = on;
    memset(mx.tool_slot, 0xff, sizeof(mx.tool_slot)); /* -1: empty */
}

int mx_enabled(void)
{
    return mx.on;
}

void mx_set_sources(const struct mx_sources *s)
{
    mx.src = *s;
}

void mx_free(void)
{
    for (int i = 0; i < mx.n_servers; i++)
        free(mx.servers[i]);
    for (int i = 0; i < mx.n_tools; i++)
        free(mx.tools[i].name);
    for (int i = 0; i < mx.n_principals; i++)
        free(mx.principals[i]);
    int on = mx.on;
    memset(&mx, 0, sizeof(mx));
    mx_init(on);
}

/* ---- label slots ----------------------------------------------------------------------------- */

/* The slot of name in a table of max names (n of them used); a new one while there is room;
 * else max, the "other" slot. A linear scan: servers and principals are few and
 * operator-made. */
static int slot_of(char **names, int *n, int max, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    if (*n == max)
        return max;
    names[*n] = xstrdup(name);
    return (*n)++;
}

static int server_slot(const char *server)
{
    return slot_of(mx.servers, &mx.n_servers, MX_MAX_SERVERS, server);
}

static uint32_t hash_pair(int server, const char *tool)
{
    uint32_t h = 2166136261u ^ (uint32_t)server;
    for (const unsigned char *p = (const unsigned char *)tool; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h;
}

/* The counters of server/tool: its entry, or its server's "other" row once the table is full. */
static uint64_t *tool_counters(const char *server, const char *tool)
{
    int s = server_slot(server);
    if (s == MX_MAX_SERVERS)
        return mx.tool_other[s];
    uint32_t h = hash_pair(s, tool);
    size_t mask = sizeof(mx.tool_slot) / sizeof(mx.tool_slot[0]) - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        int16_t k = mx.tool_slot[i];
        if (k < 0)
            break;
        struct mx_tool *t = &mx.tools[k];
        if (t->hash == h && t->server == s && strcmp(t->name, tool) == 0)
            return t->calls;
    } /* ends: the table has twice MX_MAX_TOOLS places, so one is always empty */
    if (mx.n_tools == MX_MAX_TOOLS)
        return mx.tool_other[s];
    struct mx_tool *t = &mx.tools[mx.n_tools];
    t->server = s;
    t->name = xstrdup(tool);
    t->hash = h;
    for (size_t i = h & mask;; i = (i + 1) & mask)
        if (mx.tool_slot[i] < 0) { /* the table has twice the entries' room: one is free */
            mx.tool_slot[i] = (int16_t)mx.n_tools++;
            break;
        }
    return t->calls;
}

static void observe(struct mx_hist *h, const double *bounds, double seconds)
{
    int i = 0;
    while (i < MX_HIST_N && seconds > bounds[i])
        i++;
    if (i < MX_HIST_N)
        h->bucket[i]++;
    h->count++;
    h->sum += seconds;
}

/* ---- counting -------------------------------------------------------------------------------- */

void mx_tool_call(const char *server, const char *tool, enum mx_call_outcome outcome)
{
    if (!mx.on || (unsigned)outcome >= MX_CALL_N)
        return;
    if (outcome == MX_CALL_NOT_FOUND || !server || !tool)
        mx.tool_unknown[outcome]++;
    else
        tool_counters(server, tool)[outcome]++;
}

int64_t mx_clock(void)
{
    return mx.on ? now_us() : 0;
}

void mx_upstream_latency(const char *server, int64_t sent, int64_t now)
{
    if (!mx.on || !server)
        return;
    observe(&mx.latency[server_slot(server)], mx_latency_bounds, (double)(now - sent) / 1e6);
}

static struct mx_runs *runs_of(const char *principal)
{
    const char *p = principal && *principal ? principal : "none";
    return &mx.runs[slot_of(mx.principals, &mx.n_principals, MX_MAX_PRINCIPALS, p)];
}

void mx_run_started(const char *principal)
{
    if (mx.on)
        runs_of(principal)->started++;
}

void mx_run_finished(const char *principal, const char *kind, int64_t ms)
{
    if (!mx.on)
        return;
    int k = 0;
    while (kind && k < RUN_KIND_N && strcmp(run_kinds[k], kind) != 0)
        k++;
    if (!kind || k == RUN_KIND_N)
        k = RUN_KIND_ERROR;
    runs_of(principal)->finished[k]++;
    observe(&mx.run_seconds, mx_run_bounds, (double)ms / 1e3);
    if (k == RUN_KIND_VALIDATION)
        mx.rejected[MX_REJECT_PROGRAM]++;
    else if (k == RUN_KIND_SYNTAX)
        mx.rejected[MX_REJECT_SYNTAX]++;
}

void mx_rejected(enum mx_reject kind)
{
    if (mx.on && (unsigned)kind < MX_REJECT_N)
        mx.rejected[kind]++;
}

void mx_worker(enum mx_worker_event e)
{
    if (mx.on && (unsigned)e < MX_WORKER_N)
        mx.worker[e]++;
}

void mx_client_bytes(enum mx_transport t, size_t in, size_t out)
{
    if (!mx.on || (unsigned)t >= MX_TRANSPORT_N)
        return;
    mx.bytes[t][0] += in;
    mx.bytes[t][1] += out;
}

void mx_http_status(int status)
{
    if (mx.on && status >= 100 && status < 600)
        mx.http_status[status]++;
}

void mx_oauth_refresh(int ok)
{
    if (mx.on)
        mx.oauth_refresh[ok ? 1 : 0]++;
}
