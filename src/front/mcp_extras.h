/* mcp_extras — the upstreams' resources and prompts as the front serves them (see
 * mcp_extras.c): merged lists namespaced by server and paginated, reads and gets forwarded to
 * the server they belong to. Loop thread only. */
#ifndef CODEMCP_MCP_EXTRAS_H
#define CODEMCP_MCP_EXTRAS_H

#include <jansson.h>
#include <stdint.h>

#include "upstream.h"

/* MCP's "resource not found" error code. */
#define MCP_RESOURCE_NOT_FOUND -32002

/* Sends msg (stolen) on session `session` if it still exists, as the answer to request
 * `related` (borrowed): mcp_server's mcp_send_to, which main.c registers at start. */
typedef void (*mcp_extras_send_fn)(uint64_t session, json_t *msg, json_t *related);
void mcp_extras_set_send(mcp_extras_send_fn send);

/* 1 when some configured server offers kind (resources (and their templates) or prompts): the
 * front advertises the capability. */
int mcp_extras_offered(enum up_extra kind);

/* Handles resources/list, resources/templates/list, resources/read, prompts/list and
 * prompts/get for session (returns 1; any other method: 0). Then *result is the answer, or
 * NULL with *code and *why set, or NULL with *code 0 when the answer is sent later through
 * the registered send function (a read or a get went to its server). */
int mcp_extras_request(uint64_t session, json_t *id, const char *method, json_t *params,
                       json_t **result, int *code, const char **why);

#endif
