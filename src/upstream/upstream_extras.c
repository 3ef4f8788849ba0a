/* upstream_extras — an upstream's resources, resource templates and prompts: the lists, kept
 * per server (listed before it becomes ready and again on their list_changed, following
 * nextCursor, at most UP_EXTRAS_MAX entries), and one request of any method to a named server
 * (resources/read, prompts/get) for the front and for programs. Tools stay in upstream.c.
 * Loop thread only. */
#include "log.h"
#include "upstream_int.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UP_EXTRAS_MAX 10000 /* entries kept per list: a server paging forever is cut here */

static const struct {
    const char *method, *member, *capability, *changed;
} kinds[UP_EXTRA_KINDS] = {
    [UP_RESOURCES] = {"resources/list", "resources", "resources",
                      "notifications/resources/list_changed"},
    [UP_TEMPLATES] = {"resources/templates/list", "resourceTemplates", "resources",
                      "notifications/resources/list_changed"},
    [UP_PROMPTS] = {"prompts/list", "prompts", "prompts", "notifications/prompts/list_changed"},
};

static void (*extras_listener)(enum up_extra kind);

void up_set_extras_listener(void (*on_change)(enum up_extra kind))
{
    extras_listener = on_change;
}

int up_has_extra(struct upstream *up, enum up_extra kind)
{
    return json_is_object(json_object_get(up->capabilities, kinds[kind].capability));
}

static void list_page(struct upstream *up, enum up_extra kind, const char *cursor);

/* A listing of kind ended (listed or failed): a connecting server waiting for it may be ready. */
static void listing_ended(struct upstream *up, enum up_extra kind)
{
    up->extra_listing[kind] = 0;
    json_decref(up->extra_acc[kind]);
    up->extra_acc[kind] = NULL;
    if (up->extras_first > 0 && --up->extras_first == 0 && up->state == UP_CONNECTING)
        up__became_ready(up);
}

static void on_page(struct upstream *up, void *ud, json_t *result, const struct up_error *err)
{
    enum up_extra kind = (enum up_extra)(intptr_t)ud;
    if (err) {
        /* a server that lists none answers -32601: nothing to say about it */
        log_debug("upstream", "%s: %s failed: %s", up->name, kinds[kind].method, err->message);
        listing_ended(up, kind);
        return;
    }
    json_t *items = json_object_get(result, kinds[kind].member);
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        if (json_array_size(up->extra_acc[kind]) >= UP_EXTRAS_MAX)
            break;
        if (json_is_object(it))
            json_array_append(up->extra_acc[kind], it);
    }
    json_t *cursor = json_object_get(result, "nextCursor");
    if (json_is_string(cursor) && json_string_length(cursor) > 0 &&
        json_array_size(up->extra_acc[kind]) < UP_EXTRAS_MAX) {
        list_page(up, kind, json_string_value(cursor));
        return;
    }
    json_decref(up->extras[kind]);
    up->extras[kind] = up->extra_acc[kind];
    up->extra_acc[kind] = NULL;
    log_debug("upstream", "%s: %zu %s", up->name, json_array_size(up->extras[kind]),
              kinds[kind].member);
    if (extras_listener)
        extras_listener(kind);
    listing_ended(up, kind);
    if (up->extra_again[kind]) {
        up->extra_again[kind] = 0;
        up__extras_list(up, kind);
    }
}

static void list_page(struct upstream *up, enum up_extra kind, const char *cursor)
{
    json_t *params = cursor ? json_pack("{s:s}", "cursor", cursor) : NULL;
    int64_t timeout =
        up->state == UP_CONNECTING ? up__handshake_budget(up) : up__default_call_timeout();
    if (!up__send_request(up, kinds[kind].method, params, timeout, on_page, (void *)(intptr_t)kind))
        listing_ended(up, kind);
}

void up__extras_list(struct upstream *up, enum up_extra kind)
{
    if ((up->state != UP_READY && up->state != UP_CONNECTING) || !up_has_extra(up, kind))
        return;
    if (up->extra_listing[kind]) {
        up->extra_again[kind] = 1;
        return;
    }
    up->extra_listing[kind] = 1;
    json_decref(up->extra_acc[kind]);
    up->extra_acc[kind] = json_array();
    list_page(up, kind, NULL);
}

int up__extras_first(struct upstream *up)
{
    up->extras_first = 0;
    for (int k = 0; k < UP_EXTRA_KINDS; k++)
        up->extras_first += up_has_extra(up, (enum up_extra)k);
    if (!up->extras_first)
        return 0;
    up->extras_first++; /* held while they are sent: one failing at once does not end it early */
    for (int k = 0; k < UP_EXTRA_KINDS; k++)
        up__extras_list(up, (enum up_extra)k);
    if (--up->extras_first == 0 && up->state == UP_CONNECTING)
        up__became_ready(up);
    return 1;
}

