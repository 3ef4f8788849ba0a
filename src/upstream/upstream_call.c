/* upstream_call — tools/call, the SDK call path's part of the upstream client: the request
 * written around the arguments' bytes (2025 era; the 2026 era's _meta and a retry's extra
 * members go through a tree), and the usual answer's result handed on as bytes
 * (up__try_raw_result). The request list, timers and the state machine stay in upstream.c;
 * this file must not learn about runs or workers. Loop thread only. */
#include "jsonfast.h"
#include "jsonscan.h"
#include "upstream_int.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int up__try_raw_result(struct upstream *up, const char *text, size_t len, char **bytes)
{
    struct js_member m[8], rm[16];
    /* Reals as written: the result's bytes go on to a reader (the worker's JSON parser, which
     * reads them as the tree path's %.17g would), and a structured result full of them need not
     * take the tree path. */
    struct js_scan sc = {.m = m, .max = 8, .sub = "result", .sm = rm, .smax = 16, .reals = 1};
    if (js_canon_scan(text, len, 1, &sc) < 0)
        return 0;
    int n = sc.n, rn = sc.sn;
    const struct js_member *id = js_get(m, n, "id"), *res = js_get(m, n, "result");
    if (!js_is(js_get(m, n, "jsonrpc"), "\"2.0\"") || js_get(m, n, "method") ||
        js_get(m, n, "error") || !id || !res || rn < 0 || js_get(rm, rn, "resultType") ||
        !(id->val[0] == '-' || (id->val[0] >= '0' && id->val[0] <= '9')))
        return 0;
    long long wire = strtoll(id->val, NULL, 10); /* canonical: at most 18 digits */
    struct up_req *r = up__find_wire(up, wire);
    if (!r || !r->call_cb)
        return 0;
    up__req_detach(r);
    r->call_cb(r->call_ud,
               &(struct up_result){.raw = res->val,
                                   .raw_len = res->vlen,
                                   .is_error = js_is(js_get(rm, rn, "isError"), "true"),
                                   .bytes = bytes},
               NULL);
    free(r);
    return 1;
}

/* A tool name written into JSON as it is (no byte that needs an escape, ASCII). */
static int plain_name(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p >= 0x80 || *p == '"' || *p == '\\')
            return 0;
    return 1;
}

/* The usual tools/call (2025 era, no extra members): its text written around the arguments'
 * bytes, the bytes rpc_dump(rpc_request(id, "tools/call", {name, arguments})) would give. */
static struct up_req *send_call_text(struct upstream *up, const char *tool, const char *args,
                                     size_t args_len, const char *meta, int64_t timeout_ms)
{
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"id\":";
    static const char mid[] = ",\"params\":{\"name\":\"";
    static const char arg[] = "\",\"arguments\":";
    struct up_req *r = up__req_new(up, NULL, NULL);
    char num[24], *q = num + sizeof(num);
    for (unsigned long long u = (unsigned long long)r->wire_id;; u /= 10) {
        *--q = (char)('0' + u % 10);
        if (u < 10)
            break;
    }
    size_t nl = (size_t)(num + sizeof(num) - q), tl = strlen(tool);
    if (!args) {
        args = "{}";
        args_len = 2;
    }
    size_t ml = meta ? strlen(meta) : 0;
    size_t len = sizeof(head) - 1 + nl + sizeof(mid) - 1 + tl + sizeof(arg) - 1 + args_len + ml + 2;
    char small[1024]; /* the usual call: no malloc (the transport copies the text) */
    char *text = len <= sizeof(small) ? small : xmalloc(len), *w = text;
    memcpy(w, head, sizeof(head) - 1);
    w += sizeof(head) - 1;
    memcpy(w, q, nl);
    w += nl;
    memcpy(w, mid, sizeof(mid) - 1);
    w += sizeof(mid) - 1;
    memcpy(w, tool, tl);
    w += tl;
    memcpy(w, arg, sizeof(arg) - 1);
    w += sizeof(arg) - 1;
    memcpy(w, args, args_len);
    w += args_len;
    if (ml)
        memcpy(w, meta, ml);
    w += ml;
    memcpy(w, "}}", 2);
    r = up__req_send(up, r, text, len, timeout_ms);
    if (text != small)
        free(text);
    return r;
}

