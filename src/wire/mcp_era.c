/* mcp_era — protocol-era facts and the 2026-07-28 request envelope (see mcp_era.h). */
#include "mcp_era.h"

#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const legacy_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                              "2024-11-05", NULL};

const char *mcp_era_name(enum mcp_era era)
{
    switch (era) {
    case MCP_ERA_LEGACY:
        return "2025 (legacy)";
    case MCP_ERA_MODERN:
        return "2026 (modern)";
    case MCP_ERA_UNKNOWN:
        break;
    }
    return "unknown";
}

int mcp_era_is_legacy_version(const char *v)
{
    for (size_t i = 0; v && legacy_versions[i]; i++)
        if (strcmp(v, legacy_versions[i]) == 0)
            return 1;
    return 0;
}

int mcp_era_is_modern_version(const char *v)
{
    return v && strcmp(v, MCP_MODERN_VERSION) == 0;
}

json_t *mcp_era_request_meta(const char *version, const char *client_name,
                             const char *client_version, json_t *capabilities)
{
    json_t *caps = json_is_object(capabilities) ? json_deep_copy(capabilities) : json_object();
    return json_pack("{s:s, s:{s:s, s:s}, s:o}", MCP_META_PROTOCOL_VERSION, version,
                     MCP_META_CLIENT_INFO, "name", client_name, "version", client_version,
                     MCP_META_CLIENT_CAPS, caps);
}

void mcp_era_attach_meta(json_t *params, json_t *meta)
{
    json_t *have = json_object_get(params, "_meta");
    if (json_is_object(have)) {
        json_object_update(have, meta);
        json_decref(meta);
    } else {
        json_object_set_new(params, "_meta", meta);
    }
}

int mcp_era_list_has(json_t *list, const char *v)
{
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x)
    {
        if (json_is_string(x) && strcmp(json_string_value(x), v) == 0)
            return 1;
    }
    return 0;
}

int mcp_era_unsupported(json_t *error, json_t **supported)
{
    *supported = NULL;
    json_t *code = json_object_get(error, "code");
    if (!json_is_integer(code) || json_integer_value(code) != MCP_UNSUPPORTED_VERSION)
        return 0;
    json_t *s = json_object_get(json_object_get(error, "data"), "supported");
    *supported = json_is_array(s) ? s : NULL;
    return 1;
}

const char *mcp_era_pick_legacy(json_t *supported)
{
    for (size_t i = 0; legacy_versions[i]; i++) /* ours, newest first */
        if (mcp_era_list_has(supported, legacy_versions[i]))
            return legacy_versions[i];
    return NULL;
}

int mcp_era_is_input_required(json_t *result)
{
    json_t *t = json_object_get(result, "resultType");
    return json_is_string(t) && strcmp(json_string_value(t), "input_required") == 0;
}

void mcp_era_describe_input_required(json_t *result, char *out, size_t n)
{
    size_t used = (size_t)snprintf(out, n, "asks for input");
    json_t *reqs = json_object_get(result, "inputRequests");
    const char *key;
    json_t *rq;
    int first = 1;
    json_object_foreach(reqs, key, rq)
    {
        if (used >= n)
            break;
        json_t *m = json_object_get(rq, "method");
        json_t *msg = json_object_get(json_object_get(rq, "params"), "message");
        used += (size_t)snprintf(out + used, n - used, "%s %s", first ? ":" : ";",
                                 json_is_string(m) ? json_string_value(m) : "(unknown kind)");
        if (used < n && json_is_string(msg))
            used += (size_t)snprintf(out + used, n - used, " \"%.200s\"", json_string_value(msg));
        first = 0;
    }
    if (first && used < n)
        snprintf(out + used, n - used, " (no input requests listed; the server kept state)");
}

/* ---- routing headers -------------------------------------------------------------------- */

char *mcp_era_header_value(const char *v)
{
    size_t n = strlen(v);
    int plain = n > 0 && v[0] != ' ' && v[0] != '\t' && v[n - 1] != ' ' && v[n - 1] != '\t';
    for (size_t i = 0; plain && i < n; i++)
        plain = (unsigned char)v[i] >= 0x20 && (unsigned char)v[i] <= 0x7e;
    if (plain && !(n >= 11 && strncmp(v, "=?base64?", 9) == 0 && strcmp(v + n - 2, "?=") == 0))
        return xstrdup(v);
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    struct buf b = {0};
    buf_append(&b, "=?base64?", 9);
    for (size_t i = 0; i < n; i += 3) {
        unsigned x = (unsigned)(unsigned char)v[i] << 16;
        if (i + 1 < n)
            x |= (unsigned)(unsigned char)v[i + 1] << 8;
        if (i + 2 < n)
            x |= (unsigned char)v[i + 2];
        char q[4] = {tab[(x >> 18) & 63], tab[(x >> 12) & 63], i + 1 < n ? tab[(x >> 6) & 63] : '=',
                     i + 2 < n ? tab[x & 63] : '='};
        buf_append(&b, q, 4);
    }
    buf_append(&b, "?=", 3); /* with the NUL */
    return buf_steal(&b);
}

