/* mcp_extras — the upstreams' resources and prompts through the front: resources/list,
 * resources/templates/list and prompts/list merge the ready servers' lists (upstream_extras.c
 * keeps them) in config order, namespaced by server, in pages of MCP_EXTRAS_PAGE; resources/read
 * goes to the server that lists the URI (or whose template it fits), prompts/get to the server
 * its `<server>_` prefix names. Reads and gets are answered later, through the send function
 * registered at start (mcp_server's mcp_send_to). mcp_server.c calls this for those methods;
 * it owns the sessions and the notifications, so this file never includes mcp_server.h. */
#include "mcp_extras.h"
#include "jsonrpc.h"
#include "upstream.h"
#include "util.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MCP_EXTRAS_PAGE 100 /* entries per page of a merged list */

static const char *const list_member[UP_EXTRA_KINDS] = {"resources", "resourceTemplates",
                                                        "prompts"};

static mcp_extras_send_fn send_to; /* how a later answer reaches its session */

void mcp_extras_set_send(mcp_extras_send_fn send)
{
    send_to = send;
}

int mcp_extras_offered(enum up_extra kind)
{
    for (size_t i = 0; i < up_count(); i++)
        if (up_has_extra(up_at(i), kind == UP_TEMPLATES ? UP_RESOURCES : kind))
            return 1;
    return 0;
}

/* Entry e of server s as the front lists it: name `<server>_<name>`, the server in _meta. */
static json_t *namespaced(struct upstream *up, json_t *e)
{
    json_t *c = json_copy(e);
    const char *name = json_string_value(json_object_get(e, "name"));
    struct buf nn = {0};
    buf_printf(&nn, "%s_%s", up->name, name ? name : "");
    json_object_set_new(c, "name", json_string(nn.data));
    buf_free(&nn);
    json_t *meta = json_object_get(c, "_meta"); /* the server's: copied before it is added to */
    meta = json_is_object(meta) ? json_copy(meta) : json_object();
    json_object_set_new(c, "_meta", meta);
    json_object_set_new(meta, "codemcp/server", json_string(up->name));
    return c;
}

static json_t *list_page(enum up_extra kind, json_t *params, int *code, const char **why)
{
    json_t *cur = json_object_get(params, "cursor");
    long start = 0;
    if (cur) {
        const char *t = json_string_value(cur);
        char *end = NULL;
        errno = 0;
        start = t ? strtol(t, &end, 10) : -1;
        if (!t || !*t || *end || errno || start < 0) {
            *code = RPC_INVALID_PARAMS;
            *why = "invalid cursor (pass back the nextCursor of the last page)";
            return NULL;
        }
    }
    json_t *items = json_array();
    long at = 0;
    int more = 0;
    for (size_t i = 0; i < up_count() && !more; i++) {
        struct upstream *up = up_at(i);
        if (up->state != UP_READY)
            continue;
        size_t j;
        json_t *e;
        json_array_foreach(up->extras[kind], j, e)
        {
            if (at++ < start)
                continue;
            if (json_array_size(items) == MCP_EXTRAS_PAGE) {
                more = 1;
                break;
            }
            json_array_append_new(items, namespaced(up, e));
        }
    }
    json_t *res = json_pack("{s:o}", list_member[kind], items);
    if (more) {
        char next[32];
        snprintf(next, sizeof(next), "%ld", start + MCP_EXTRAS_PAGE);
        json_object_set_new(res, "nextCursor", json_string(next));
    }
    return res;
}

/* The server whose `<server>_` prefix begins name (the longest such); *rest: the name after it. */
static struct upstream *by_prefix(const char *name, const char **rest)
{
    struct upstream *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < up_count(); i++) {
        struct upstream *up = up_at(i);
        size_t n = strlen(up->name);
        if (n > best_len && strncmp(name, up->name, n) == 0 && name[n] == '_') {
            best = up;
            best_len = n;
        }
    }
    if (best)
        *rest = name + best_len + 1;
    return best;
}

struct pending {
    uint64_t session;
    json_t *id;
};

