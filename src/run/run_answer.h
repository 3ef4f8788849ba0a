/* run_answer — what an MCP client gets for a run: the CallToolResult made from the worker's
 * envelope, as a tree or, for a successful envelope in jf_dumps' form, as the bytes of the
 * whole JSON-RPC reply spliced from the envelope's bytes (no decode, no encode).
 *
 * The answer's envelope is the worker's without `ok`, `calls`, `recycle` and `mutations`, plus
 * the writes the gateway routed for the run as `mutations` (when there were any: the worker's
 * own report is never trusted) and the run's `namespace` handle; the result is
 * {"content":[{"type":"text","text":<that envelope as compact JSON>}],"structuredContent":<that
 * envelope>,"isError":<not ok>}. Contract: run_answer_text gives byte for byte what
 * rpc_dump(rpc_result(id, run_answer_result( run_answer_envelope(tree, handle, mutations), 0)))
 * gives for the tree jf_loadb makes of the same bytes, or NULL (the caller then takes the tree
 * path). Pure functions: no state, nothing sent. */
#ifndef CODEMCP_RUN_ANSWER_H
#define CODEMCP_RUN_ANSWER_H

#include <jansson.h>
#include <stddef.h>

/* The answer's envelope: envelope (borrowed) without ok/calls/recycle/content/mutations, with
 * `mutations` set to mutations (borrowed; NULL or empty: none) and `namespace` to handle when
 * handle is not empty. Returns a new reference (a shallow copy). */
json_t *run_answer_envelope(json_t *envelope, const char *handle, json_t *mutations);

/* The CallToolResult for env (borrowed: structuredContent shares it); blocks (borrowed, may be
 * NULL): the worker envelope's `content`, the program's non-text content blocks, appended after
 * the text block when they are MCP content blocks (a note in their place otherwise). Their size
 * counts in the run's result cap (the worker's max_result_bytes, the control frame cap). */
json_t *run_answer_result(json_t *env, json_t *blocks, int is_error);

/* The JSON-RPC reply to request_id (borrowed; NULL: id null) for a worker's envelope given as
 * env/len, with mutations (jf_dumps' text of a non-empty array, or NULL: none), bytes
 * js_canon_value accepted (jf_dumps' form, NUL escapes allowed). Only for a successful envelope
 * (`ok` is true) with at most 32 members, no `recycle` or `content`, and no `namespace` of its
 * own when handle is set; anything else gives NULL (the tree path decides). Caller frees;
 * *out_len gets the length. */
char *run_answer_text(json_t *request_id, const char *env, size_t len, const char *handle,
                      const char *mutations, size_t *out_len);

#endif
