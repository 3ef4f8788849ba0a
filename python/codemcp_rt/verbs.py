"""The verbs that tell a reading tool from a writing one, shared by the gateway (C) and this
runtime (Python).

Data only: sdkgen/gen_verbs.py turns the first three lists into sdkgen's mutation_verbs.h at build time
for sdkgen/mutation.c, the one classification of a tool (explicit config, then the server's
annotations, then these verbs in the tool's name: the first word a read verb, else a write
verb, else a strong write verb anywhere; the lists are the original codemcp's, kept so
configurations behave the same after a migration). search_tools (codemcp_rt.search) ranks with
the same lists plus the ranking-only words below, which name more kinds of change in the
catalogs it was measured on; a word is never a read verb on one side and a write verb on the
other (the generator refuses it, and tests/python/test_verbs.py checks search's sets).

"watch" is a read verb on both sides (the gateway's list: a tool that watches logs or a resource
reads); search used to know it as no verb and took the SDK's flag instead, which the gateway
computes from these same lists."""

READ_VERBS = [
    "get", "list", "read", "search", "fetch", "find", "describe", "show", "view", "query",
    "check", "status", "info", "lookup", "count", "watch", "download", "export", "diff", "inspect",
    "analyze", "resolve",
]

WRITE_VERBS = [
    "create", "update", "delete", "remove", "add", "edit", "set", "put", "patch", "write",
    "modify", "merge", "push", "run", "exec", "execute", "install", "uninstall", "apply", "scale",
    "restart", "start", "stop", "kill", "terminate", "destroy", "cleanup", "clean", "transition", "assign",
    "move", "rename", "copy", "upload", "send", "post", "publish", "deploy", "revert", "rollback",
    "cancel", "approve", "reject", "close", "reopen", "enable", "disable", "grant", "revoke", "rotate",
    "reset", "drop", "insert", "fork", "sync", "trigger", "invoke", "schedule", "provision",
]

# Verbs that make a tool a write wherever they appear in its name ("graph_delete_node").
STRONG_WRITE_VERBS = [
    "create", "delete", "remove", "update", "merge", "destroy", "terminate", "kill", "cancel", "revert",
    "rollback", "apply", "scale", "restart", "deploy", "publish", "rotate", "revoke", "grant", "drop",
    "truncate", "purge", "reset", "rename", "run", "exec", "execute", "trigger", "install", "uninstall",
    "provision", "transition", "assign", "approve", "reject", "write",
]

# Read verbs of the gateway that search_tools does not take for verbs: the gateway reads a read
# verb only as a name's first word ("status_of_job"), search finds a function's verb anywhere in
# its name, where these are nouns ("meetingStatus" is a PUT that changes a meeting's status).
SEARCH_NOUNS = ["status", "info"]

# Ranking only (search_tools): more verbs of reading and of change in function names.
SEARCH_READ_VERBS = [
    "compare",
]

SEARCH_WRITE_VERBS = [
    "request", "restore", "review", "mark", "generate", "rerun", "redeliver", "unlock", "lock", "toggle",
    "star", "unstar", "rerequest", "dismiss", "unassign", "block", "unblock", "force", "suspend", "unsuspend",
    "pin", "unpin", "reprioritize", "map", "convert", "submit", "accept", "decline", "replace", "transfer",
    "follow", "unfollow", "dispatch", "ping", "attach", "detach", "invite", "archive", "unarchive", "register",
    "deregister", "bulk", "commit",
]
