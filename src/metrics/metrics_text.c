/* metrics_text — the Prometheus text exposition format (version 0.0.4) of what metrics.c
 * counts, the gauges read through struct mx_sources, and the process's own CPU and memory
 * (the client libraries' standard process_* names, from /proc/self). Loop thread only; a
 * render costs O(series) and one /proc read, and is made only when asked for. */
#include "metrics_int.h"
#include "util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const call_outcomes[MX_CALL_N] = {[MX_CALL_OK] = "ok",
                                                     [MX_CALL_IS_ERROR] = "isError",
                                                     [MX_CALL_ERROR] = "error",
                                                     [MX_CALL_TIMEOUT] = "timeout",
                                                     [MX_CALL_DENIED] = "denied",
                                                     [MX_CALL_DRY_RUN] = "dry-run",
                                                     [MX_CALL_NOT_FOUND] = "not_found",
                                                     [MX_CALL_CANCELLED] = "cancelled"};
static const char *const reject_kinds[MX_REJECT_N] = {[MX_REJECT_PROGRAM] = "program",
                                                      [MX_REJECT_SYNTAX] = "syntax",
                                                      [MX_REJECT_ARGUMENTS] = "arguments",
                                                      [MX_REJECT_CALL] = "call_params"};
static const char *const transports[MX_TRANSPORT_N] = {
    [MX_TRANSPORT_STDIO] = "stdio", [MX_TRANSPORT_HTTP] = "http"};

static void family(struct buf *b, const char *name, const char *type, const char *help)
{
    buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value with \, " and newline escaped, as the format requires. */
static void label(struct buf *b, const char *v)
{
    const char *run = v;
    for (const char *p = v;; p++) {
        if (*p && *p != '\\' && *p != '"' && *p != '\n')
            continue;
        buf_append(b, run, (size_t)(p - run));
        if (!*p)
            break;
        buf_append(b, *p == '\n' ? "\\n" : *p == '"' ? "\\\"" : "\\\\", 2);
        run = p + 1;
    }
}

static const char *server_name(int slot)
{
    return slot < mx.n_servers ? mx.servers[slot] : "other";
}

static const char *principal_name(int slot)
{
    return slot < mx.n_principals ? mx.principals[slot] : "other";
}

/* One histogram's series; labels: "" or `name="value",` pairs ending in a comma, already
 * escaped (the caller's label()). */
static void histogram(struct buf *b, const char *name, const char *labels, const struct mx_hist *h,
                      const double *bounds)
{
    uint64_t cum = 0;
    for (int i = 0; i < MX_HIST_N; i++) {
        cum += h->bucket[i];
        buf_printf(b, "%s_bucket{%sle=\"%g\"} %llu\n", name, labels, bounds[i],
                   (unsigned long long)cum);
    }
    size_t n = strlen(labels);
    buf_printf(b, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, labels, (unsigned long long)h->count);
    buf_printf(b, "%s_sum%s%.*s%s %.6f\n", name, n ? "{" : "", n ? (int)n - 1 : 0, labels,
               n ? "}" : "", h->sum);
    buf_printf(b, "%s_count%s%.*s%s %llu\n", name, n ? "{" : "", n ? (int)n - 1 : 0, labels,
               n ? "}" : "", (unsigned long long)h->count);
}

static void tool_row(struct buf *b, const char *server, const char *tool, const uint64_t *calls)
{
    for (int o = 0; o < MX_CALL_N; o++) {
        if (!calls[o])
            continue;
        buf_appends(b, "codemcp_tool_calls_total{server=\"");
        label(b, server);
        buf_appends(b, "\",tool=\"");
        label(b, tool);
        buf_printf(b, "\",outcome=\"%s\"} %llu\n", call_outcomes[o], (unsigned long long)calls[o]);
    }
}

static int any(const uint64_t *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i])
            return 1;
    return 0;
}

