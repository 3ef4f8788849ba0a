/* mcp_era — protocol-era facts and the 2026-07-28 request envelope (see mcp_era.h). */
#include "mcp_era.h"

#include <stdio.h>
#include <string.h>

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
