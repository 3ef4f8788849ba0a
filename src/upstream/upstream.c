/* upstream — MCP client state machine over any transport, and the server registry.
 *
 * Lifecycle of one server: start transport → handshake (upstream_handshake.c: the era
 * probe, then initialize + notifications/initialized, or nothing more in the 2026 era) →
 * tools/list (following nextCursor) → READY. The whole handshake is bounded by the
 * server's `timeout` (default 30 s); a server that misses it is FAILED and never blocks
 * the others. list_changed bursts are coalesced: at most one re-list in flight, one more
 * queued. Requests are tracked in one list with a per-request timer; responses are
 * matched by (server, id), so out-of-order replies are fine. */
#include "upstream.h"
#include "jsonfast.h"
#include "jsonrpc.h"
#include "upstream_int.h"
#include "log.h"
#include "settings.h"
#include "util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define RELIST_DELAY_MS   30
#define RESTART_FIRST_MS  1000  /* a crashed stdio server: first restart after 1 s, */
#define RESTART_MAX_MS    30000 /* doubling up to 30 s while restarts keep failing, */
#define RESTART_STABLE_MS 60000 /* and back to 1 s once it stayed up this long */

extern const struct up_transport_ops up_http_ops;

static struct upstream **ups;
static size_t n_ups;
static struct up_req *reqs;
static struct idmap reqs_by_handle; /* handle -> listed request */
static uint64_t next_handle = 1;
static void (*listener)(void);
static void (*shutdown_done)(void);
static int shutting_down;
static int64_t default_call_timeout_ms = 60000;
long up__discover_probe_ms = 5000;
long up__max_connections = 100;

static void notify(void)
{
    if (listener)
        listener();
}

void up__changed(void)
{
    notify();
}

int up__shutting_down(void)
{
    return shutting_down;
}

void up_set_listener(void (*on_change)(void))
{
    listener = on_change;
}

const char *up_state_name(enum up_state s)
{
    switch (s) {
    case UP_DISABLED:
        return "disabled";
    case UP_CONNECTING:
        return "connecting";
    case UP_READY:
        return "ready";
    case UP_FAILED:
        return "failed";
    case UP_CLOSED:
        return "closed";
    }
    return "?";
}

size_t up_count(void)
{
    return n_ups;
}

struct upstream *up_at(size_t i)
{
    return i < n_ups ? ups[i] : NULL;
}

struct upstream *up_find(const char *name)
{
    for (size_t i = 0; i < n_ups; i++)
        if (strcmp(ups[i]->name, name) == 0)
            return ups[i];
    return NULL;
}

/* Only first starts count: a restart or a reconnect must not hold back tools/list or runs
 * (the server's tools are in the SDK already and fail with a transport error meanwhile). */
int up_all_settled(void)
{
    for (size_t i = 0; i < n_ups; i++)
        if (ups[i]->state == UP_CONNECTING && !ups[i]->started_once)
            return 0;
    return 1;
}

void up__set_error(struct upstream *up, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    free(up->error);
    up->error = xstrdup(msg);
}

/* ---- requests ------------------------------------------------------------------------ */

static void req_unlink(struct up_req *r)
{
    if (!r->pprev)
        return;
    DLIST_UNLINK(r);
    idmap_del(&r->up->reqs_by_wire, (uint64_t)r->wire_id);
    idmap_del(&reqs_by_handle, r->handle);
}

void up__req_detach(struct up_req *r)
{
    req_unlink(r);
    lp_timer_stop(&r->timer);
}

struct up_req *up__reqs(void)
{
    return reqs;
}

int64_t up__default_call_timeout(void)
{
    return default_call_timeout_ms;
}

