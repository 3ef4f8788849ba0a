/* upstream_admin — turning one upstream server on and off at run time (`codemcp enable` /
 * `disable`, through the admin socket): the up_enable / up_disable of upstream.h. The state
 * machine, requests and transports stay in upstream.c; this file only drives them. A server
 * disabled here is UP_DISABLED with its last tool list kept (the catalog leaves it out); one
 * enabled while its old process still exits starts once that process is gone
 * (start_when_closed). Loop thread only. */
#include "log.h"
#include "upstream_int.h"

#include <stdio.h>

int up_enable(const char *name, char *why, size_t n)
{
    struct upstream *up = up_find(name);
    if (!up) {
        snprintf(why, n, "no server named %s in the config", name);
        return -1;
    }
    if (up->cfg->disabled_reason) {
        snprintf(why, n, "%s cannot be started: %s", name, up->cfg->disabled_reason);
        return -1;
    }
    if (up__shutting_down()) {
        snprintf(why, n, "codemcp is shutting down");
        return -1;
    }
    if (up->state == UP_READY || up->state == UP_CONNECTING || up->start_when_closed)
        return 0;
    log_info("upstream", "%s: enabled at run time; connecting", up->name);
    lp_timer_stop(&up->restart_timer);
    up->restart_pending = 0;
    up->restarts = 0;
    up->started_once = 1; /* runs and tools/list do not wait for a server turned on later */
    if (up->tp) {         /* the previous transport is still closing: start once it is gone */
        if (up->state == UP_FAILED) {
            up->state = UP_CLOSED;
            up->ops->shutdown(up);
        }
        up->start_when_closed = 1;
        return 0;
    }
    up__start(up);
    up__changed();
    return 0;
}

int up_disable(const char *name, char *why, size_t n)
{
    struct upstream *up = up_find(name);
    if (!up) {
        snprintf(why, n, "no server named %s in the config", name);
        return -1;
    }
    up->start_when_closed = 0;
    if (up->state == UP_DISABLED || up->state == UP_CLOSED)
        return 0;
    log_info("upstream", "%s: disabled at run time; disconnecting", up->name);
    up->state = UP_DISABLED; /* before anything below can call back */
    up->started_once = 1;
    up->restart_pending = 0;
    lp_timer_stop(&up->connect_timer);
    lp_timer_stop(&up->relist_timer);
    lp_timer_stop(&up->restart_timer);
    up__set_error(up, "disabled at run time (codemcp enable %s turns it back on)", up->name);
    up__fail_requests(up, "the server was disabled (codemcp disable)");
    lp_timer_stop(&up->listen_timer); /* after: an ended listen stream re-arms it */
    up->listing = 0; /* its tools stay known (for `codemcp tools`); the catalog skips it */
    if (up->tp)
        up->ops->shutdown(up);
    up__changed();
    return 0;
}
