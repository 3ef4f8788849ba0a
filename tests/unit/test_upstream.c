/* Tests for src/upstream/upstream.c + upstream_stdio.c on the real event loop, against the
 * purpose-built fake upstream (tests/fixtures/fake_upstream.py): handshake and listing,
 * concurrent calls answered out of order, a per-call timeout that sends
 * notifications/cancelled upstream, errors for unknown servers, and graceful shutdown. */
#include "config.h"
#include "loop.h"
#include "settings.h"
#include "upstream.h"
#include "util.h"

#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char log_path[] = "/tmp/codemcp-upstream-log-XXXXXX";
static struct lp_timer watchdog, step_timer;
static int phase;
static char order[8];
static int n_order, n_done;
static const char *timeout_kind;

struct call_ctx {
    char tag;
};

static void on_result(void *ud, const struct up_result *result, const struct up_error *err)
{
    struct call_ctx *c = ud;
    if (c->tag == 'T') {
        timeout_kind = err ? err->kind : "none";
    } else {
        order[n_order++] = !err && result ? c->tag : '!';
    }
    n_done++;
}

static void all_down(void)
{
    lp_stop();
}

static void finish(void *ud)
{
    (void)ud;
    up_shutdown_all(all_down);
}

static void on_change(void)
{
    if (phase != 0 || !up_all_settled())
        return;
    phase = 1;
    struct upstream *up = up_find("fake");
    CHECK(up && up->state == UP_READY, "the fake upstream is ready (state %s)",
          up ? up_state_name(up->state) : "missing");
    CHECK(up && json_array_size(up->tools) >= 5, "its tools were listed across pages (%zu)",
          up ? json_array_size(up->tools) : 0);

    static struct call_ctx slow = {'A'}, fast = {'B'}, timed = {'T'};
    uint64_t h;
    struct up_error err;
    const char *a = "{\"ms\":400}", *b = "{\"ms\":10}", *t = "{\"ms\":5000}";
    CHECK(up_call_tool("fake", "sleep", a, strlen(a), NULL, NULL, 0, on_result, &slow, &h, &err) ==
              0,
          "slow call sent");
    CHECK(up_call_tool("fake", "sleep", b, strlen(b), NULL, NULL, 0, on_result, &fast, &h, &err) ==
              0,
          "fast call sent");
    CHECK(up_call_tool("fake", "sleep", t, strlen(t), NULL, NULL, 200, on_result, &timed, &h,
                       &err) == 0,
          "call with a 200 ms timeout sent");
    CHECK(up_calls_in_flight() == 3, "three calls in flight at once (%zu)", up_calls_in_flight());
    CHECK(up_call_tool("nope", "x", NULL, 0, NULL, NULL, 0, on_result, &fast, &h, &err) < 0 &&
              strcmp(err.kind, "not_found") == 0,
          "a call to an unknown server fails at once with not_found");
    lp_timer_start(&step_timer, 1500, finish, NULL);
}

static void watchdog_fired(void *ud)
{
    (void)ud;
    printf("FAIL: watchdog: the test did not finish in time\n");
    check_failures++;
    lp_stop();
}

int main(void)
{
    int fd = mkstemp(log_path);
    if (fd < 0)
        return 2;
    close(fd);
    char cmd[512];
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 ../fixtures/fake_upstream.py --paginate 2 --list-changed-burst 3 "
             "--log-file %s",
             log_path);
    struct cfg cfg;
    char *err = NULL;
    if (cfg_from_wrap(cmd, "fake", &cfg, &err) < 0) {
        printf("FAIL: wrap: %s\n", err);
        return 1;
    }
    if (lp_init() < 0)
        return 1;
    up_set_listener(on_change);
    lp_timer_start(&watchdog, 20000, watchdog_fired, NULL);
    struct settings set;
    settings_load(&set);
    up_start_all(&cfg, &set);
    lp_run();

    CHECK(n_done == 3, "every call got exactly one answer (%d)", n_done);
    CHECK(order[0] == 'B' && order[1] == 'A', "replies matched out of order (got %.2s)", order);
    CHECK(timeout_kind && strcmp(timeout_kind, "timeout") == 0, "the slow call timed out (%s)",
          timeout_kind ? timeout_kind : "no answer");
    char *log = read_file(log_path, NULL);
    CHECK(log && strstr(log, "notifications/cancelled"),
          "the upstream was sent notifications/cancelled");
    CHECK(log && strstr(log, "notifications/initialized"), "the handshake was completed");
    int lists = 0;
    for (const char *p = log; p && (p = strstr(p, "\"tools/list\"")); p++)
        lists++;
    /* 9 tools in pages of 2 = 5 requests per listing; the burst of 3 list_changed must
     * cause at most one more listing. */
    CHECK(lists == 5 || lists == 10,
          "pagination plus at most one coalesced re-list after the list_changed burst "
          "(%d tools/list requests)",
          lists);
    CHECK(lp_children_alive() == 0, "the upstream process was reaped (%d alive)",
          lp_children_alive());
    free(log);
    unlink(log_path);
    up_free_all();
    lp_destroy();
    cfg_free(&cfg);
    return CHECK_DONE();
}