static void render_calls(struct buf *b)
{
    family(b, "codemcp_tool_calls_total", "counter",
           "Tool calls programs made, by server, tool and outcome.");
    for (int i = 0; i < mx.n_tools; i++)
        tool_row(b, server_name(mx.tools[i].server), mx.tools[i].name, mx.tools[i].calls);
    for (int s = 0; s <= MX_MAX_SERVERS; s++)
        if (any(mx.tool_other[s], MX_CALL_N))
            tool_row(b, server_name(s), "other", mx.tool_other[s]);
    tool_row(b, "unknown", "unknown", mx.tool_unknown);

    family(b, "codemcp_upstream_call_duration_seconds", "histogram",
           "Time from sending a tools/call to an upstream server to its answer.");
    struct buf lb = {0};
    for (int s = 0; s <= MX_MAX_SERVERS; s++) {
        if (!mx.latency[s].count)
            continue;
        buf_reset(&lb);
        buf_appends(&lb, "server=\"");
        label(&lb, server_name(s));
        buf_appends(&lb, "\",");
        histogram(b, "codemcp_upstream_call_duration_seconds", lb.data, &mx.latency[s],
                  mx_latency_bounds);
    }
    buf_free(&lb);
}

static void render_runs(struct buf *b)
{
    int nk;
    const char *const *kinds = mx__run_kinds(&nk);
    family(b, "codemcp_runs_started_total", "counter",
           "execute_python runs started, by principal.");
    for (int p = 0; p <= MX_MAX_PRINCIPALS; p++) {
        if (p < MX_MAX_PRINCIPALS ? p >= mx.n_principals : !mx.runs[p].started)
            continue;
        buf_appends(b, "codemcp_runs_started_total{principal=\"");
        label(b, principal_name(p));
        buf_printf(b, "\"} %llu\n", (unsigned long long)mx.runs[p].started);
    }
    family(b, "codemcp_runs_finished_total", "counter",
           "execute_python runs finished, by principal and outcome (ok or the error kind).");
    for (int p = 0; p <= MX_MAX_PRINCIPALS; p++) {
        for (int k = 0; k < nk; k++) {
            if (!mx.runs[p].finished[k])
                continue;
            buf_appends(b, "codemcp_runs_finished_total{principal=\"");
            label(b, principal_name(p));
            buf_printf(b, "\",outcome=\"%s\"} %llu\n", kinds[k],
                       (unsigned long long)mx.runs[p].finished[k]);
        }
    }
    family(b, "codemcp_run_duration_seconds", "histogram",
           "Wall time of execute_python runs, from submission to answer.");
    histogram(b, "codemcp_run_duration_seconds", "", &mx.run_seconds, mx_run_bounds);
    family(b, "codemcp_validation_rejections_total", "counter",
           "Programs and requests refused before they ran, by kind.");
    for (int k = 0; k < MX_REJECT_N; k++)
        buf_printf(b, "codemcp_validation_rejections_total{kind=\"%s\"} %llu\n", reject_kinds[k],
                   (unsigned long long)mx.rejected[k]);
}