static int is_token(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              strchr("!#$%&'*+-.^_`|~", *s)))
            return 0;
    return 1;
}

struct hdr_check {
    json_t *seen; /* lower-cased names */
    char *why;
    size_t n;
};

/* reachable: schema is reached from the root through `properties` keys only. */
static int check_walk(json_t *schema, int reachable, struct hdr_check *c, int depth)
{
    if (!json_is_object(schema) || depth > 64)
        return 0;
    const char *key;
    json_t *v;
    json_t *h = json_object_get(schema, "x-mcp-header");
    if (h) {
        if (!reachable) {
            snprintf(c->why, c->n,
                     "x-mcp-header on a property not reached through properties alone");
            return -1;
        }
        if (!json_is_string(h) || !is_token(json_string_value(h))) {
            snprintf(c->why, c->n, "x-mcp-header must be a non-empty HTTP token");
            return -1;
        }
        json_t *t = json_object_get(schema, "type");
        const char *ts = json_is_string(t) ? json_string_value(t) : "";
        if (strcmp(ts, "string") != 0 && strcmp(ts, "integer") != 0 && strcmp(ts, "boolean") != 0) {
            snprintf(c->why, c->n,
                     "x-mcp-header \"%s\" on a property of type %s (string, integer "
                     "or boolean only)",
                     json_string_value(h), *ts ? ts : "(none)");
            return -1;
        }
        char lower[256];
        snprintf(lower, sizeof(lower), "%s", json_string_value(h));
        for (char *p = lower; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        if (json_object_get(c->seen, lower)) {
            snprintf(c->why, c->n, "x-mcp-header \"%s\" is used twice", json_string_value(h));
            return -1;
        }
        json_object_set_new(c->seen, lower, json_true());
    }
    json_object_foreach(schema, key, v)
    {
        if (strcmp(key, "properties") == 0 && json_is_object(v)) {
            const char *pk;
            json_t *pv;
            json_object_foreach(v, pk, pv)
            {
                if (check_walk(pv, reachable, c, depth + 1) < 0)
                    return -1;
            }
        } else if (json_is_object(v)) {
            if (check_walk(v, 0, c, depth + 1) < 0)
                return -1;
        } else if (json_is_array(v)) {
            size_t i;
            json_t *x;
            json_array_foreach(v, i, x)
            {
                if (check_walk(x, 0, c, depth + 1) < 0)
                    return -1;
            }
        }
    }
    return 0;
}

int mcp_era_check_param_headers(json_t *input_schema, char *why, size_t n)
{
    struct hdr_check c = {json_object(), why, n};
    int rc = check_walk(input_schema, 1, &c, 0);
    json_decref(c.seen);
    return rc;
}

static void emit_walk(json_t *schema, json_t *value,
                      void (*emit)(void *ud, const char *name, const char *value), void *ud,
                      int depth)
{
    if (!json_is_object(schema) || depth > 64)
        return;
    json_t *h = json_object_get(schema, "x-mcp-header");
    if (json_is_string(h) && value && !json_is_null(value)) {
        char num[32];
        const char *text = NULL;
        if (json_is_string(value))
            text = json_string_value(value);
        else if (json_is_boolean(value))
            text = json_is_true(value) ? "true" : "false";
        else if (json_is_integer(value) && json_integer_value(value) <= 9007199254740991LL &&
                 json_integer_value(value) >= -9007199254740991LL) {
            snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(value));
            text = num;
        }
        if (text) {
            char *enc = mcp_era_header_value(text);
            emit(ud, json_string_value(h), enc);
            free(enc);
        }
    }
    json_t *props = json_object_get(schema, "properties");
    const char *k;
    json_t *sub;
    json_object_foreach(props, k, sub)
    {
        json_t *child = json_is_object(value) ? json_object_get(value, k) : NULL;
        if (child)
            emit_walk(sub, child, emit, ud, depth + 1);
    }
}

void mcp_era_param_headers(json_t *input_schema, json_t *args,
                           void (*emit)(void *ud, const char *name, const char *value), void *ud)
{
    emit_walk(input_schema, args, emit, ud, 0);
}

/* ---- serving the 2026 era ----------------------------------------------------------------- */

static const char *const log_levels[] = {"emergency", "alert", "critical", "error", "warning",
                                         "notice",    "info",  "debug",    NULL};