/* The trace context as params' _meta member: as text for send_call_text
 * (,"_meta":{"traceparent":...}; caller frees; NULL: none), or set in a params tree. */
static char *trace_meta_text(const struct up_trace *t)
{
    if (!t || !t->traceparent)
        return NULL;
    /* appended piece by piece: this runs once per traced tool call, where a printf's format
     * parsing cost more than the rest of the member together */
    struct buf b = {0};
    buf_appends(&b, ",\"_meta\":{\"traceparent\":\"");
    buf_appends(&b, t->traceparent);
    if (t->tracestate && *t->tracestate) {
        buf_appends(&b, "\",\"tracestate\":\"");
        buf_appends(&b, t->tracestate);
    }
    buf_appends(&b, "\"}");
    return buf_steal(&b);
}

static void trace_meta_tree(json_t *params, const struct up_trace *t)
{
    if (!t || !t->traceparent)
        return;
    json_t *meta = json_object();
    json_object_set_new(meta, "traceparent", json_string(t->traceparent));
    if (t->tracestate && *t->tracestate)
        json_object_set_new(meta, "tracestate", json_string(t->tracestate));
    json_object_set_new(params, "_meta", meta);
}

int up_call_tool(const char *server, const char *tool, const char *args, size_t args_len,
                 json_t *extra, const struct up_trace *trace, int64_t timeout_ms, up_call_cb cb,
                 void *ud, uint64_t *handle, struct up_error *err)
{
    struct upstream *up = up_find(server);
    if (!up) {
        err->kind = "not_found";
        snprintf(err->message, sizeof(err->message), "no upstream server named %s", server);
        return -1;
    }
    if (up->state != UP_READY) {
        err->kind = "transport";
        snprintf(err->message, sizeof(err->message), "server %s is not connected (%s%s%s)", server,
                 up_state_name(up->state), up->error ? ": " : "", up->error ? up->error : "");
        return -1;
    }
    if (timeout_ms <= 0)
        timeout_ms = up__default_call_timeout();
    struct up_req *r;
    if (!extra && up->era != MCP_ERA_MODERN && plain_name(tool)) {
        char *meta = trace_meta_text(trace);
        r = send_call_text(up, tool, args, args_len, meta, timeout_ms);
        free(meta);
    } else {
        json_t *a =
            args ? jf_loadb(args, args_len, JF_ALLOW_NUL | JF_BIG_INTEGERS, NULL) : json_object();
        if (!json_is_object(a)) { /* the caller's bytes are canonical: cannot happen */
            json_decref(a);
            err->kind = "transport";
            snprintf(err->message, sizeof(err->message), "invalid arguments for %s", tool);
            return -1;
        }
        json_t *params = json_object(); /* {name, arguments}: not json_pack, see jsonrpc.c */
        json_object_set_new_nocheck(params, "name", json_string(tool));
        json_object_set_new_nocheck(params, "arguments", a);
        trace_meta_tree(params, trace); /* the 2026 era's _meta is added to it */
        const char *k;
        json_t *v;
        json_object_foreach(extra, k, v)
        {
            if (strcmp(k, "name") && strcmp(k, "arguments") && strcmp(k, "_meta"))
                json_object_set(params, k, v);
        }
        r = up__send_request(up, "tools/call", params, timeout_ms, NULL, NULL);
    }
    if (!r) {
        err->kind = "transport";
        snprintf(err->message, sizeof(err->message), "cannot send to %s", server);
        return -1;
    }
    r->call_cb = cb;
    r->call_ud = ud;
    *handle = r->handle;
    return 0;
}

void up_cancel_call(uint64_t handle, const char *reason)
{
    struct up_req *r = handle ? up__find_handle(handle) : NULL;
    if (r) {
        up__abandon(r->up, r->wire_id, reason, NULL, 0);
        up__req_detach(r);
        free(r);
    }
}

size_t up_calls_in_flight(void)
{
    size_t n = 0;
    for (struct up_req *r = up__reqs(); r; r = r->next)
        n += r->call_cb != NULL;
    return n;
}
