/* test_mcp_era — the protocol-era rules of src/wire/mcp_era.c: version lists, the -32022 reading,
 * input_required descriptions, the Streamable HTTP header encoding (the spec's own examples)
 * and x-mcp-header validation, and the checks a 2026 request's envelope must pass. */
#include "check.h"
#include "mcp_era.h"

#include <stdlib.h>
#include <string.h>

static json_t *j(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v) {
        fprintf(stderr, "bad test JSON: %s: %s\n", e.text, text);
        exit(2);
    }
    return v;
}

static void check_header(const char *in, const char *want)
{
    char *got = mcp_era_header_value(in);
    CHECK(strcmp(got, want) == 0, "header value \"%s\" -> %s (got %s)", in, want, got);
    free(got);
}

static void check_schema(const char *schema, int ok, const char *why_part)
{
    json_t *s = j(schema);
    char why[200] = "";
    int rc = mcp_era_check_param_headers(s, why, sizeof(why));
    CHECK((rc == 0) == ok && (!why_part || strstr(why, why_part)), "x-mcp-header %s: %s (%s)",
          ok ? "valid" : "invalid", schema, why);
    json_decref(s);
}

struct emitted {
    char text[512];
};

static void on_param(void *ud, const char *name, const char *value)
{
    struct emitted *e = ud;
    size_t n = strlen(e->text);
    snprintf(e->text + n, sizeof(e->text) - n, "%s=%s;", name, value);
}

static void check_request(const char *params, int want_code)
{
    json_t *p = j(params);
    json_t *id = json_integer(7);
    json_t *err = mcp_era_check_request(id, p);
    int code =
        err ? (int)json_integer_value(json_object_get(json_object_get(err, "error"), "code")) : 0;
    int id_ok = !err || json_equal(json_object_get(err, "id"), id);
    CHECK(code == want_code && id_ok, "request %s -> %d (got %d%s)", params, want_code, code,
          id_ok ? "" : ", id not echoed");
    json_decref(err);
    json_decref(id);
    json_decref(p);
}

static void check_http(const char *msg, const char *v, const char *m, const char *n, int want_code)
{
    json_t *body = j(msg);
    int status = 0;
    json_t *err = mcp_era_check_http_headers(body, v, m, n, &status);
    int code =
        err ? (int)json_integer_value(json_object_get(json_object_get(err, "error"), "code")) : 0;
    int id_ok = !err || json_equal(json_object_get(err, "id"), json_object_get(body, "id"));
    CHECK(code == want_code && (!err || status == 400) && id_ok,
          "headers v=%s m=%s n=%s on %s -> %d (got %d, status %d)", v ? v : "-", m ? m : "-",
          n ? n : "-", msg, want_code, code, status);
    json_decref(err);
    json_decref(body);
}