static void req_finish(struct up_req *r, json_t *result, const struct up_error *err)
{
    req_unlink(r);
    lp_timer_stop(&r->timer);
    struct up_error asked;
    if (r->call_cb && result && mcp_era_is_input_required(result)) {
        /* A program cannot answer the server's question: say what it asked. */
        char what[400];
        mcp_era_describe_input_required(result, what, sizeof(what));
        asked = (struct up_error){.kind = "input_required", .input_required = result};
        snprintf(asked.message, sizeof(asked.message),
                 "%s %s; a running program cannot answer it (call this tool from the client "
                 "directly)",
                 r->up->name, what);
        result = NULL;
        err = &asked;
    }
    if (r->call_cb)
        r->call_cb(r->call_ud, result ? &(struct up_result){.tree = result} : NULL, err);
    else if (r->cb)
        r->cb(r->up, r->ud, result, err);
    free(r);
}

void up__notify(struct upstream *up, const char *method, json_t *params)
{
    json_t *n = rpc_request(NULL, method, params);
    char *text = rpc_dump(n);
    up->ops->send(up, text, strlen(text));
    free(text);
    json_decref(n);
}

void up__send_cancelled(struct upstream *up, int64_t wire_id, const char *reason)
{
    if (up->state != UP_READY && up->state != UP_CONNECTING)
        return;
    /* 2026 era over HTTP: cancellation is the closed response stream, not a message. */
    if (up->era == MCP_ERA_MODERN && up->ops == &up_http_ops)
        return;
    up__notify(up, "notifications/cancelled",
               json_pack("{s:I, s:s}", "requestId", (json_int_t)wire_id, "reason",
                         reason ? reason : "cancelled"));
}

int up__abandon(struct upstream *up, int64_t wire_id, const char *reason, char *why, size_t n)
{
    if (why && n)
        why[0] = '\0';
    char none[1];
    if (up->ops->abandon && up->ops->abandon(up, wire_id, why ? why : none, why ? n : 1))
        return 1; /* never sent: nothing to cancel at the server */
    up__send_cancelled(up, wire_id, reason);
    return 0;
}

static void req_timed_out(void *ud)
{
    struct up_req *r = ud;
    struct up_error err = {.kind = "timeout"};
    char why[300];
    long long waited = (long long)(now_ms() - r->started_ms);
    if (up__abandon(r->up, r->wire_id, "timeout", why, sizeof(why)))
        snprintf(err.message, sizeof(err.message), "%s did not answer within %lld ms: %s",
                 r->up->name, waited, why);
    else
        snprintf(err.message, sizeof(err.message), "%s did not answer within %lld ms", r->up->name,
                 waited);
    req_finish(r, NULL, &err);
}

struct up_req *up__req_new(struct upstream *up, up__req_cb cb, void *ud)
{
    struct up_req *r = xcalloc(1, sizeof(*r));
    r->handle = next_handle++;
    r->up = up;
    r->wire_id = ++up->next_id;
    r->started_ms = now_ms();
    r->cb = cb;
    r->ud = ud;
    return r;
}

struct up_req *up__req_send(struct upstream *up, struct up_req *r, const char *text, size_t len,
                            int64_t timeout_ms)
{
    if (up->ops->send(up, text, len) < 0) {
        free(r);
        return NULL;
    }
    DLIST_PUSH(&reqs, r);
    idmap_put(&up->reqs_by_wire, (uint64_t)r->wire_id, r);
    idmap_put(&reqs_by_handle, r->handle, r);
    if (timeout_ms > 0)
        lp_timer_start(&r->timer, timeout_ms, req_timed_out, r);
    return r;
}

struct up_req *up__send_request(struct upstream *up, const char *method, json_t *params,
                                int64_t timeout_ms, up__req_cb cb, void *ud)
{
    if (up->era == MCP_ERA_MODERN || strcmp(method, "server/discover") == 0) {
        if (!params)
            params = json_object();
        /* elicitation: a server may say what it would ask (input_required); we report it. */
        json_t *caps = json_pack("{s:{s:{}}}", "elicitation", "form");
        mcp_era_attach_meta(
            params, mcp_era_request_meta(MCP_MODERN_VERSION, "codemcp", CODEMCP_VERSION, caps));
        json_decref(caps);
    }
    struct up_req *r = up__req_new(up, cb, ud);
    json_t *id = json_integer(r->wire_id);
    json_t *msg = rpc_request(id, method, params);
    json_decref(id);
    char *text = rpc_dump(msg);
    json_decref(msg);
    r = up__req_send(up, r, text, strlen(text), timeout_ms);
    free(text);
    return r;
}

