/* upstream_handshake — how codemcp opens an upstream server, in either protocol era.
 *
 * A server whose era is not known yet gets `server/discover` first (the 2026-07-28
 * dual-era client rule, versioning.mdx): a DiscoverResult naming 2026-07-28 makes it a
 * modern server (no initialize, `_meta` on every request, no session); any other answer
 * — an error that is not a modern one, or silence past a short probe on stdio — makes it a
 * legacy server, which gets `initialize` as before. -32022 UnsupportedProtocolVersion
 * from either side switches to a version the server lists (bounded: at most two switches
 * per start). The era is kept for the server process (stdio) or origin (HTTP).
 *
 * In the modern era, list changes arrive on a `subscriptions/listen` stream opened once
 * the server is READY (reopened after it ends); a server without listChanged whose
 * tools/list carried `ttlMs` is re-listed when that runs out. Loop thread only. */
#include "jsonfast.h"
#include "jsonrpc.h"
#include "log.h"
#include "upstream_int.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define LISTEN_RETRY_MS   1000 /* reopening an ended subscriptions/listen stream */
#define TTL_RELIST_MIN_MS 5000 /* re-listing at ttlMs, never more often than this */
#define MAX_ERA_FLIPS     2

static void send_initialize(struct upstream *up, const char *version);
static void send_discover(struct upstream *up);

/* ---- legacy: initialize ------------------------------------------------------------------ */

static void on_initialized(struct upstream *up, void *ud, json_t *result,
                           const struct up_error *err)
{
    (void)ud;
    if (err) {
        if (up->state == UP_FAILED)
            return; /* the transport reported the failure (and may reconnect) */
        json_t *supported;
        if (err->rpc_error && mcp_era_unsupported(err->rpc_error, &supported) &&
            up->era_flips < MAX_ERA_FLIPS) {
            if (mcp_era_list_has(supported, MCP_MODERN_VERSION)) {
                log_info("upstream", "%s: refuses the 2025 handshake and speaks %s; switching",
                         up->name, MCP_MODERN_VERSION);
                up->era_flips++;
                up->era = MCP_ERA_MODERN;
                send_discover(up);
                return;
            }
            const char *v = mcp_era_pick_legacy(supported);
            if (v && strcmp(v, up->protocol_version ? up->protocol_version : "") != 0) {
                up->era_flips++;
                send_initialize(up, v);
                return;
            }
        }
        up__handshake_failed(up, "initialize failed: %s", err->message);
        return;
    }
    json_t *v = json_object_get(result, "protocolVersion");
    if (json_is_string(v)) {
        free(up->protocol_version);
        up->protocol_version = xstrdup(json_string_value(v));
    }
    json_decref(up->server_info);
    up->server_info = json_incref(json_object_get(result, "serverInfo"));
    json_decref(up->capabilities);
    up->capabilities = json_incref(json_object_get(result, "capabilities"));
    up->era = MCP_ERA_LEGACY;
    log_info("upstream", "%s: protocol %s, era %s", up->name, up->protocol_version,
             mcp_era_name(up->era));
    up__notify(up, "notifications/initialized", NULL);
    up__list_tools(up);
}

static void send_initialize(struct upstream *up, const char *version)
{
    free(up->protocol_version);
    up->protocol_version = xstrdup(version);
    json_t *params = json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s}}", "protocolVersion", version,
                               "capabilities", "roots", "listChanged", 0, "clientInfo", "name",
                               "codemcp", "version", CODEMCP_VERSION);
    if (up__request(up, "initialize", params, up__handshake_budget(up), on_initialized, NULL) < 0)
        up__transport_failed(up, "cannot send initialize");
}

/* ---- modern: server/discover ------------------------------------------------------------- */

static void become_modern(struct upstream *up, json_t *result)
{
    up->era = MCP_ERA_MODERN;
    free(up->protocol_version);
    up->protocol_version = xstrdup(MCP_MODERN_VERSION);
    json_t *info = json_object_get(json_object_get(result, "_meta"), MCP_META_SERVER_INFO);
    if (!info)
        info = json_object_get(result, "serverInfo");
    json_decref(up->server_info);
    up->server_info = json_incref(info);
    json_decref(up->capabilities);
    up->capabilities = json_incref(json_object_get(result, "capabilities"));
    log_info("upstream", "%s: protocol %s, era %s", up->name, up->protocol_version,
             mcp_era_name(up->era));
    up__list_tools(up);
}

