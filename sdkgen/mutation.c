/* mutation — decides whether an upstream tool reads or writes.
 *
 * The decision feeds dry-run stubbing and mutation enforcement in the gateway and the
 * `mutation` flag of the generated SDK, so there is exactly one implementation, here.
 * Priority: explicit config, then the server's own annotations, then the verbs in the tool's
 * name. The verb lists are the original codemcp's, kept identical so configurations behave
 * the same after a migration. Pure: no I/O. */
#include "sdkgen.h"
#include "sdkgen_int.h"

#include <string.h>

static const char *const sdk_read_verbs[] = {
    "get",      "list",   "read",  "search",  "fetch",   "find",    "describe", "show",
    "view",     "query",  "check", "status",  "info",    "lookup",  "count",    "watch",
    "download", "export", "diff",  "inspect", "analyze", "resolve", NULL,
};

static const char *const sdk_write_verbs[] = {
    "create",    "update",    "delete",    "remove", "add",        "edit",   "set",     "put",
    "patch",     "write",     "modify",    "merge",  "push",       "run",    "exec",    "execute",
    "install",   "uninstall", "apply",     "scale",  "restart",    "start",  "stop",    "kill",
    "terminate", "destroy",   "cleanup",   "clean",  "transition", "assign", "move",    "rename",
    "copy",      "upload",    "send",      "post",   "publish",    "deploy", "revert",  "rollback",
    "cancel",    "approve",   "reject",    "close",  "reopen",     "enable", "disable", "grant",
    "revoke",    "rotate",    "reset",     "drop",   "insert",     "fork",   "sync",    "trigger",
    "invoke",    "schedule",  "provision", NULL,
};

/* Verbs that make a tool a write wherever they appear in its name ("graph_delete_node"). */
static const char *const sdk_strong_write_verbs[] = {
    "create", "delete",  "remove",   "update",  "merge",    "destroy",   "terminate", "kill",
    "cancel", "revert",  "rollback", "apply",   "scale",    "restart",   "deploy",    "publish",
    "rotate", "revoke",  "grant",    "drop",    "truncate", "purge",     "reset",     "rename",
    "run",    "exec",    "execute",  "trigger", "install",  "uninstall", "provision", "transition",
    "assign", "approve", "reject",   "write",   NULL,
};

static int sdk_in_list(const char *const *list, const char *word)
{
    for (; *list; list++)
        if (strcmp(*list, word) == 0)
            return 1;
    return 0;
}

int sdk_tool_is_write(const char *tool_name, json_t *annotations, json_t *tool_config)
{
    json_t *v = json_object_get(tool_config, "mutation");
    if (json_is_boolean(v))
        return json_is_true(v);
    if (json_is_true(json_object_get(annotations, "readOnlyHint")))
        return 0;
    if (json_is_true(json_object_get(annotations, "destructiveHint")))
        return 1;

    struct buf b = {0};
    size_t words = words_split(tool_name ? tool_name : "", &b);
    int write = 0;
    if (words > 0) {
        const char *w = b.data;
        if (sdk_in_list(sdk_read_verbs, w)) {
            write = 0;
        } else if (sdk_in_list(sdk_write_verbs, w)) {
            write = 1;
        } else {
            for (size_t k = 0; k < words && !write; k++, w += strlen(w) + 1)
                write = sdk_in_list(sdk_strong_write_verbs, w);
        }
    }
    buf_free(&b);
    return write;
}