int up__request(struct upstream *up, const char *method, json_t *params, int64_t timeout_ms,
                up__req_cb cb, void *ud)
{
    return up__send_request(up, method, params, timeout_ms, cb, ud) ? 0 : -1;
}

void up__fail_requests(struct upstream *up, const char *why)
{
    struct up_req *r = reqs;
    while (r) {
        struct up_req *next = r->next;
        if (r->up == up) {
            struct up_error err = {.kind = "transport"};
            snprintf(err.message, sizeof(err.message), "%s: %s", up->name, why);
            req_finish(r, NULL, &err);
            next = reqs; /* the callback may have changed the list */
        }
        r = next;
    }
}

/* ---- handshake and listing ------------------------------------------------------------ */

static void set_state(struct upstream *up, enum up_state s)
{
    if (up->state == s)
        return;
    if (up->state == UP_READY)
        up__era_stop(up);
    /* A stdio server that worked and then failed (or whose restart failed) is started
     * again once its process is gone (up__transport_closed). One that never came up is a
     * configuration problem and stays failed. Remote servers reconnect by themselves. */
    if (s == UP_FAILED && up->ops == &up_stdio_ops && !shutting_down &&
        (up->state == UP_READY || up->restarts > 0)) {
        if (up->state == UP_READY && now_ms() - up->ready_ms >= RESTART_STABLE_MS)
            up->restarts = 0;
        up->restart_pending = 1;
    }
    up->state = s;
    if (s == UP_READY || s == UP_FAILED)
        up->started_once = 1;
    if (s != UP_CONNECTING)
        lp_timer_stop(&up->connect_timer);
    if (s == UP_READY)
        up__era_ready(up);
    notify();
}

static void list_page(struct upstream *up, const char *cursor);

/* A server given up while starting: a warning, but not when codemcp itself is stopping (its
 * requests were failed by the shutdown, which says nothing about the server). */
static void skipping(struct upstream *up)
{
    if (shutting_down)
        log_debug("upstream", "%s: not started (codemcp is stopping)", up->name);
    else
        log_warn("upstream", "%s: %s; skipping this server", up->name, up->error);
}

static void relist_now(void *ud)
{
    struct upstream *up = ud;
    if (up->state != UP_READY || up->listing)
        return;
    log_debug("upstream", "%s: re-listing tools", up->name);
    list_page(up, NULL);
}