static void on_discovered(struct upstream *up, void *ud, json_t *result, const struct up_error *err)
{
    (void)ud;
    if (up->state == UP_FAILED)
        return;
    if (!err) {
        json_t *versions = json_object_get(result, "supportedVersions");
        if (mcp_era_list_has(versions, MCP_MODERN_VERSION)) {
            become_modern(up, result);
            return;
        }
        const char *v = mcp_era_pick_legacy(versions);
        log_info("upstream", "%s: server/discover lists no version of the 2026 era; using %s",
                 up->name, v ? v : MCP_LEGACY_LATEST);
        up->era = MCP_ERA_LEGACY;
        send_initialize(up, v ? v : MCP_LEGACY_LATEST);
        return;
    }
    json_t *supported;
    if (err->rpc_error && mcp_era_unsupported(err->rpc_error, &supported)) {
        /* A modern server that did not take this request: retry once if it lists our
         * version (a server may refuse a first choice), else a legacy one it lists. */
        if (mcp_era_list_has(supported, MCP_MODERN_VERSION) && up->era_flips < MAX_ERA_FLIPS) {
            up->era_flips++;
            log_info("upstream", "%s: -32022 for server/discover although it lists %s; retrying",
                     up->name, MCP_MODERN_VERSION);
            send_discover(up);
            return;
        }
        const char *v = mcp_era_pick_legacy(supported);
        if (!v) {
            char *list = supported ? jf_dumps(supported) : NULL; /* big integers as digits */
            up__handshake_failed(up,
                                 "the server supports no protocol version codemcp speaks "
                                 "(it supports %s; codemcp speaks %s and 2025-11-25 … "
                                 "2024-11-05)",
                                 list ? list : "none", MCP_MODERN_VERSION);
            free(list);
            return;
        }
        up->era = MCP_ERA_LEGACY;
        send_initialize(up, v);
        return;
    }
    if (up->era == MCP_ERA_MODERN) {
        /* We were told to speak 2026 (by -32022 on initialize) and discover still fails. */
        up__handshake_failed(up, "server/discover failed: %s", err->message);
        return;
    }
    /* Any other error, or silence: a legacy server (the spec's stdio and HTTP fallback). */
    log_debug("upstream", "%s: server/discover: %s; using the 2025 handshake", up->name,
              err->message);
    up->era = MCP_ERA_LEGACY;
    send_initialize(up, MCP_LEGACY_LATEST);
}

static void send_discover(struct upstream *up)
{
    int64_t budget = up__handshake_budget(up);
    /* On stdio a legacy server may never answer an unknown method; over HTTP every request
     * gets a status, so the whole budget applies. */
    /* stdio: how long a silent legacy server may delay us (CODEMCP_DISCOVER_PROBE_MS). A
     * server slower than this to answer is used in the 2025 era, which a dual-era server also
     * speaks. */
    long probe = up__discover_probe_ms;
    if (up->ops == &up_stdio_ops && up->era != MCP_ERA_MODERN && probe > 0 && budget > probe)
        budget = probe;
    if (up__request(up, "server/discover", NULL, budget, on_discovered, NULL) < 0)
        up__transport_failed(up, "cannot send server/discover");
}

void up__transport_open(struct upstream *up)
{
    up->era_flips = 0;
    up->listen_open = 0;
    up->listen_unsupported = 0;
    /* "protocol": "legacy" | "modern" skips the probe for a server known to need it. */
    json_t *p = up->cfg && up->cfg->entry ? json_object_get(up->cfg->entry, "protocol") : NULL;
    const char *forced = json_is_string(p) ? json_string_value(p) : "auto";
    if (strcmp(forced, "legacy") == 0)
        up->era = MCP_ERA_LEGACY;
    else if (strcmp(forced, "modern") == 0)
        up->era = MCP_ERA_MODERN;
    else if (strcmp(forced, "auto") != 0)
        log_warn("upstream", "%s: ignoring \"protocol\": \"%s\" (use auto, legacy or modern)",
                 up->name, forced);
    if (up->era == MCP_ERA_LEGACY)
        send_initialize(up, MCP_LEGACY_LATEST);
    else
        send_discover(up);
}

/* ---- modern: the change stream -------------------------------------------------------------- */

static void listen_again(void *ud);

static void on_listen_ended(struct upstream *up, void *ud, json_t *result,
                            const struct up_error *err)
{
    (void)ud;
    (void)result;
    up->listen_open = 0;
    if (up->state != UP_READY || up->era != MCP_ERA_MODERN)
        return;
    json_t *code = err && err->rpc_error ? json_object_get(err->rpc_error, "code") : NULL;
    if (json_is_integer(code) && json_integer_value(code) == RPC_METHOD_NOT_FOUND) {
        log_info("upstream", "%s: no subscriptions/listen; tool list changes come from ttlMs only",
                 up->name);
        up->listen_unsupported = 1;
        up__era_ready(up);
        return;
    }
    log_debug("upstream", "%s: subscriptions/listen ended (%s); reopening", up->name,
              err ? err->message : "closed by the server");
    lp_timer_start(&up->listen_timer, LISTEN_RETRY_MS, listen_again, up);
}

static void relist_at_ttl(void *ud)
{
    struct upstream *up = ud;
    if (up->state != UP_READY || up->listing)
        return;
    log_debug("upstream", "%s: the tool list's ttlMs ran out; re-listing", up->name);
    up__list_tools(up);
}

static void listen_again(void *ud)
{
    struct upstream *up = ud;
    if (up->state != UP_READY || up->era != MCP_ERA_MODERN || up->listen_open)
        return;
    json_t *params = json_pack("{s:{s:b}}", "notifications", "toolsListChanged", 1);
    if (up__request(up, "subscriptions/listen", params, 0, on_listen_ended, NULL) == 0)
        up->listen_open = 1;
}

void up__era_ready(struct upstream *up)
{
    if (up->era != MCP_ERA_MODERN)
        return;
    json_t *lc = json_object_get(json_object_get(up->capabilities, "tools"), "listChanged");
    if (json_is_true(lc) && !up->listen_unsupported) {
        if (!up->listen_open)
            lp_timer_start(&up->listen_timer, 0, listen_again, up);
    } else if (up->list_ttl_ms > 0) {
        int64_t at = up->list_ttl_ms < TTL_RELIST_MIN_MS ? TTL_RELIST_MIN_MS : up->list_ttl_ms;
        lp_timer_start(&up->listen_timer, at, relist_at_ttl, up);
    }
}

void up__era_stop(struct upstream *up)
{
    lp_timer_stop(&up->listen_timer);
}
