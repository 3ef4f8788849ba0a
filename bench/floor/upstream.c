/* floor-upstream — the fastest stdio MCP server this machine can start, for bench/coldstart.mjs
 * (COLDSTART_UPSTREAM=c): newline-delimited JSON-RPC on stdin/stdout, no SDK, no interpreter.
 * It answers initialize (echoing the client's protocol version), tools/list (one tool,
 * add(a, b)), tools/call of add, and ping; notifications get no answer, any other request a
 * method-not-found error. A cold start measured with it is the gateway's own, not the time a
 * python3 or Node upstream takes to start (~100 ms here), which the gateway waits for. */
#include "lineio.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *TOOLS =
    "{\"tools\":[{\"name\":\"add\",\"description\":\"The sum of a and b.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},"
    "\"b\":{\"type\":\"integer\"}},\"required\":[\"a\",\"b\"]}}]}";

static void reply(json_t *id, json_t *result, const char *error)
{
    json_t *msg = json_pack("{s:s,s:O}", "jsonrpc", "2.0", "id", id);
    if (error)
        json_object_set_new(msg, "error", json_pack("{s:i,s:s}", "code", -32601, "message", error));
    else
        json_object_set_new(msg, "result", result);
    char *text = json_dumps(msg, JSON_COMPACT);
    size_t n = strlen(text);
    text = realloc(text, n + 2);
    text[n] = '\n';
    write_full(1, text, n + 1);
    free(text);
    json_decref(msg);
}

static void handle(const char *line, size_t n)
{
    json_t *req = json_loadb(line, n, 0, NULL);
    json_t *id = json_object_get(req, "id");
    const char *method = json_string_value(json_object_get(req, "method"));
    if (!req || !id || !method) { /* a notification, or not a request */
        json_decref(req);
        return;
    }
    json_t *params = json_object_get(req, "params");
    if (strcmp(method, "initialize") == 0) {
        const char *v = json_string_value(json_object_get(params, "protocolVersion"));
        reply(id,
              json_pack("{s:s,s:{s:{}},s:{s:s,s:s}}", "protocolVersion", v ? v : "2025-06-18",
                        "capabilities", "tools", "serverInfo", "name", "floor-upstream", "version",
                        "1"),
              NULL);
    } else if (strcmp(method, "tools/list") == 0) {
        reply(id, json_loads(TOOLS, 0, NULL), NULL);
    } else if (strcmp(method, "tools/call") == 0) {
        json_t *args = json_object_get(params, "arguments");
        char sum[32];
        snprintf(sum, sizeof(sum), "%lld",
                 (long long)(json_integer_value(json_object_get(args, "a")) +
                             json_integer_value(json_object_get(args, "b"))));
        reply(id, json_pack("{s:[{s:s,s:s}]}", "content", "type", "text", "text", sum), NULL);
    } else if (strcmp(method, "ping") == 0) {
        reply(id, json_object(), NULL);
    } else {
        reply(id, NULL, "method not found");
    }
    json_decref(req);
}

int main(void)
{
    struct lines in = {0};
    for (;;) {
        size_t n;
        char *line;
        while ((line = lines_next(&in, &n)))
            handle(line, n);
        if (lines_fill(&in, 0) <= 0)
            break;
    }
    lines_free(&in);
    return 0;
}
