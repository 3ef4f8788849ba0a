/* upstream_http_hdrs — the request headers of one Streamable HTTP exchange: the routing
 * headers noted from a message's body (Mcp-Method, Mcp-Name, Mcp-Param-*, the 2026 era's
 * protocol version) and the header block of each transfer (media types, configured headers,
 * OAuth bearer, session id, protocol version, Last-Event-ID), built fresh for every transfer
 * so that nothing of one request reaches the next. Loop thread only; no I/O, no policy about
 * when to send (upstream_http.c decides that). */
#include "log.h"
#include "mcp_era.h"
#include "upstream.h"
#include "upstream_http_int.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static void add_param_header(void *ud, const char *name, const char *value)
{
    struct hx *h = ud;
    buf_printf(&h->params, "Mcp-Param-%s: %s", name, value);
    buf_append(&h->params, "", 1);
    h->n_params++;
}

/* Does v say x-mcp-header anywhere (a superset of where mcp_era_param_headers looks)? */
static int mentions_header(json_t *v, int depth)
{
    if (depth > 64)
        return 1; /* deeper than anyone looks: let the full walk decide */
    const char *k;
    size_t i;
    json_t *sub;
    if (json_is_object(v)) {
        if (json_object_get(v, "x-mcp-header"))
            return 1;
        json_object_foreach(v, k, sub)
        {
            if (mentions_header(sub, depth + 1))
                return 1;
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, sub)
        {
            if (mentions_header(sub, depth + 1))
                return 1;
        }
    }
    return 0;
}

/* The tool named name if its calls may carry Mcp-Param-* headers, else NULL (indexed once
 * per tool list instead of searched on every call; null marks a tool without any). */
static json_t *header_tool(struct http_tp *tp, json_t *name)
{
    json_t *tools = tp->up->tools;
    if (tools != tp->hdr_indexed) {
        json_decref(tp->hdr_indexed);
        json_decref(tp->hdr_tools);
        tp->hdr_indexed = json_incref(tools);
        tp->hdr_tools = json_object();
        json_t *tool;
        size_t i;
        json_array_foreach(tools, i, tool)
        {
            json_t *n = json_object_get(tool, "name");
            if (!json_is_string(n) || json_object_get(tp->hdr_tools, json_string_value(n)))
                continue; /* the first of a name is the one called */
            int any = mentions_header(json_object_get(tool, "inputSchema"), 0);
            json_object_set_new(tp->hdr_tools, json_string_value(n),
                                any ? json_incref(tool) : json_null());
        }
    }
    json_t *tool = json_object_get(tp->hdr_tools, json_string_value(name));
    return json_is_object(tool) ? tool : NULL;
}

/* Printable ASCII only: nothing that could end a header line or start another. */
static int header_safe(const char *s)
{
    for (; *s; s++)
        if (*s < 0x20 || *s > 0x7e)
            return 0;
    return 1;
}

void uh_note_headers(struct hx *h, json_t *msg)
{
    json_t *params = json_object_get(msg, "params");
    json_t *v = json_object_get(json_object_get(params, "_meta"), MCP_META_PROTOCOL_VERSION);
    json_t *method = json_object_get(msg, "method");
    if (!json_is_string(method))
        return;
    /* A trace context in _meta (SEP-414) goes in the W3C headers too, for HTTP-level tracing
     * between here and the server. Only one the gateway wrote: a plain token (trace.c). */
    json_t *meta = json_object_get(params, "_meta");
    json_t *tp = json_object_get(meta, "traceparent"), *ts = json_object_get(meta, "tracestate");
    if (!h->traceparent && json_is_string(tp) && header_safe(json_string_value(tp)))
        h->traceparent = xstrdup(json_string_value(tp));
    if (h->traceparent && !h->tracestate && json_is_string(ts) &&
        header_safe(json_string_value(ts)))
        h->tracestate = xstrdup(json_string_value(ts));
    if (json_is_string(v))
        h->modern_version = xstrdup(json_string_value(v));
    h->mcp_method = xstrdup(json_string_value(method));
    json_t *name = json_object_get(params, "name");
    if (!json_is_string(name))
        name = json_object_get(params, "uri");
    if (json_is_string(name))
        h->mcp_name = mcp_era_header_value(json_string_value(name));
    if (strcmp(h->mcp_method, "tools/call") != 0 || !json_is_string(name))
        return;
    /* Mcp-Param-{Name} for the tool's x-mcp-header properties (checked when listed). */
    json_t *tool = header_tool(h->tp, name);
    if (tool)
        mcp_era_param_headers(json_object_get(tool, "inputSchema"),
                              json_object_get(params, "arguments"), add_param_header, h);
}

/* One "name value" line (value may be NULL: name is the whole line), NUL-terminated. */
static void line(struct buf *b, const char *name, const char *value)
{
    buf_appends(b, name);
    if (value)
        buf_appends(b, value);
    buf_append(b, "", 1);
}

void uh_headers(struct hx *h, const char *method, int with_session, const char *last_id,
                const char *bearer, struct buf *out)
{
    struct http_tp *tp = h->tp;
    if (strcmp(method, "POST") == 0) {
        line(out, "Content-Type: application/json", NULL);
        line(out, "Accept: application/json, text/event-stream", NULL);
    } else if (strcmp(method, "GET") == 0) {
        line(out, "Accept: text/event-stream", NULL);
    }
    for (char **c = tp->headers; c && *c; c++)
        line(out, *c, NULL);
    if (bearer)
        line(out, bearer, NULL);
    const char *version = tp->protocol_version ? tp->protocol_version : tp->up->protocol_version;
    free(h->sent_sid);
    h->sent_sid = NULL;
    /* The routing headers go on every POST, in both eras (legacy servers ignore them). */
    if (h->mcp_method)
        line(out, "Mcp-Method: ", h->mcp_method);
    if (h->mcp_name)
        line(out, "Mcp-Name: ", h->mcp_name);
    if (h->n_params)
        buf_append(out, h->params.data, h->params.len); /* NUL-separated lines already */
    if (h->modern_version) {
        line(out, "MCP-Protocol-Version: ", h->modern_version);
    } else {
        h->sent_sid = with_session && tp->session_id ? xstrdup(tp->session_id) : NULL;
        if (h->sent_sid)
            line(out, "Mcp-Session-Id: ", h->sent_sid);
        if (with_session && version)
            line(out, "MCP-Protocol-Version: ", version);
    }
    if (h->traceparent)
        line(out, "traceparent: ", h->traceparent);
    if (h->tracestate && *h->tracestate)
        line(out, "tracestate: ", h->tracestate);
    if (last_id)
        line(out, "Last-Event-ID: ", last_id);
}
