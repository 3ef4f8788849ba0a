/* mcp_tool — the execute_python tool as tools/list gives it: its input schema, annotations and
 * the description budgeted for the client (catalog.c), the last one kept while the description
 * is the same. mcp_server.c serves it. `namespace` carries x-mcp-header, so 2026 clients send
 * it as Mcp-Param-Namespace too: a load balancer routes a handle to the replica holding it
 * without reading bodies (replica.h, contrib/fleet/). */
#include "catalog.h"
#include "mcp_server.h"

/* The last tool built, and the description object it holds (so an equal pointer is the same,
 * unchanged description): tools/list reuses it instead of packing the schema again. */
static json_t *last_tool, *last_tool_desc;

json_t *mcp_execute_python_tool_for(const char *client, const char *principal)
{
    json_t *desc = cat_describe_json_for(client, principal);
    if (last_tool && desc == last_tool_desc) {
        json_decref(desc);
        return json_incref(last_tool);
    }
    json_t *tool = json_pack(
        "{s:s, s:s, s:o, s:{s:s, s:{s:{s:s, s:s}, s:{s:s, s:i, s:s}, s:{s:s, s:s}, "
        "s:{s:s, s:{s:s}, s:s}, s:{s:s, s:s}, s:{s:s, s:s, s:s}}, s:[s], s:b}, s:{s:b, s:b, s:b}}",
        "name", "execute_python", "title", "Run Python against the connected MCP tools",
        "description", desc, "inputSchema", "type", "object", "properties", "code", "type",
        "string", "description",
        "Python source. Assign `result` or end with an expression to return a value.", "timeout_ms",
        "type", "integer", "minimum", 1, "description",
        "Run time limit in milliseconds (default from CODEMCP_EXEC_TIMEOUT_MS).", "dry_run", "type",
        "boolean", "description",
        "Preview: write tools are not sent upstream and return a stub; reads run normally.",
        "allow_mutations", "type", "array", "items", "type", "string", "description",
        "SDK function names of write tools this run may call (needed when the gateway "
        "enforces mutations).",
        "reset", "type", "boolean", "description",
        "Start from a fresh namespace (variables normally persist between runs).", "namespace",
        "type", "string", "x-mcp-header", "Namespace", "description",
        "The `namespace` handle an earlier result returned: continue with its variables. "
        "Without it: this session's namespace, or a new one.",
        "required", "code", "additionalProperties", 0, "annotations", "readOnlyHint", 0,
        "destructiveHint", 1, "openWorldHint", 1);
    json_decref(last_tool);
    last_tool = json_incref(tool);
    last_tool_desc = desc;
    return tool;
}

void mcp_tool_free(void)
{
    json_decref(last_tool);
    last_tool = last_tool_desc = NULL;
}