int mcp_era_is_modern_request(json_t *params)
{
    json_t *meta = json_object_get(params, "_meta");
    return json_object_get(meta, MCP_META_PROTOCOL_VERSION) != NULL;
}

json_t *mcp_era_supported_versions(void)
{
    json_t *a = json_pack("[s]", MCP_MODERN_VERSION);
    for (size_t i = 0; legacy_versions[i]; i++)
        json_array_append_new(a, json_string(legacy_versions[i]));
    return a;
}

int mcp_era_request_log_level(json_t *params)
{
    json_t *v = json_object_get(json_object_get(params, "_meta"), MCP_META_LOG_LEVEL);
    for (int i = 0; json_is_string(v) && log_levels[i]; i++)
        if (strcmp(log_levels[i], json_string_value(v)) == 0)
            return i;
    return -1;
}

static json_t *invalid(json_t *id, const char *why, const char *key)
{
    return json_pack("{s:s, s:O?, s:{s:i, s:s, s:{s:s}}}", "jsonrpc", "2.0", "id", id, "error",
                     "code", -32602, "message", why, "data", "key", key);
}

json_t *mcp_era_check_request(json_t *id, json_t *params)
{
    json_t *meta = json_object_get(params, "_meta");
    json_t *v = json_object_get(meta, MCP_META_PROTOCOL_VERSION);
    if (!json_is_string(v))
        return invalid(id, "_meta." MCP_META_PROTOCOL_VERSION " must be a string",
                       MCP_META_PROTOCOL_VERSION);
    if (!mcp_era_is_modern_version(json_string_value(v))) {
        /* The asked version quoted up to 80 bytes, cut before a broken character: json_pack
         * refuses text that is not UTF-8, and the request would pass as if it were right. */
        char asked[81], msg[200];
        snprintf(asked, sizeof(asked), "%s", json_string_value(v));
        utf8_trim_cut(asked);
        snprintf(msg, sizeof(msg),
                 "Unsupported protocol version: %s (this server speaks %s; "
                 "2025 clients use initialize)",
                 asked, MCP_MODERN_VERSION);
        return json_pack("{s:s, s:O?, s:{s:i, s:s, s:{s:o, s:O}}}", "jsonrpc", "2.0", "id", id,
                         "error", "code", MCP_UNSUPPORTED_VERSION, "message", msg, "data",
                         "supported", mcp_era_supported_versions(), "requested", v);
    }
    json_t *caps = json_object_get(meta, MCP_META_CLIENT_CAPS);
    if (!json_is_object(caps))
        return invalid(
            id, "_meta." MCP_META_CLIENT_CAPS " is required (an object) in the 2026-07-28 era",
            MCP_META_CLIENT_CAPS);
    json_t *info = json_object_get(meta, MCP_META_CLIENT_INFO);
    if (info && (!json_is_object(info) || !json_is_string(json_object_get(info, "name"))))
        return invalid(id, "_meta." MCP_META_CLIENT_INFO " must be an object with a string name",
                       MCP_META_CLIENT_INFO);
    json_t *lvl = json_object_get(meta, MCP_META_LOG_LEVEL);
    if (lvl && mcp_era_request_log_level(params) < 0)
        return invalid(id,
                       "_meta." MCP_META_LOG_LEVEL " must be one of debug, info, notice, "
                       "warning, error, critical, alert, emergency",
                       MCP_META_LOG_LEVEL);
    return NULL;
}

int mcp_era_removed_method(const char *method)
{
    static const char *const removed[] = {"ping",
                                          "logging/setLevel",
                                          "initialize",
                                          "notifications/initialized",
                                          "notifications/roots/list_changed",
                                          NULL};
    for (size_t i = 0; removed[i]; i++)
        if (strcmp(method, removed[i]) == 0)
            return 1;
    return 0;
}

/* Our serverInfo, borrowed: built once and shared by every result (read-only; results are
 * encoded and freed right after). Building it per result was ~5k instructions of a 2026
 * request. */
static json_t *server_info(void)
{
    static json_t *info;
    if (!info)
        info = json_pack("{s:s, s:s, s:s}", "name", "codemcp", "title", "codemcp code-mode gateway",
                         "version", CODEMCP_VERSION);
    return info;
}

static json_t *server_info_meta(void)
{
    return json_pack("{s:O}", MCP_META_SERVER_INFO, server_info());
}

json_t *mcp_era_discover_result(json_t *capabilities, const char *instructions)
{
    json_t *r = json_pack("{s:o, s:o, s:s, s:i, s:s, s:o}", "supportedVersions",
                          mcp_era_supported_versions(), "capabilities",
                          capabilities ? capabilities : json_object(), "resultType", "complete",
                          "ttlMs", 0, "cacheScope", "private", "_meta", server_info_meta());
    if (instructions)
        json_object_set_new(r, "instructions", json_string(instructions));
    return r;
}