static void on_list_page(struct upstream *up, void *ud, json_t *result, const struct up_error *err)
{
    (void)ud;
    if (err && up->state == UP_DISABLED) { /* turned off while listing */
        up->listing = 0;
        json_decref(up->list_acc);
        up->list_acc = NULL;
        return;
    }
    if (err) {
        up->listing = 0;
        json_decref(up->list_acc);
        up->list_acc = NULL;
        if (up->state == UP_CONNECTING) {
            up__set_error(up, "tools/list failed: %s", err->message);
            skipping(up);
            up->ops->shutdown(up);
            set_state(up, UP_FAILED);
        } else {
            log_warn("upstream", "%s: re-listing tools failed: %s", up->name, err->message);
        }
        return;
    }
    json_t *tools = json_object_get(result, "tools");
    if (json_is_array(tools)) {
        size_t i;
        json_t *t;
        json_array_foreach(tools, i, t)
        {
            char why[200];
            if (!json_is_object(t) || !json_is_string(json_object_get(t, "name")))
                log_warn("upstream", "%s: ignoring a malformed tool entry", up->name);
            else if (up->ops == &up_http_ops &&
                     mcp_era_check_param_headers(json_object_get(t, "inputSchema"), why,
                                                 sizeof(why)) < 0)
                log_warn("upstream", "%s: leaving out tool %s: %s", up->name,
                         json_string_value(json_object_get(t, "name")), why);
            else
                json_array_append(up->list_acc, t);
        }
    }
    json_t *ttl = json_object_get(result, "ttlMs");
    up->list_ttl_ms =
        json_is_integer(ttl) && json_integer_value(ttl) > 0 ? json_integer_value(ttl) : 0;
    json_t *cursor = json_object_get(result, "nextCursor");
    if (json_is_string(cursor) && json_string_length(cursor) > 0) {
        list_page(up, json_string_value(cursor));
        return;
    }
    up->listing = 0;
    json_decref(up->tools);
    up->tools = up->list_acc;
    up->list_acc = NULL;
    log_info("upstream", "%s: %zu tools", up->name, json_array_size(up->tools));
    if (up->state == UP_CONNECTING) {
        if (!up__extras_first(up)) /* else READY once its resources and prompts are listed */
            up__became_ready(up);
    } else {
        up__era_ready(up); /* a ttlMs re-list arms the next one */
        notify();
    }
    if (up->relist_wanted) {
        up->relist_wanted = 0;
        lp_timer_start(&up->relist_timer, RELIST_DELAY_MS, relist_now, up);
    }
}

void up__became_ready(struct upstream *up)
{
    up->ready_ms = now_ms();
    log_info("upstream", "%s: ready in %lld ms%s", up->name,
             (long long)(up->ready_ms - up->started_ms), up->restarts ? " (restarted)" : "");
    set_state(up, UP_READY);
}

int64_t up__handshake_budget(struct upstream *up)
{
    int64_t left = up->cfg->timeout_ms - (now_ms() - up->started_ms);
    return left > 1 ? left : 1;
}

static void list_page(struct upstream *up, const char *cursor)
{
    if (!cursor) {
        up->listing = 1;
        json_decref(up->list_acc);
        up->list_acc = json_array();
    }
    json_t *params = cursor ? json_pack("{s:s}", "cursor", cursor) : NULL;
    int64_t timeout =
        up->state == UP_CONNECTING ? up__handshake_budget(up) : default_call_timeout_ms;
    if (!up__send_request(up, "tools/list", params, timeout, on_list_page, NULL)) {
        up->listing = 0;
        up__transport_failed(up, "cannot send tools/list");
    }
}

void up__list_tools(struct upstream *up)
{
    list_page(up, NULL);
}

void up__handshake_failed(struct upstream *up, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (up->state == UP_DISABLED)
        return; /* turned off at run time while handshaking: its requests were failed */
    up__set_error(up, "%s", msg);
    skipping(up);
    up->ops->shutdown(up);
    set_state(up, UP_FAILED);
}

static void connect_timed_out(void *ud)
{
    struct upstream *up = ud;
    if (up->state != UP_CONNECTING)
        return;
    up__set_error(up, "did not finish starting within %d ms (raise \"timeout\" in its config)",
                  up->cfg->timeout_ms);
    log_warn("upstream", "%s: %s; skipping this server", up->name, up->error);
    up__fail_requests(up, "start-up timed out");
    up->ops->shutdown(up);
    set_state(up, UP_FAILED);
}

void up__transport_reopen(struct upstream *up)
{
    if (shutting_down || up->state != UP_FAILED || !up->tp)
        return;
    up->started_ms = now_ms();
    set_state(up, UP_CONNECTING);
    lp_timer_start(&up->connect_timer, up->cfg->timeout_ms > 0 ? up->cfg->timeout_ms : 30000,
                   connect_timed_out, up);
    up__transport_open(up);
}

/* ---- incoming messages ----------------------------------------------------------------- */

static void reply(struct upstream *up, json_t *msg)
{
    char *text = rpc_dump(msg);
    up->ops->send(up, text, strlen(text));
    free(text);
    json_decref(msg);
}

