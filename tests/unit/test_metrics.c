/* test_metrics — the metrics module (src/metrics/) through its text: counts by label, the
 * label bounds ("other" past the slots, "unknown" for names the catalog does not list),
 * escaping of label values, cumulative histogram buckets, and CODEMCP_METRICS=off. */
#include "check.h"
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of series (its whole text up to the value) in text, or -1 when absent. */
static double value_of(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; (p = strstr(p, series)) != NULL; p += n)
        if ((p == text || p[-1] == '\n') && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return -1;
}

static size_t lines_starting(const char *text, const char *prefix)
{
    size_t count = 0, n = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        count += strncmp(p, prefix, n) == 0;
    return count;
}

static int upstream_at(size_t i, const char **name, const char **state)
{
    static const char *const names[] = {"gh", "we\"ird\\name\nx"};
    if (i >= 2)
        return -1;
    *name = names[i];
    *state = i ? "failed" : "ready";
    return 0;
}

static long three(void)
{
    return 3;
}

static void counts_and_labels(void)
{
    mx_init(1);
    mx_set_sources(&(struct mx_sources){.sessions = three, .upstream_at = upstream_at});
    mx_tool_call("gh", "search", MX_CALL_OK);
    mx_tool_call("gh", "search", MX_CALL_OK);
    mx_tool_call("gh", "search", MX_CALL_DENIED);
    mx_tool_call("gh", "create", MX_CALL_DRY_RUN);
    mx_tool_call(NULL, "made-up", MX_CALL_NOT_FOUND);
    mx_tool_call("gh", "made-up", MX_CALL_NOT_FOUND);
    mx_run_started("alice");
    mx_run_finished("alice", "ok", 40);
    mx_run_started("alice");
    mx_run_finished("alice", "validation", 3);
    mx_run_started("bob");
    mx_run_finished("bob", "something agent code wrote", 2000);
    mx_rejected(MX_REJECT_ARGUMENTS);
    mx_upstream_latency("gh", 0, 3000);     /* 3 ms */
    mx_upstream_latency("gh", 0, 20000000); /* 20 s: past the last bound */
    mx_http_status(200);
    mx_http_status(401);
    mx_http_status(999); /* not a status: ignored */
    mx_oauth_refresh(1);
    mx_oauth_refresh(0);
    mx_client_bytes(MX_TRANSPORT_HTTP, 10, 32);
    char *t = mx_render();
    CHECK(t != NULL, "rendered");
    CHECK(value_of(t, "codemcp_tool_calls_total{server=\"gh\",tool=\"search\",outcome=\"ok\"}") ==
              2,
          "two ok calls");
    CHECK(value_of(
              t, "codemcp_tool_calls_total{server=\"gh\",tool=\"search\",outcome=\"denied\"}") == 1,
          "a denied call");
    CHECK(value_of(t,
                   "codemcp_tool_calls_total{server=\"gh\",tool=\"create\",outcome=\"dry-run\"}") ==
              1,
          "a dry-run call");
    CHECK(value_of(t, "codemcp_tool_calls_total{server=\"unknown\",tool=\"unknown\","
                      "outcome=\"not_found\"}") == 2,
          "names not in the catalog are no labels");
    CHECK(!strstr(t, "made-up"), "a made-up tool name appears nowhere");
    CHECK(value_of(t, "codemcp_runs_started_total{principal=\"alice\"}") == 2, "alice's runs");
    CHECK(value_of(t, "codemcp_runs_finished_total{principal=\"alice\",outcome=\"validation\"}") ==
              1,
          "a validation outcome");
    CHECK(value_of(t, "codemcp_runs_finished_total{principal=\"bob\",outcome=\"error\"}") == 1,
          "an unknown error kind counts as error");
    CHECK(!strstr(t, "something agent code wrote"), "an error kind from the envelope is no label");
    CHECK(value_of(t, "codemcp_validation_rejections_total{kind=\"program\"}") == 1,
          "the validation run is a rejection");
    CHECK(value_of(t, "codemcp_validation_rejections_total{kind=\"arguments\"}") == 1,
          "an arguments rejection");
    CHECK(value_of(t, "codemcp_run_duration_seconds_bucket{le=\"0.01\"}") == 1 &&
              value_of(t, "codemcp_run_duration_seconds_bucket{le=\"0.05\"}") == 2 &&
              value_of(t, "codemcp_run_duration_seconds_bucket{le=\"2.5\"}") == 3 &&
              value_of(t, "codemcp_run_duration_seconds_bucket{le=\"+Inf\"}") == 3 &&
              value_of(t, "codemcp_run_duration_seconds_count") == 3,
          "run duration buckets are cumulative");
    CHECK(
        value_of(t, "codemcp_upstream_call_duration_seconds_bucket{server=\"gh\",le=\"0.005\"}") ==
                1 &&
            value_of(t, "codemcp_upstream_call_duration_seconds_bucket{server=\"gh\",le=\"10\"}") ==
                1 &&
            value_of(t, "codemcp_upstream_call_duration_seconds_bucket{server=\"gh\","
                        "le=\"+Inf\"}") == 2 &&
            value_of(t, "codemcp_upstream_call_duration_seconds_count{server=\"gh\"}") == 2,
        "an observation past the last bound is only in +Inf");
    CHECK(value_of(t, "codemcp_http_requests_total{code=\"401\"}") == 1 &&
              lines_starting(t, "codemcp_http_requests_total{") == 2,
          "statuses, an invalid one ignored");
    CHECK(value_of(t, "codemcp_oauth_refreshes_total") == 2 &&
              value_of(t, "codemcp_oauth_refresh_failures_total") == 1,
          "refreshes and failures");
    CHECK(value_of(t, "codemcp_client_bytes_total{transport=\"http\",direction=\"out\"}") == 32,
          "bytes out");
    CHECK(value_of(t, "codemcp_sessions") == 3, "a gauge from its source");
    CHECK(value_of(
              t, "codemcp_upstream_state{server=\"we\\\"ird\\\\name\\nx\",state=\"failed\"}") == 1,
          "label values escaped: quote, backslash, newline");
    CHECK(value_of(t, "codemcp_upstream_connected{server=\"gh\"}") == 1, "connected");
    CHECK(value_of(t, "process_resident_memory_bytes") > 0, "RSS from /proc");
    CHECK(lines_starting(t, "# TYPE ") == lines_starting(t, "# HELP "), "a HELP for every TYPE");
    free(t);
    mx_free();
}