int main(void)
{
    CHECK(mcp_era_is_modern_version("2026-07-28") && !mcp_era_is_modern_version("2025-11-25"),
          "2026-07-28 is the modern version");
    CHECK(mcp_era_is_legacy_version("2024-11-05") && !mcp_era_is_legacy_version("2026-07-28"),
          "legacy versions");

    json_t *sup = j("[\"2026-07-28\", \"2025-06-18\", \"1999-01-01\"]");
    CHECK(strcmp(mcp_era_pick_legacy(sup), "2025-06-18") == 0, "pick_legacy takes ours, newest");
    json_decref(sup);
    sup = j("[\"2026-07-28\"]");
    CHECK(mcp_era_pick_legacy(sup) == NULL, "pick_legacy: none of ours");
    json_decref(sup);

    json_t *e = j("{\"code\":-32022,\"message\":\"x\",\"data\":{\"supported\":[\"2026-07-28\"]}}");
    json_t *list;
    CHECK(mcp_era_unsupported(e, &list) == 1 && mcp_era_list_has(list, "2026-07-28"),
          "-32022 gives its supported list");
    json_decref(e);
    e = j("{\"code\":-32601,\"message\":\"Method not found\"}");
    CHECK(mcp_era_unsupported(e, &list) == 0 && list == NULL, "-32601 is not -32022");
    json_decref(e);

    json_t *r = j("{\"resultType\":\"input_required\",\"inputRequests\":{\"ok\":{\"method\":"
                  "\"elicitation/create\",\"params\":{\"message\":\"Delete 3 files?\"}},"
                  "\"r\":{\"method\":\"roots/list\"}}}");
    char what[300];
    mcp_era_describe_input_required(r, what, sizeof(what));
    CHECK(mcp_era_is_input_required(r) && strstr(what, "elicitation/create \"Delete 3 files?\"") &&
              strstr(what, "; roots/list"),
          "input_required described: %s", what);
    json_decref(r);
    r = j("{\"content\":[]}");
    CHECK(!mcp_era_is_input_required(r), "no resultType is complete");
    json_decref(r);

    /* The encoding examples of transports/streamable-http (Value Encoding). */
    check_header("us-west1", "us-west1");
    check_header("Hello, \xe4\xb8\x96\xe7\x95\x8c", "=?base64?SGVsbG8sIOS4lueVjA==?=");
    check_header(" padded ", "=?base64?IHBhZGRlZCA=?=");
    check_header("line1\nline2", "=?base64?bGluZTEKbGluZTI=?=");
    check_header("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
    check_header("", "=?base64?\?=");

    check_schema("{\"type\":\"object\",\"properties\":{\"r\":{\"type\":\"string\",\"x-mcp-header\":"
                 "\"Region\"},\"n\":{\"type\":\"object\",\"properties\":{\"k\":{\"type\":"
                 "\"integer\",\"x-mcp-header\":\"Key\"}}}}}",
                 1, NULL);
    check_schema("{\"properties\":{\"a\":{\"type\":\"number\",\"x-mcp-header\":\"A\"}}}", 0,
                 "type number");
    check_schema("{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"My Header\"}}}", 0,
                 "token");
    check_schema("{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"A\"},\"b\":{"
                 "\"type\":\"string\",\"x-mcp-header\":\"a\"}}}",
                 0, "twice");
    check_schema("{\"properties\":{\"a\":{\"type\":\"array\",\"items\":{\"type\":\"string\","
                 "\"x-mcp-header\":\"A\"}}}}",
                 0, "properties alone");
    check_schema("{\"oneOf\":[{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":"
                 "\"A\"}}}]}",
                 0, "properties alone");

    json_t *schema = j("{\"properties\":{\"region\":{\"type\":\"string\",\"x-mcp-header\":"
                       "\"Region\"},\"n\":{\"type\":\"integer\",\"x-mcp-header\":\"N\"},\"v\":{"
                       "\"type\":\"boolean\",\"x-mcp-header\":\"V\"},\"z\":{\"type\":\"string\","
                       "\"x-mcp-header\":\"Z\"}}}");
    json_t *args = j("{\"region\":\"Z\xc3\xbcrich\",\"n\":42,\"v\":false,\"z\":null}");
    struct emitted em = {""};
    mcp_era_param_headers(schema, args, on_param, &em);
    CHECK(strcmp(em.text, "Region==?base64?WsO8cmljaA==?=;N=42;V=false;") == 0,
          "Mcp-Param values encoded, null skipped: %s", em.text);
    json_decref(schema);
    json_decref(args);

    const char *M = "\"io.modelcontextprotocol/protocolVersion\"";
    const char *C = "\"io.modelcontextprotocol/clientCapabilities\"";
    char buf[400];
    snprintf(buf, sizeof(buf), "{\"_meta\":{%s:\"2026-07-28\",%s:{}}}", M, C);
    check_request(buf, 0);
    snprintf(buf, sizeof(buf), "{\"_meta\":{%s:\"2099-01-01\",%s:{}}}", M, C);
    check_request(buf, MCP_UNSUPPORTED_VERSION);
    snprintf(buf, sizeof(buf), "{\"_meta\":{%s:\"2025-11-25\",%s:{}}}", M, C);
    check_request(buf, MCP_UNSUPPORTED_VERSION); /* a legacy version belongs to initialize */
    snprintf(buf, sizeof(buf), "{\"_meta\":{%s:\"2026-07-28\"}}", M);
    check_request(buf, -32602);
    snprintf(buf, sizeof(buf), "{\"_meta\":{%s:7,%s:{}}}", M, C);
    check_request(buf, -32602);
    snprintf(buf, sizeof(buf),
             "{\"_meta\":{%s:\"2026-07-28\",%s:{},\"io.modelcontextprotocol/clientInfo\":\"x\"}}",
             M, C);
    check_request(buf, -32602);
    snprintf(buf, sizeof(buf),
             "{\"_meta\":{%s:\"2026-07-28\",%s:{},\"io.modelcontextprotocol/logLevel\":\"loud\"}}",
             M, C);
    check_request(buf, -32602);

    json_t *d = mcp_era_discover_result(NULL, "hi");
    json_t *vs = json_object_get(d, "supportedVersions");
    CHECK(json_array_size(vs) == 5 && mcp_era_list_has(vs, "2026-07-28") &&
              mcp_era_list_has(vs, "2024-11-05") &&
              json_is_object(json_object_get(json_object_get(d, "_meta"), MCP_META_SERVER_INFO)),
          "discover lists both eras and names the server");
    json_decref(d);
    json_t *res = j("{\"tools\":[]}");
    mcp_era_finish_result(res, 1000);
    CHECK(strcmp(json_string_value(json_object_get(res, "resultType")), "complete") == 0 &&
              json_integer_value(json_object_get(res, "ttlMs")) == 1000,
          "finish_result adds resultType and cache hints");
    json_decref(res);
    CHECK(mcp_era_removed_method("ping") && mcp_era_removed_method("logging/setLevel") &&
              !mcp_era_removed_method("tools/list"),
          "removed methods");

    char *dec = mcp_era_header_decode("=?base64?SGVsbG8sIOS4lueVjA==?=");
    CHECK(dec && strcmp(dec, "Hello, \xe4\xb8\x96\xe7\x95\x8c") == 0, "base64 sentinel decoded");
    free(dec);
    dec = mcp_era_header_decode("plain");
    CHECK(dec && strcmp(dec, "plain") == 0, "plain header values pass through");
    free(dec);
    dec = mcp_era_header_decode("=?base64?@@@@?=");
    CHECK(dec == NULL, "invalid base64 payload refused");
    free(dec);

    const char *call = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{"
                       "\"name\":\"execute_python\",\"_meta\":{"
                       "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                       "\"io.modelcontextprotocol/clientCapabilities\":{}}}}";
    check_http(call, "2026-07-28", "tools/call", "execute_python", 0);
    check_http(call, "2026-07-28", "tools/call", "=?base64?ZXhlY3V0ZV9weXRob24=?=", 0);
    check_http(call, NULL, "tools/call", "execute_python", MCP_HEADER_MISMATCH);
    check_http(call, "2025-11-25", "tools/call", "execute_python", MCP_HEADER_MISMATCH);
    check_http(call, "2026-07-28", NULL, "execute_python", MCP_HEADER_MISMATCH);
    check_http(call, "2026-07-28", "tools/list", "execute_python", MCP_HEADER_MISMATCH);
    check_http(call, "2026-07-28", "Tools/Call", "execute_python", MCP_HEADER_MISMATCH);
    check_http(call, "2026-07-28", "tools/call", NULL, MCP_HEADER_MISMATCH);
    check_http(call, "2026-07-28", "tools/call", "other", MCP_HEADER_MISMATCH);
    const char *future = "{\"jsonrpc\":\"2.0\",\"id\":\"f\",\"method\":\"tools/list\",\"params\":{"
                         "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2099-01-01\","
                         "\"io.modelcontextprotocol/clientCapabilities\":{}}}}";
    check_http(future, "2099-01-01", "tools/list", NULL, MCP_UNSUPPORTED_VERSION);
    return CHECK_DONE();
}