static void handle_server_request(struct upstream *up, json_t *msg, const char *method)
{
    json_t *id = json_object_get(msg, "id");
    if (strcmp(method, "ping") == 0) {
        reply(up, rpc_result(id, json_object()));
    } else if (strcmp(method, "roots/list") == 0) {
        reply(up, rpc_result(id, json_pack("{s:[]}", "roots")));
    } else {
        log_debug("upstream", "%s: refusing server request %s", up->name, method);
        reply(up,
              rpc_error(id, RPC_METHOD_NOT_FOUND, "codemcp does not support this request", NULL));
    }
}

static void handle_notification(struct upstream *up, json_t *msg, const char *method)
{
    if (strcmp(method, "notifications/tools/list_changed") == 0) {
        if (up->listing) {
            up->relist_wanted = 1;
        } else if (up->state == UP_READY) {
            lp_timer_stop(&up->relist_timer);
            lp_timer_start(&up->relist_timer, RELIST_DELAY_MS, relist_now, up);
        }
    } else if (up__extras_notification(up, method)) {
        /* re-listed: resources or prompts */
    } else if (strcmp(method, "notifications/message") == 0) {
        json_t *p = json_object_get(msg, "params");
        json_t *data = json_object_get(p, "data");
        char *text = data ? jf_dumps(data) : NULL; /* big integers as digits */
        log_info("upstream", "%s: %s", up->name, text ? text : "(message)");
        free(text);
    } else {
        log_trace("upstream", "%s: notification %s", up->name, method);
    }
}

struct up_req *up__find_wire(struct upstream *up, int64_t wire)
{
    return idmap_get(&up->reqs_by_wire, (uint64_t)wire);
}

struct up_req *up__find_handle(uint64_t handle)
{
    return idmap_get(&reqs_by_handle, handle);
}

static struct up_req *find_req(struct upstream *up, json_t *id)
{
    return json_is_integer(id) ? up__find_wire(up, json_integer_value(id)) : NULL;
}

static void dispatch(struct upstream *up, json_t *msg);

/* The message in text (the usual result handed on as its bytes, text's buffer with them when
 * bytes is set: up_result.bytes), else its tree; NULL when that is done or it is not JSON. */
static json_t *message_tree(struct upstream *up, const char *text, size_t len, char **bytes)
{
    if (up__try_raw_result(up, text, len, bytes))
        return NULL;
    json_error_t jerr;
    json_t *msg = jf_loadb(text, len, JF_ALLOW_NUL | JF_BIG_INTEGERS, &jerr); /* see jsonfast.h */
    if (!msg)
        log_warn("upstream", "%s: ignoring a line that is not JSON (%s): %.120s", up->name,
                 jerr.text, text);
    return msg;
}

void up__transport_message(struct upstream *up, const char *text, size_t len)
{
    json_t *msg = message_tree(up, text, len, NULL);
    if (msg)
        dispatch(up, msg);
}

void up__transport_line(struct upstream *up, char *text, size_t len)
{
    json_t *msg = message_tree(up, text, len, &text); /* a relayed result may take text */
    free(text); /* before the answer is made from the tree: one payload less at the peak */
    if (msg)
        dispatch(up, msg);
}

