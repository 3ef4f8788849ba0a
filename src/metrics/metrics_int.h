/* metrics_int — the counters metrics.c keeps and metrics_text.c renders. Internal to
 * src/metrics/: nothing else includes it. Loop thread only. */
#ifndef CODEMCP_METRICS_INT_H
#define CODEMCP_METRICS_INT_H

#include "metrics.h"

#include <stdint.h>

/* Label slots: the last slot of each table is "other" (what came after the table filled). */
#define MX_MAX_SERVERS    64
#define MX_MAX_PRINCIPALS 64
#define MX_MAX_TOOLS      1024 /* server/tool pairs; more are counted as their server's "other" */

#define MX_HIST_N 12
struct mx_hist {
    uint64_t bucket[MX_HIST_N]; /* observations <= bound[i] and > bound[i-1] (not cumulative) */
    uint64_t count;
    double sum; /* seconds */
};

struct mx_tool {
    int server; /* slot in mx.servers */
    char *name;
    uint32_t hash;
    uint64_t calls[MX_CALL_N];
};

struct mx_runs {
    uint64_t started;
    uint64_t finished[16]; /* by slot in run_kinds (metrics.c) */
};

struct mx_state {
    int on;
    struct mx_sources src;
    char *servers[MX_MAX_SERVERS]; /* slot MX_MAX_SERVERS is "other" */
    int n_servers;
    struct mx_hist latency[MX_MAX_SERVERS + 1];
    uint64_t tool_other[MX_MAX_SERVERS + 1][MX_CALL_N]; /* tools past MX_MAX_TOOLS */
    uint64_t tool_unknown[MX_CALL_N];                   /* MX_CALL_NOT_FOUND */
    struct mx_tool tools[MX_MAX_TOOLS];
    int n_tools;
    int16_t tool_slot[2 * MX_MAX_TOOLS]; /* open addressing: index into tools, -1 empty */
    char *principals[MX_MAX_PRINCIPALS];
    int n_principals;
    struct mx_runs runs[MX_MAX_PRINCIPALS + 1];
    struct mx_hist run_seconds;
    uint64_t rejected[MX_REJECT_N];
    uint64_t worker[MX_WORKER_N];
    uint64_t bytes[MX_TRANSPORT_N][2]; /* [in, out] */
    uint64_t http_status[600];
    uint64_t oauth_refresh[2]; /* [failed, ok] */
};

extern struct mx_state mx;
extern const double mx_latency_bounds[MX_HIST_N];
extern const double mx_run_bounds[MX_HIST_N];
/* The run outcome label of finished[i]; n in *count. */
const char *const *mx__run_kinds(int *count);

#endif
