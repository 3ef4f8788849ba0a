/* health — see health.h. The drain polls busy() every DRAIN_POLL_MS: runs end on their own
 * schedule (a worker's answer, a timeout), and polling keeps this module free of hooks into
 * the run pipeline. */
#include "health.h"
#include "log.h"
#include "loop.h"
#include "util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DRAIN_POLL_MS 50
#define MODULE        "health"

static struct {
    char name[32];
    health_check_fn fn;
    void *ud;
    int required;
} checks[HEALTH_MAX_CHECKS];
static size_t n_checks;

static int draining;
static int64_t drain_until;
static size_t (*drain_busy)(void);
static void (*drain_done)(void);
static struct lp_timer drain_timer;

void health_add_check(const char *name, health_check_fn fn, void *ud, int required)
{
    if (n_checks == HEALTH_MAX_CHECKS) {
        log_error(MODULE, "too many health checks: '%s' not added", name);
        return;
    }
    snprintf(checks[n_checks].name, sizeof(checks[n_checks].name), "%s", name);
    checks[n_checks].fn = fn;
    checks[n_checks].ud = ud;
    checks[n_checks].required = required;
    n_checks++;
}

int health_ready(struct buf *out)
{
    json_t *failing = json_object(), *degraded = json_object();
    if (draining)
        json_object_set_new(failing, "drain", json_string("draining: shutting down"));
    for (size_t i = 0; i < n_checks; i++) {
        char why[160] = "";
        if (!checks[i].fn(checks[i].ud, why, sizeof(why)))
            json_object_set_new(checks[i].required ? failing : degraded, checks[i].name,
                                json_string(why[0] ? why : "failing"));
    }
    int ready = json_object_size(failing) == 0;
    json_t *body = json_pack("{s:s}", "status", ready ? "ready" : "not ready");
    if (!ready)
        json_object_set(body, "failing", failing);
    if (json_object_size(degraded))
        json_object_set(body, "degraded", degraded);
    char *t = json_dumps(body, JSON_COMPACT);
    buf_reset(out);
    buf_appends(out, t ? t : "{}");
    free(t);
    json_decref(body);
    json_decref(failing);
    json_decref(degraded);
    return ready;
}

int health_draining(void)
{
    return draining;
}

static void drain_poll(void *ud)
{
    (void)ud;
    size_t left = drain_busy ? drain_busy() : 0;
    if (left && now_ms() < drain_until) {
        lp_timer_start(&drain_timer, DRAIN_POLL_MS, drain_poll, NULL);
        return;
    }
    if (left)
        log_warn(MODULE, "drain: %zu run%s still in flight after CODEMCP_DRAIN_MS; ending them",
                 left, left == 1 ? "" : "s");
    else
        log_info(MODULE, "drain: no run in flight; shutting down");
    drain_done();
}

void health_drain(long drain_ms, size_t (*busy)(void), void (*done)(void))
{
    if (draining)
        return;
    draining = 1;
    drain_busy = busy;
    drain_done = done;
    drain_until = now_ms() + drain_ms;
    log_info(MODULE, "draining: no new sessions or runs; waiting up to %ld ms for %zu run%s",
             drain_ms, busy ? busy() : 0, busy && busy() == 1 ? "" : "s");
    drain_poll(NULL);
}

void health_stopping(void)
{
    draining = 1;
}

void health_free(void)
{
    lp_timer_stop(&drain_timer);
    n_checks = 0;
    draining = 0;
}
