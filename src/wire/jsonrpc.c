/* jsonrpc — see jsonrpc.h. */
#include "jsonrpc.h"
#include "jsonfast.h"

#include <stdlib.h>
#include <string.h>

enum rpc_kind rpc_classify(json_t *msg, const char **why)
{
    *why = NULL;
    if (!json_is_object(msg)) {
        *why = "a JSON-RPC message must be an object";
        return RPC_INVALID;
    }
    json_t *v = json_object_get(msg, "jsonrpc");
    if (!json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0) {
        *why = "\"jsonrpc\" must be \"2.0\"";
        return RPC_INVALID;
    }
    json_t *id = json_object_get(msg, "id");
    json_t *method = json_object_get(msg, "method");
    if (id && !json_is_string(id) && !json_is_integer(id) && !json_is_null(id)) {
        *why = "\"id\" must be a string or an integer";
        return RPC_INVALID;
    }
    if (method) {
        if (!json_is_string(method)) {
            *why = "\"method\" must be a string";
            return RPC_INVALID;
        }
        json_t *params = json_object_get(msg, "params");
        if (params && !json_is_object(params) && !json_is_array(params)) {
            *why = "\"params\" must be an object or an array";
            return RPC_INVALID;
        }
        return id && !json_is_null(id) ? RPC_REQUEST : RPC_NOTIFICATION;
    }
    if (id && (json_object_get(msg, "result") || json_object_get(msg, "error")))
        return RPC_RESPONSE;
    *why = "neither a request (\"method\") nor a response (\"result\"/\"error\")";
    return RPC_INVALID;
}

/* Built member by member, not with json_pack: its format parsing was ~15 % of the gateway's
 * instructions per SDK call (callgrind). Same members, same order, same NULL
 * results as the json_pack forms they replace. */
static json_t *rpc_head(json_t *id)
{
    json_t *m = json_object();
    json_object_set_new_nocheck(m, "jsonrpc", json_string_nocheck("2.0"));
    json_object_set_nocheck(m, "id", id ? id : json_null());
    return m;
}

json_t *rpc_result(json_t *id, json_t *result)
{
    json_t *m = rpc_head(id);
    json_object_set_new_nocheck(m, "result", result ? result : json_object());
    return m;
}

json_t *rpc_error(json_t *id, int code, const char *message, json_t *data)
{
    if (!message) {
        json_decref(data);
        return NULL;
    }
    json_t *msg = json_string(message); /* NULL: not UTF-8 */
    if (!msg) {
        /* Text quoted from a client and cut mid-character, say: the error still goes out (an
         * answer is never lost to its wording), with every non-ASCII byte shown as '?'. */
        char *ascii = strdup(message);
        for (char *p = ascii; p && *p; p++)
            if ((unsigned char)*p >= 0x80)
                *p = '?';
        msg = json_string(ascii ? ascii : "error message lost (out of memory)");
        free(ascii);
    }
    json_t *err = json_object();
    json_object_set_new_nocheck(err, "code", json_integer(code));
    json_object_set_new_nocheck(err, "message", msg);
    if (data)
        json_object_set_new(err, "data", data);
    json_t *m = rpc_head(id);
    json_object_set_new_nocheck(m, "error", err);
    return m;
}

json_t *rpc_request(json_t *id, const char *method, json_t *params)
{
    json_t *m = json_object();
    json_object_set_new_nocheck(m, "jsonrpc", json_string_nocheck("2.0"));
    json_object_set_new(m, "method", json_string(method));
    if (id)
        json_object_set(m, "id", id);
    if (params)
        json_object_set_new(m, "params", params);
    return m;
}

char *rpc_dump(json_t *msg)
{
    return jf_dumps(msg); /* the bytes of json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY), faster */
}

/* Lines longer than this leave the framer without a copy (rpc_lines_feed). */
#define RPC_LINE_KEEP 65536

/* One line out to whichever callback was given (take: it frees the line). */
static void deliver(rpc_line_cb cb, rpc_line_take_cb take, void *ud, char *line, size_t len)
{
    if (take) {
        take(ud, line, len);
        return;
    }
    cb(ud, line, len);
    free(line);
}

static void feed(struct rpc_lines *l, const char *data, size_t len, rpc_line_cb cb,
                 rpc_line_take_cb owner, void *ud)
{
    while (len) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;
        if (!l->discarding) {
            if (l->max_line && l->buf.len + take > l->max_line) {
                l->discarding = 1;
                buf_reset(&l->buf);
            } else {
                buf_append(&l->buf, data, take);
            }
        }
        if (!nl)
            return;
        data += take + 1;
        len -= take + 1;
        if (l->discarding) {
            l->discarding = 0;
            deliver(cb, owner, ud, NULL, 0);
            continue;
        }
        size_t n = l->buf.len;
        if (n && l->buf.data[n - 1] == '\r')
            n--;
        if (n) {
            /* Out of the framer: the callback may feed more data or free the framer's owner.
             * A big line is handed over as it is (no second copy of a 50 MB result); a small
             * one is copied so the buffer is kept for the next. */
            char *line;
            if (n > RPC_LINE_KEEP) {
                l->buf.data[n] = '\0';
                line = buf_steal(&l->buf);
            } else {
                line = xstrndup(l->buf.data, n);
                buf_reset(&l->buf);
            }
            deliver(cb, owner, ud, line, n);
        } else {
            buf_reset(&l->buf);
        }
    }
}

void rpc_lines_feed(struct rpc_lines *l, const char *data, size_t len, rpc_line_cb cb, void *ud)
{
    feed(l, data, len, cb, NULL, ud);
}

void rpc_lines_feed_take(struct rpc_lines *l, const char *data, size_t len, rpc_line_take_cb cb,
                         void *ud)
{
    feed(l, data, len, NULL, cb, ud);
}

void rpc_lines_free(struct rpc_lines *l)
{
    buf_free(&l->buf);
}

json_t *rpc_canon_id(const char *val, size_t len)
{
    if (len >= 2 && val[0] == '"' && !memchr(val, '\\', len))
        return json_stringn_nocheck(val + 1, len - 2); /* checked UTF-8, no escape */
    if (len && (val[0] == '-' || (val[0] >= '0' && val[0] <= '9')))
        return json_integer(strtoll(val, NULL, 10)); /* canonical: at most 18 digits */
    return NULL;
}