void mcp_era_finish_result(json_t *result, int64_t ttl_ms)
{
    static json_t *complete, *meta; /* shared like server_info() */
    if (!json_is_object(result))
        return;
    if (!complete) {
        complete = json_string("complete");
        meta = server_info_meta();
    }
    if (!json_object_get(result, "resultType"))
        json_object_set(result, "resultType", complete);
    json_t *have = json_object_get(result, "_meta");
    if (json_is_object(have))
        json_object_set(have, MCP_META_SERVER_INFO, server_info());
    else
        json_object_set(result, "_meta", meta);
    if (ttl_ms >= 0) {
        json_object_set_new(result, "ttlMs", json_integer(ttl_ms));
        json_object_set_new(result, "cacheScope", json_string("private"));
    }
}

/* ---- serving Streamable HTTP: the routing headers ------------------------------------------ */

char *mcp_era_header_decode(const char *v)
{
    size_t n = strlen(v);
    if (!(n >= 11 && strncmp(v, "=?base64?", 9) == 0 && strcmp(v + n - 2, "?=") == 0))
        return xstrdup(v);
    const char *p = v + 9;
    size_t len = n - 11;
    struct buf b = {0};
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        char c = p[i];
        int d = c >= 'A' && c <= 'Z'   ? c - 'A'
                : c >= 'a' && c <= 'z' ? c - 'a' + 26
                : c >= '0' && c <= '9' ? c - '0' + 52
                : c == '+'             ? 62
                : c == '/'             ? 63
                : c == '='             ? -2
                                       : -1;
        if (d == -1 || (d == -2 && i + 2 < len)) {
            buf_free(&b);
            return NULL;
        }
        if (d == -2)
            break;
        acc = (acc << 6) | (unsigned)d;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            char byte = (char)((acc >> bits) & 0xff);
            if (byte == 0) {
                buf_free(&b);
                return NULL;
            }
            buf_append(&b, &byte, 1);
        }
    }
    buf_append(&b, "", 1);
    return buf_steal(&b);
}

static json_t *mismatch(json_t *id, int *status, const char *fmt, const char *a, const char *b)
{
    char msg[300];
    snprintf(msg, sizeof(msg), fmt, a, b);
    *status = 400;
    return json_pack("{s:s, s:O?, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error", "code",
                     MCP_HEADER_MISMATCH, "message", msg);
}

json_t *mcp_era_check_http_headers(json_t *msg, const char *version, const char *method,
                                   const char *name, int *status)
{
    json_t *id = json_object_get(msg, "id");
    json_t *params = json_object_get(msg, "params");
    const char *body_method = json_string_value(json_object_get(msg, "method"));
    json_t *bv = json_object_get(json_object_get(params, "_meta"), MCP_META_PROTOCOL_VERSION);
    const char *body_version = json_string_value(bv);
    if (!version)
        return mismatch(id, status, "Header mismatch: MCP-Protocol-Version is required%s%s", "",
                        "");
    if (!body_version || strcmp(version, body_version) != 0)
        return mismatch(id, status,
                        "Header mismatch: MCP-Protocol-Version '%.60s' does not match the body's "
                        "_meta protocol version '%.60s'",
                        version, body_version ? body_version : "(none)");
    if (!mcp_era_is_modern_version(version)) {
        json_t *err = mcp_era_check_request(id, params);
        *status = 400;
        return err;
    }
    if (!method)
        return mismatch(id, status, "Header mismatch: Mcp-Method is required%s%s", "", "");
    if (!body_method || strcmp(method, body_method) != 0)
        return mismatch(id, status,
                        "Header mismatch: Mcp-Method '%.60s' does not match the body's method "
                        "'%.60s'",
                        method, body_method ? body_method : "(none)");
    int named = strcmp(body_method, "tools/call") == 0 || strcmp(body_method, "prompts/get") == 0 ||
                strcmp(body_method, "resources/read") == 0;
    if (!named)
        return NULL;
    json_t *bn =
        json_object_get(params, strcmp(body_method, "resources/read") == 0 ? "uri" : "name");
    if (!name)
        return mismatch(id, status, "Header mismatch: Mcp-Name is required for %s%s", body_method,
                        "");
    char *decoded = mcp_era_header_decode(name);
    int same = decoded && json_is_string(bn) && strcmp(decoded, json_string_value(bn)) == 0;
    json_t *err = same ? NULL
                       : mismatch(id, status,
                                  "Header mismatch: Mcp-Name '%.80s' does not match the body's "
                                  "'%.80s'",
                                  name, json_is_string(bn) ? json_string_value(bn) : "(none)");
    free(decoded);
    return err;
}
