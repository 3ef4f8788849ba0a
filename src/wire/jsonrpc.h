/* jsonrpc — JSON-RPC 2.0 message shapes and newline-delimited framing.
 *
 * Pure helpers shared by the MCP front, the upstream clients and the control channel:
 * classify a parsed message, build results and errors, and split a byte stream into
 * lines with a size cap. No I/O and no state beyond the framer's buffer. */
#ifndef CODEMCP_JSONRPC_H
#define CODEMCP_JSONRPC_H

#include <jansson.h>
#include <stddef.h>

#include "util.h"

#define RPC_PARSE_ERROR      -32700
#define RPC_INVALID_REQUEST  -32600
#define RPC_METHOD_NOT_FOUND -32601
#define RPC_INVALID_PARAMS   -32602
#define RPC_INTERNAL_ERROR   -32603
#define RPC_SERVER_ERROR     -32000
#define RPC_REQUEST_TIMEOUT  -32001

enum rpc_kind { RPC_INVALID, RPC_REQUEST, RPC_NOTIFICATION, RPC_RESPONSE };

/* Classifies msg (borrowed). For RPC_INVALID, *why says what is wrong (static text). */
enum rpc_kind rpc_classify(json_t *msg, const char **why);

/* New reference: {"jsonrpc":"2.0","id":id,"result":result}. Steals result; borrows id. */
json_t *rpc_result(json_t *id, json_t *result);
/* New reference: an error response. Borrows id (NULL → null), steals data (may be NULL).
 * A message that is not UTF-8 goes out with its non-ASCII bytes as '?'; NULL only for NULL. */
json_t *rpc_error(json_t *id, int code, const char *message, json_t *data);
/* New reference: a request or notification (id NULL). Steals params (may be NULL). */
json_t *rpc_request(json_t *id, const char *method, json_t *params);

/* New reference: the id whose canonical bytes (jsonscan.h) are val[0..len): a string without
 * escapes or an integer of at most 18 digits. NULL for anything else (null, a notification's
 * absent id, an escape): the caller then takes the tree path. */
json_t *rpc_canon_id(const char *val, size_t len);

/* Compact one-line JSON; caller frees. NaN/inf are impossible in jansson values. */
char *rpc_dump(json_t *msg);

/* Splits a byte stream on '\n'. Lines longer than `max_line` are dropped whole and
 * reported with line == NULL so the caller can answer an error. '\r' before '\n' is
 * stripped; empty lines are skipped. */
struct rpc_lines {
    struct buf buf;
    size_t max_line;
    int discarding;
};
typedef void (*rpc_line_cb)(void *ud, const char *line, size_t len);
void rpc_lines_feed(struct rpc_lines *l, const char *data, size_t len, rpc_line_cb cb, void *ud);
/* As rpc_lines_feed, but each line (malloc'd, NUL-terminated; NULL for a dropped one) is the
 * callback's to free: a reader done with a 50 MB line lets it go before it answers. */
typedef void (*rpc_line_take_cb)(void *ud, char *line, size_t len);
void rpc_lines_feed_take(struct rpc_lines *l, const char *data, size_t len, rpc_line_take_cb cb,
                         void *ud);
void rpc_lines_free(struct rpc_lines *l);

#endif
