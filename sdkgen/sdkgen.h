/* sdkgen — turns the tool lists of the connected MCP servers into the Python SDK module
 * (`sdk.py`) that the worker loads, and into the `execute_python` tool description.
 *
 * Pure functions over jansson values: no I/O, no logging, no global state, so the same input
 * always gives byte-identical output (golden-file tests depend on it). The one mapping from
 * (server, tool) to a Python function name lives here; every other module must take names
 * from `functions` instead of sanitizing on its own.
 *
 * Ordering: parameters follow the order of the schema's `properties`. jansson >= 2.8 keeps
 * object insertion order on load and in json_object_foreach (JSON_PRESERVE_ORDER is implied
 * but harmless to pass); callers must hand in objects as loaded from the wire — building a
 * schema by hand in another key order changes the generated signatures. */
#ifndef CODEMCP_SDKGEN_H
#define CODEMCP_SDKGEN_H

#include <jansson.h>

/* What sdk_generate produces. All members are owned by the struct; release with
 * sdk_output_free. */
struct sdk_output {
    char *source;      /* sdk.py text (UTF-8) */
    char *description; /* the execute_python tool description */
    /* New reference: {"<fn>": {"server", "tool", "mutation": bool,
     *   "params": [{"name": "<py name>", "key": "<schema key>", "required": bool,
     *               "type": "<py type>"}],
     *   "extra": bool,            (unknown keyword arguments are forwarded)
     *   "timeout_param": "<name>" (the keyword for the per-call timeout, normally timeout_ms)
     *   "returns": "<py type>", "summary": "<= 160 chars"}}
     * in the same (server, tool) order as the module. */
    json_t *functions;
    /* New reference: {"<fn>": "<name>(<params>) -> <type>"}, the one-line signature the
     * description, search_tools() and describe() show (no "def", no colon). */
    json_t *signatures;
};

/* Generates the SDK.
 * servers: borrowed JSON array of {"server": "<name>", "tools": [<MCP Tool objects as
 *          returned by tools/list>], "config": {"<tool name>": {"enabled": bool,
 *          "mutation": bool}} (optional)}. Tools whose config says enabled:false are left out
 *          everywhere. A tool without a string `name` is skipped; a missing or odd
 *          inputSchema gives a function without parameters.
 * shapes:  borrowed, NULL or {"<python fn name>": "<exemplar text, e.g. {id: int}>"}; adds
 *          "    # returns: <exemplar>" under that tool in the description.
 * Returns 0 and fills *out (which the caller frees with sdk_output_free), or -1 when the
 * input is malformed (servers not an array, an entry without a string "server"); *out is
 * then zeroed. Cost: O(total schema size + n log n) for n tools. */
int sdk_generate(json_t *servers, json_t *shapes, struct sdk_output *out);

/* The budgeted execute_python description (what a client that cuts long descriptions gets)
 * and the overflow for the server's `instructions`.
 * functions, signatures: borrowed, as sdk_generate made them (module order is kept).
 * servers:  borrowed [{"server": "<name>", "state": "ready|connecting|failed|disabled|closed",
 *           "tools": <n>}] in config order; every one is named, whatever the budget.
 * priority: borrowed, NULL or an array of function names, most wanted first (most used,
 *           learned); the rest follow round-robin over the servers, each in module order.
 * max_bytes: limit in UTF-8 bytes (>= the UTF-16 length clients count); the intro and the
 *           server line are always sent, so a tiny budget can be exceeded by those alone.
 * *description gets: intro, servers with counts and states, as many signatures as fit, the
 *   remaining names grouped by server, one line saying how to reach the rest.
 * *instructions (when not NULL) gets the names the description could not hold, <= instr_max
 *   bytes. Both are new strings; caller frees. Cost: O(n) for n functions. */
void sdk_describe_budget(json_t *functions, json_t *signatures, json_t *servers, json_t *priority,
                         size_t max_bytes, size_t instr_max, char **description,
                         char **instructions);

/* A short line naming the servers that are not ready ("" when all are), appended to the full
 * listing. servers as for sdk_describe_budget. Caller frees. */
char *sdk_servers_note(json_t *servers);

/* Frees the members and zeroes the struct; safe on a zeroed struct. */
void sdk_output_free(struct sdk_output *out);

/* 1 if the tool changes state ("write"), 0 if it only reads. Decided by, in order:
 * tool_config's "mutation" boolean (borrowed, may be NULL) -> annotations (borrowed, may be
 * NULL) readOnlyHint:true => read -> destructiveHint:true => write -> the verbs of the tool
 * name (split on non-alphanumerics and camelCase, lowercased): first word a read verb => read,
 * first word a write verb => write, any word a strong write verb => write, else read. */
int sdk_tool_is_write(const char *tool_name, json_t *annotations, json_t *tool_config);

/* Sanitizes s to a Python identifier: each character outside [A-Za-z0-9_] (one per UTF-8
 * code point) becomes '_', a leading digit gets a '_' prefix, an empty string counts as "_",
 * and keywords (including the soft keywords match/case/_/type, and __debug__) get a '_'
 * suffix: "class" -> "class_", "2fa" -> "_2fa", "a.b-c" -> "a_b_c", "café" -> "caf_".
 * Returns a new string; caller frees. */
char *sdk_identifier(const char *s);

#endif