static void bounded(void)
{
    mx_init(1);
    char name[64];
    for (int i = 0; i < 100; i++) { /* servers past the 64 slots */
        snprintf(name, sizeof(name), "s%d", i);
        mx_tool_call(name, "t", MX_CALL_OK);
        mx_upstream_latency(name, 0, 1000);
    }
    for (int i = 0; i < 3000; i++) { /* tools past the 1,024 slots */
        snprintf(name, sizeof(name), "tool%d", i);
        mx_tool_call("s0", name, MX_CALL_OK);
    }
    for (int i = 0; i < 100; i++) { /* principals past the 64 slots */
        snprintf(name, sizeof(name), "p%d", i);
        mx_run_started(name);
        mx_run_finished(name, "ok", 1);
    }
    char *t = mx_render();
    size_t calls = lines_starting(t, "codemcp_tool_calls_total{");
    CHECK(calls <= 1024 + 65 + 1, "tool call series bounded (%zu)", calls);
    CHECK(value_of(t, "codemcp_tool_calls_total{server=\"other\",tool=\"other\",outcome=\"ok\"}") ==
              36,
          "the 36 servers past the slots are one \"other\"");
    double other_tools =
        value_of(t, "codemcp_tool_calls_total{server=\"s0\",tool=\"other\",outcome=\"ok\"}");
    /* s0's row "t" and the first of its tools took slots along with the 63 other servers' "t" */
    CHECK(other_tools == 3000 - (1024 - 64), "s0's tools past the slots are its \"other\" (%g)",
          other_tools);
    CHECK(lines_starting(t, "codemcp_runs_started_total{") == 65, "64 principals and \"other\"");
    CHECK(value_of(t, "codemcp_runs_started_total{principal=\"other\"}") == 36, "36 are other");
    CHECK(lines_starting(t, "codemcp_upstream_call_duration_seconds_count{") == 65,
          "latency series bounded");
    free(t);
    mx_free();
}

static void off(void)
{
    mx_init(0);
    mx_tool_call("gh", "search", MX_CALL_OK);
    mx_run_started("alice");
    CHECK(!mx_enabled() && mx_render() == NULL, "off: nothing rendered");
    mx_init(1);
    char *t = mx_render();
    CHECK(value_of(t, "codemcp_tool_calls_total{server=\"gh\",tool=\"search\",outcome=\"ok\"}") ==
              -1,
          "off: nothing was counted");
    free(t);
    mx_free();
}

int main(void)
{
    counts_and_labels();
    bounded();
    off();
    return CHECK_DONE();
}