/* A message's tree to whoever waits for it or handles it; msg is consumed. */
static void dispatch(struct upstream *up, json_t *msg)
{
    const char *why;
    switch (rpc_classify(msg, &why)) {
    case RPC_RESPONSE: {
        struct up_req *r = find_req(up, json_object_get(msg, "id"));
        if (!r) {
            log_debug("upstream", "%s: response to an unknown or expired request", up->name);
            break;
        }
        json_t *error = json_object_get(msg, "error");
        if (error) {
            struct up_error err = {.kind = "upstream_error", .rpc_error = error};
            json_t *m = json_object_get(error, "message");
            snprintf(err.message, sizeof(err.message), "%s: %s (code %lld)", up->name,
                     json_is_string(m) ? json_string_value(m) : "error",
                     (long long)json_integer_value(json_object_get(error, "code")));
            req_finish(r, NULL, &err);
        } else {
            json_t *res = json_object_get(msg, "result");
            if (!json_is_object(res)) {
                struct up_error err = {.kind = "upstream_error"};
                snprintf(err.message, sizeof(err.message), "%s: result is not an object", up->name);
                req_finish(r, NULL, &err);
            } else {
                req_finish(r, res, NULL);
            }
        }
        break;
    }
    case RPC_REQUEST:
        handle_server_request(up, msg, json_string_value(json_object_get(msg, "method")));
        break;
    case RPC_NOTIFICATION:
        handle_notification(up, msg, json_string_value(json_object_get(msg, "method")));
        break;
    case RPC_INVALID:
        log_warn("upstream", "%s: ignoring an invalid JSON-RPC message: %s", up->name, why);
        break;
    }
    json_decref(msg);
}

void up__transport_failed(struct upstream *up, const char *why)
{
    if (up->state == UP_CLOSED || up->state == UP_FAILED || up->state == UP_DISABLED)
        return;
    int was_ready = up->state == UP_READY;
    up__set_error(up, "%s", why);
    if (shutting_down) {
        up__fail_requests(up, why);
        return;
    }
    if (up->ops == &up_http_ops) /* it reconnects by itself, and logs its plan */
        log_warn("upstream", "%s: %s", up->name, why);
    else if (was_ready)
        log_error("upstream",
                  "%s: connection lost: %s. Its tools fail with ToolError(kind=\"transport\") "
                  "until it is restarted",
                  up->name, why);
    else if (up->restarts > 0)
        log_warn("upstream", "%s: restart failed: %s", up->name, why);
    else
        log_warn("upstream", "%s: %s; skipping this server", up->name, why);
    lp_timer_stop(&up->relist_timer);
    set_state(up, UP_FAILED);
    up__fail_requests(up, why);
}

static int all_closed(void)
{
    for (size_t i = 0; i < n_ups; i++)
        if (ups[i]->tp)
            return 0;
    return 1;
}

static void schedule_restart(struct upstream *up);

void up__transport_closed(struct upstream *up)
{
    if (up->ops && up->ops->free)
        up->ops->free(up);
    up->tp = NULL;
    if (up->start_when_closed && !shutting_down) {
        up->start_when_closed = 0;
        up__start(up);
    } else if (up->restart_pending && !shutting_down) {
        schedule_restart(up);
    }
    if (shutting_down && all_closed() && shutdown_done) {
        void (*done)(void) = shutdown_done;
        shutdown_done = NULL;
        done();
    }
}

/* ---- restarting crashed stdio servers ------------------------------------------------------ */

static void restart_now(void *ud)
{
    struct upstream *up = ud;
    if (shutting_down || up->state != UP_FAILED || up->tp)
        return;
    up->restarts++;
    up->era = MCP_ERA_UNKNOWN; /* a new process: probe its era again */
    log_info("upstream", "%s: restarting it (attempt %d)", up->name, up->restarts);
    up->started_ms = now_ms();
    set_state(up, UP_CONNECTING);
    lp_timer_start(&up->connect_timer, up->cfg->timeout_ms > 0 ? up->cfg->timeout_ms : 30000,
                   connect_timed_out, up);
    if (up->ops->start(up) < 0) { /* nothing was spawned: no close will come, retry from here */
        log_warn("upstream", "%s: restart failed: %s", up->name, up->error ? up->error : "?");
        set_state(up, UP_FAILED);
        schedule_restart(up);
    }
}

static void schedule_restart(struct upstream *up)
{
    up->restart_pending = 0;
    int64_t delay = RESTART_FIRST_MS;
    for (int i = 0; i < up->restarts && delay < RESTART_MAX_MS; i++)
        delay *= 2;
    if (delay > RESTART_MAX_MS)
        delay = RESTART_MAX_MS;
    log_info("upstream", "%s: restarting it in %lld ms", up->name, (long long)delay);
    lp_timer_start(&up->restart_timer, delay, restart_now, up);
}