static void counter(struct buf *b, const char *name, const char *help, uint64_t v)
{
    family(b, name, "counter", help);
    buf_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

static void gauge_from(struct buf *b, const char *name, const char *help, long (*fn)(void))
{
    if (!fn)
        return;
    family(b, name, "gauge", help);
    buf_printf(b, "%s %ld\n", name, fn());
}

/* The OTLP exporter's counts: a collector that is down shows here, not only in the log. */
static void render_traces(struct buf *b)
{
    if (!mx.src.traces_on || !mx.src.traces_on())
        return;
    if (mx.src.spans_exported)
        counter(b, "codemcp_trace_spans_exported_total",
                "Spans the OTLP exporter sent to the collector.", mx.src.spans_exported());
    if (mx.src.spans_dropped)
        counter(b, "codemcp_trace_spans_dropped_total",
                "Spans dropped: the export queue was full or the collector refused or was down.",
                mx.src.spans_dropped());
}

static void render_state(struct buf *b)
{
    render_traces(b);
    gauge_from(b, "codemcp_sessions", "MCP sessions open.", mx.src.sessions);
    gauge_from(b, "codemcp_namespaces", "Namespaces (sets of a program's variables) alive.",
               mx.src.namespaces);
    gauge_from(b, "codemcp_workers", "Worker processes alive.", mx.src.workers_alive);
    counter(b, "codemcp_worker_spawns_total", "Worker process starts.", mx.worker[MX_WORKER_SPAWN]);
    counter(b, "codemcp_worker_crashes_total", "Worker processes that ended without being asked.",
            mx.worker[MX_WORKER_CRASH]);
    counter(b, "codemcp_worker_recycles_total",
            "Worker processes replaced because a run left threads running.",
            mx.worker[MX_WORKER_RECYCLE]);
    if (!mx.src.upstream_at)
        return;
    family(b, "codemcp_upstream_connected", "gauge",
           "1 when the upstream server is connected and ready, else 0.");
    const char *name, *state;
    for (size_t i = 0; mx.src.upstream_at(i, &name, &state) == 0; i++) {
        buf_appends(b, "codemcp_upstream_connected{server=\"");
        label(b, name);
        buf_printf(b, "\"} %d\n", strcmp(state, "ready") == 0);
    }
    family(b, "codemcp_upstream_state", "gauge",
           "The upstream server's connection state: 1 for its current state.");
    for (size_t i = 0; mx.src.upstream_at(i, &name, &state) == 0; i++) {
        buf_appends(b, "codemcp_upstream_state{server=\"");
        label(b, name);
        buf_appends(b, "\",state=\"");
        label(b, state);
        buf_appends(b, "\"} 1\n");
    }
}

static void render_io(struct buf *b)
{
    family(b, "codemcp_client_bytes_total", "counter",
           "Bytes of MCP traffic with clients, by transport and direction.");
    for (int t = 0; t < MX_TRANSPORT_N; t++)
        for (int d = 0; d < 2; d++)
            buf_printf(b, "codemcp_client_bytes_total{transport=\"%s\",direction=\"%s\"} %llu\n",
                       transports[t], d ? "out" : "in", (unsigned long long)mx.bytes[t][d]);
    family(b, "codemcp_http_requests_total", "counter",
           "HTTP responses of the front (MCP, SSE and /metrics), by status code.");
    for (int s = 100; s < 600; s++)
        if (mx.http_status[s])
            buf_printf(b, "codemcp_http_requests_total{code=\"%d\"} %llu\n", s,
                       (unsigned long long)mx.http_status[s]);
    counter(b, "codemcp_oauth_refreshes_total", "OAuth token refreshes for remote upstreams.",
            mx.oauth_refresh[0] + mx.oauth_refresh[1]);
    counter(b, "codemcp_oauth_refresh_failures_total", "OAuth token refreshes that failed.",
            mx.oauth_refresh[0]);
}

/* ---- the process -------------------------------------------------------------------------- */

static double boot_time(void)
{
    FILE *f = fopen("/proc/stat", "r");
    char line[256];
    double bt = 0;
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "btime ", 6) == 0) {
            bt = strtod(line + 6, NULL);
            break;
        }
    if (f)
        fclose(f);
    return bt;
}

static long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    long n = 0;
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n - 3; /* ".", ".." and the directory's own descriptor */
}

static void render_process(struct buf *b)
{
    char text[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
    if (f)
        fclose(f);
    text[n] = '\0';
    const char *p = strrchr(text, ')'); /* the command name may hold spaces */
    unsigned long long utime, stime, start, vsize;
    long rss;
    /* fields 3.. after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt
     * cmajflt utime stime cutime cstime priority nice threads itrealvalue starttime vsize rss */
    if (!p || sscanf(p + 1,
                     " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d "
                     "%*d %llu %llu %ld",
                     &utime, &stime, &start, &vsize, &rss) != 5)
        return;
    double tick = (double)sysconf(_SC_CLK_TCK);
    family(b, "process_cpu_seconds_total", "counter", "User and system CPU time of the gateway.");
    buf_printf(b, "process_cpu_seconds_total %.2f\n", (double)(utime + stime) / tick);
    family(b, "process_resident_memory_bytes", "gauge", "Resident memory of the gateway.");
    buf_printf(b, "process_resident_memory_bytes %lld\n",
               (long long)rss * (long long)sysconf(_SC_PAGESIZE));
    family(b, "process_virtual_memory_bytes", "gauge", "Virtual memory of the gateway.");
    buf_printf(b, "process_virtual_memory_bytes %llu\n", vsize);
    family(b, "process_start_time_seconds", "gauge", "When the gateway started, Unix time.");
    buf_printf(b, "process_start_time_seconds %.2f\n", boot_time() + (double)start / tick);
    family(b, "process_open_fds", "gauge", "Open file descriptors of the gateway.");
    buf_printf(b, "process_open_fds %ld\n", open_fds());
}

char *mx_render(void)
{
    if (!mx.on)
        return NULL;
    struct buf b = {0};
    render_runs(&b);
    render_calls(&b);
    render_state(&b);
    render_io(&b);
    render_process(&b);
    return buf_steal(&b);
}