int up__extras_notification(struct upstream *up, const char *method)
{
    int hit = 0;
    for (int k = 0; k < UP_EXTRA_KINDS; k++)
        if (strcmp(method, kinds[k].changed) == 0) {
            up__extras_list(up, (enum up_extra)k);
            hit = 1;
        }
    return hit;
}

void up__extras_free(struct upstream *up)
{
    for (int k = 0; k < UP_EXTRA_KINDS; k++) {
        json_decref(up->extras[k]);
        json_decref(up->extra_acc[k]);
        up->extras[k] = up->extra_acc[k] = NULL;
    }
}

/* A URI template's fixed head (before its first '{') begins uri. */
static int fits_template(json_t *t, const char *uri)
{
    const char *tpl = json_string_value(json_object_get(t, "uriTemplate"));
    if (!tpl)
        return 0;
    size_t head = strcspn(tpl, "{");
    return head > 0 && strncmp(tpl, uri, head) == 0;
}

/* The length of uri's origin, "scheme://authority" (or "scheme:" without "//"); 0: none. */
static size_t origin_len(const char *uri)
{
    const char *colon = uri ? strchr(uri, ':') : NULL;
    if (!colon || colon == uri)
        return 0;
    if (colon[1] != '/' || colon[2] != '/')
        return (size_t)(colon - uri) + 1;
    return (size_t)(colon + 3 - uri) + strcspn(colon + 3, "/?#");
}

/* How well entry e of a list of kind matches uri: 3 the same URI, 2 a template's fixed head
 * begins it, 1 the same origin, 0 none. */
static int match(enum up_extra kind, json_t *e, const char *uri)
{
    const char *u =
        json_string_value(json_object_get(e, kind == UP_TEMPLATES ? "uriTemplate" : "uri"));
    if (!u)
        return 0;
    if (kind == UP_RESOURCES && strcmp(u, uri) == 0)
        return 3;
    if (kind == UP_TEMPLATES && fits_template(e, uri))
        return 2;
    size_t n = origin_len(u);
    return n && n == origin_len(uri) && strncmp(u, uri, n) == 0;
}

struct upstream *up_resource_server(const char *uri)
{
    struct upstream *best = NULL, *only = NULL;
    int best_score = 0, offering = 0;
    for (size_t i = 0; i < up_count(); i++) {
        struct upstream *up = up_at(i);
        if (up->state != UP_READY || !up_has_extra(up, UP_RESOURCES))
            continue;
        offering++;
        only = up;
        for (int k = UP_RESOURCES; k <= UP_TEMPLATES; k++) {
            size_t j;
            json_t *e;
            json_array_foreach(up->extras[k], j, e)
            {
                int score = match((enum up_extra)k, e, uri);
                if (score > best_score) {
                    best_score = score;
                    best = up;
                }
            }
        }
    }
    return best ? best : offering == 1 ? only : NULL;
}

/* ---- one request to a named server -------------------------------------------------------- */

struct pass {
    up_request_cb cb;
    void *ud;
};

static void on_answer(struct upstream *up, void *ud, json_t *result, const struct up_error *err)
{
    (void)up;
    struct pass p = *(struct pass *)ud;
    free(ud);
    p.cb(p.ud, result, err);
}

int up_request(const char *server, const char *method, json_t *params, int64_t timeout_ms,
               up_request_cb cb, void *ud, uint64_t *handle, struct up_error *err)
{
    struct upstream *up = up_find(server);
    if (!up || up->state != UP_READY) {
        json_decref(params);
        err->kind = up ? "transport" : "not_found";
        snprintf(err->message, sizeof(err->message), "server %s is %s", server,
                 up ? up_state_name(up->state) : "not configured");
        return -1;
    }
    struct pass *p = xmalloc(sizeof(*p));
    *p = (struct pass){cb, ud};
    int64_t most = up__default_call_timeout();
    if (timeout_ms <= 0 || timeout_ms > most)
        timeout_ms = most;
    struct up_req *r = up__send_request(up, method, params, timeout_ms, on_answer, p);
    if (!r) {
        free(p);
        err->kind = "transport";
        snprintf(err->message, sizeof(err->message), "cannot send %s to %s", method, server);
        return -1;
    }
    if (handle)
        *handle = r->handle;
    return 0;
}

void up_cancel_request(uint64_t handle, const char *reason)
{
    struct up_req *r = handle ? up__find_handle(handle) : NULL;
    if (!r || r->cb != on_answer) /* answered already, or not one of ours */
        return;
    up__abandon(r->up, r->wire_id, reason, NULL, 0);
    up__req_detach(r);
    free(r->ud);
    free(r);
}