/* ---- calls -------------------------------------------------------------------------------- */

/* ---- registry ------------------------------------------------------------------------------ */

void up_start_all(struct cfg *cfg, const struct settings *set)
{
    default_call_timeout_ms = set->call_timeout_ms;
    up__discover_probe_ms = set->discover_probe_ms;
    up__max_connections = set->http_max_connections_per_upstream;
    ups = xcalloc(cfg->n_servers ? cfg->n_servers : 1, sizeof(*ups));
    for (size_t i = 0; i < cfg->n_servers; i++) {
        struct cfg_server *s = &cfg->servers[i];
        struct upstream *up = xcalloc(1, sizeof(*up));
        up->index = (int)i;
        up->name = xstrdup(s->name);
        up->cfg = s;
        up->state = UP_DISABLED;
        ups[n_ups++] = up;
        if (s->disabled_reason) {
            up__set_error(up, "%s", s->disabled_reason);
            log_warn("upstream", "%s: disabled: %s", up->name, s->disabled_reason);
            continue;
        }
        if (!s->enabled) {
            up__set_error(up, "disabled in the config (\"enabled\": false)");
            continue;
        }
        up->state = UP_CONNECTING; /* counted as not settled before any of them starts */
    }
    /* Started once all exist: a server that fails at once (its command is missing) must not
     * find the ones after it still unborn and call the start settled. */
    for (size_t i = 0; i < n_ups; i++)
        if (ups[i]->state == UP_CONNECTING)
            up__start(ups[i]);
    notify();
}

void up__start(struct upstream *up)
{
    up->ops = up->cfg->type == CFG_REMOTE ? &up_http_ops : &up_stdio_ops;
    up->state = UP_CONNECTING;
    up->started_ms = now_ms();
    lp_timer_start(&up->connect_timer, up->cfg->timeout_ms > 0 ? up->cfg->timeout_ms : 30000,
                   connect_timed_out, up);
    if (up->ops->start(up) < 0) {
        log_warn("upstream", "%s: %s; skipping this server", up->name,
                 up->error ? up->error : "failed to start");
        set_state(up, UP_FAILED);
    }
}

int up__shutdown_deadline_ms;

void up_set_shutdown_deadline(int ms)
{
    up__shutdown_deadline_ms = ms;
}

void up_shutdown_all(void (*done)(void))
{
    shutting_down = 1;
    shutdown_done = done;
    for (size_t i = 0; i < n_ups; i++) {
        struct upstream *up = ups[i];
        lp_timer_stop(&up->connect_timer);
        lp_timer_stop(&up->relist_timer);
        lp_timer_stop(&up->restart_timer);
        up__fail_requests(up, "codemcp is shutting down");
        lp_timer_stop(&up->listen_timer); /* after: an ended listen stream re-arms it */
        if (up->tp) {
            up->state = UP_CLOSED;
            up->ops->shutdown(up);
        }
    }
    if (all_closed() && shutdown_done) {
        shutdown_done = NULL;
        done();
    }
}

void up_free_all(void)
{
    while (reqs) {
        struct up_req *r = reqs;
        req_unlink(r);
        lp_timer_stop(&r->timer);
        free(r);
    }
    for (size_t i = 0; i < n_ups; i++) {
        struct upstream *up = ups[i];
        if (up->tp && up->ops->free)
            up->ops->free(up);
        lp_timer_stop(&up->connect_timer);
        lp_timer_stop(&up->relist_timer);
        lp_timer_stop(&up->restart_timer);
        lp_timer_stop(&up->listen_timer);
        json_decref(up->tools);
        json_decref(up->server_info);
        json_decref(up->capabilities);
        json_decref(up->list_acc);
        up__extras_free(up);
        idmap_free(&up->reqs_by_wire);
        free(up->protocol_version);
        free(up->error);
        free(up->name);
        free(up);
    }
    free(ups);
    ups = NULL;
    n_ups = 0;
}