static void answered(void *ud, json_t *result, const struct up_error *err)
{
    struct pending *p = ud;
    json_t *msg;
    if (result) {
        msg = rpc_result(p->id, json_incref(result));
    } else {
        json_t *code = json_object_get(err->rpc_error, "code");
        msg = rpc_error(p->id,
                        json_is_integer(code) ? (int)json_integer_value(code) : RPC_INTERNAL_ERROR,
                        err->message, NULL);
    }
    if (send_to)
        send_to(p->session, msg, p->id);
    else
        json_decref(msg);
    json_decref(p->id);
    free(p);
}

/* Sends method to up with params (stolen); answered later, or now with an error. */
static json_t *forward(struct upstream *up, uint64_t session, json_t *id, const char *method,
                       json_t *params, int *code, const char **why)
{
    static char err_text[sizeof(((struct up_error *)0)->message)];
    struct pending *p = xmalloc(sizeof(*p));
    *p = (struct pending){session, json_incref(id)};
    struct up_error err = {0};
    if (up_request(up->name, method, params, 0, answered, p, NULL, &err) < 0) {
        json_decref(p->id);
        free(p);
        snprintf(err_text, sizeof(err_text), "%s", err.message);
        *code = RPC_INTERNAL_ERROR;
        *why = err_text;
    }
    return NULL;
}

static json_t *read_resource(uint64_t session, json_t *id, json_t *params, int *code,
                             const char **why)
{
    const char *uri = json_string_value(json_object_get(params, "uri"));
    if (!uri) {
        *code = RPC_INVALID_PARAMS;
        *why = "resources/read needs params.uri (a string)";
        return NULL;
    }
    struct upstream *up = up_resource_server(uri);
    if (!up) {
        *code = MCP_RESOURCE_NOT_FOUND;
        *why = "resource not found: no connected server lists this URI (resources/list)";
        return NULL;
    }
    return forward(up, session, id, "resources/read", json_pack("{s:s}", "uri", uri), code, why);
}

static json_t *get_prompt(uint64_t session, json_t *id, json_t *params, int *code, const char **why)
{
    const char *name = json_string_value(json_object_get(params, "name")), *rest = NULL;
    struct upstream *up = name ? by_prefix(name, &rest) : NULL;
    if (!up) {
        *code = RPC_INVALID_PARAMS;
        *why = "unknown prompt: names are <server>_<prompt>, as prompts/list gives them";
        return NULL;
    }
    json_t *fwd = json_pack("{s:s}", "name", rest);
    json_t *args = json_object_get(params, "arguments");
    if (json_is_object(args))
        json_object_set(fwd, "arguments", args);
    return forward(up, session, id, "prompts/get", fwd, code, why);
}

int mcp_extras_request(uint64_t session, json_t *id, const char *method, json_t *params,
                       json_t **result, int *code, const char **why)
{
    *result = NULL;
    int prompts = strncmp(method, "prompts/", 8) == 0;
    if ((prompts || strncmp(method, "resources/", 10) == 0) &&
        !mcp_extras_offered(prompts ? UP_PROMPTS : UP_RESOURCES)) {
        /* not advertised: the spec's answer for a capability the server does not have */
        *code = RPC_METHOD_NOT_FOUND;
        *why = prompts ? "no connected server offers prompts (capability not advertised)"
                       : "no connected server offers resources (capability not advertised)";
        return 1;
    }
    if (strcmp(method, "resources/list") == 0)
        *result = list_page(UP_RESOURCES, params, code, why);
    else if (strcmp(method, "resources/templates/list") == 0)
        *result = list_page(UP_TEMPLATES, params, code, why);
    else if (strcmp(method, "prompts/list") == 0)
        *result = list_page(UP_PROMPTS, params, code, why);
    else if (strcmp(method, "resources/read") == 0)
        *result = read_resource(session, id, params, code, why);
    else if (strcmp(method, "prompts/get") == 0)
        *result = get_prompt(session, id, params, code, why);
    else
        return 0;
    return 1;
}
