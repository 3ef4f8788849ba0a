/* mcp_server — MCP method handling for any transport. See mcp_server.h.
 *
 * Error codes: -32700 unparsable JSON, -32600 not a valid request, -32601 unknown
 * method, -32602 bad params (also an unknown tool name, as the MCP spec asks). While
 * upstreams are still making their first connection, the first answer (initialize, or a 2026
 * client's server/discover) and tools/list wait for them until CODEMCP_LIST_WAIT_MS (default
 * 1000) after the session's first such request — never longer, in total — and then answer with
 * what is there, naming the servers still connecting; list_changed follows when those arrive.
 * The instructions are in that first answer only (a client reads them once), so it waits: a
 * client that defers the tool's description shows the model nothing else of codemcp. The
 * description and the instructions are budgeted per client (catalog.c).
 *
 * Both protocol eras on one session: a request whose `_meta` names a protocol version is
 * served by the 2026-07-28 rules (mcp_era.h: envelope checks, no handshake needed, removed
 * methods refused, `resultType` and cache hints on its result, list changes on its
 * subscriptions/listen requests); anything else is the 2025 era as before. */
#include "mcp_server.h"
#include "catalog.h"
#include "idmap.h"
#include "jsonfast.h"
#include "jsonrpc.h"
#include "jsonscan.h"
#include "loop.h"
#include "log.h"
#include "mcp_era.h"
#include "mcp_extras.h"
#include "namespaces.h"
#include "runs.h"
#include "trace.h"
#include "upstream.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const mcp_protocol_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
                                             NULL};

/* MCP (syslog) severities, least severe first; a session hears messages at or above its
 * logging/setLevel. Until the client sets a level it hears none (MCP leaves the default to
 * the server; silence keeps clients that never asked free of notifications). */
enum mcp_level {
    MCP_LEVEL_DEBUG,
    MCP_LEVEL_INFO,
    MCP_LEVEL_NOTICE,
    MCP_LEVEL_WARNING,
    MCP_LEVEL_ERROR,
    MCP_LEVEL_CRITICAL,
    MCP_LEVEL_ALERT,
    MCP_LEVEL_EMERGENCY,
    MCP_LEVEL_OFF, /* no logging/setLevel yet */
};
static const char *const mcp_level_names[] = {"debug", "info",     "notice", "warning",
                                              "error", "critical", "alert",  "emergency"};

struct mcp_session {
    uint64_t id;
    uint64_t home; /* whose worker and namespaces its runs use (namespaces.h); default: id */
    char *label;
    mcp_send_fn send;
    void *tud;
    char *protocol_version;
    char *client; /* clientInfo.name from initialize, NULL when not given */
    int initialized;
    enum mcp_level log_level;
    int listed_version;    /* catalog version last sent in tools/list; 0 = never listed */
    int notified_version;  /* catalog version we last sent list_changed for */
    json_t *waiting_lists; /* [[id, method]] of initialize, server/discover, tools/list waiting */
    int64_t wait_deadline; /* when they are answered anyway: first + CODEMCP_LIST_WAIT_MS */
    struct lp_timer wait_timer;
    int wait_armed;
    json_t *modern_ids;    /* 2026 requests not answered yet: id (as JSON text) -> method */
    json_t *listen_ids;    /* 2026 subscriptions/listen requests open for tools changes */
    json_t *listen_extras; /* and for resources/prompts changes: [[id, resources, prompts]] */
    struct mcp_session *next, **pprev;
};

static struct mcp_session *sessions;
static struct idmap sessions_by_id;
static uint64_t next_session_id = 1;
static long list_wait_ms = 1000;

void mcp_set_list_wait(long ms)
{
    list_wait_ms = ms;
}

int mcp_protocol_supported(const char *v)
{
    for (int i = 0; mcp_protocol_versions[i]; i++)
        if (strcmp(v, mcp_protocol_versions[i]) == 0)
            return 1;
    return 0;
}

uint64_t mcp_session_id(struct mcp_session *s)
{
    return s->id;
}

void mcp_session_set_home(struct mcp_session *s, uint64_t home)
{
    s->home = home;
}

const char *mcp_session_protocol(struct mcp_session *s)
{
    return s->protocol_version ? s->protocol_version : mcp_protocol_versions[0];
}

static struct mcp_session *session_find(uint64_t id)
{
    return idmap_get(&sessions_by_id, id);
}

/* The key of a request id in modern_ids: "i<n>" for an integer, "s<text>" for a string (a
 * string with a NUL byte: its JSON text). Caller frees. (json_dumps here was ~1.5k
 * instructions twice per 2026 request.) */
static char *id_key(json_t *id)
{
    if (json_is_integer(id)) { /* by hand: snprintf alone was ~600 instructions */
        char b[32], *p = b + sizeof(b);
        long long v = (long long)json_integer_value(id);
        unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
        *--p = '\0';
        do
            *--p = (char)('0' + u % 10);
        while (u /= 10);
        if (v < 0)
            *--p = '-';
        *--p = 'i';
        return xstrdup(p);
    }
    if (json_is_string(id) && strlen(json_string_value(id)) == json_string_length(id)) {
        size_t n = json_string_length(id);
        char *k = xmalloc(n + 2);
        k[0] = 's';
        memcpy(k + 1, json_string_value(id), n + 1);
        return k;
    }
    return id ? jf_dumps(id) : NULL; /* json_dumps' bytes; a big integer as its digits */
}

/* A tools/list result is fresh until an upstream or the catalog changes; while servers
 * are still connecting, it may change any moment. */
static int64_t list_ttl_ms(void)
{
    return up_all_settled() ? 60000 : 1000;
}

static void session_send(struct mcp_session *s, json_t *msg, json_t *related)
{
    json_t *id = json_object_get(msg, "id");
    if (id && !json_object_get(msg, "method") && json_object_size(s->modern_ids)) {
        char *key = id_key(id);
        json_t *method = key ? json_object_get(s->modern_ids, key) : NULL;
        if (method) {
            int list = strcmp(json_string_value(method), "tools/list") == 0;
            mcp_era_finish_result(json_object_get(msg, "result"), list ? list_ttl_ms() : -1);
            json_object_del(s->modern_ids, key);
        }
        free(key);
    }
    char *text = rpc_dump(msg);
    json_decref(msg);
    if (!text)
        return;
    s->send(s->tud, text, strlen(text), related);
    free(text);
}

void mcp_send_to(uint64_t session_id, json_t *msg, json_t *related)
{
    struct mcp_session *s = session_find(session_id);
    if (!s) {
        json_decref(msg);
        return;
    }
    session_send(s, msg, related);
}

void mcp_send_text_to(uint64_t session_id, const char *text, size_t len, json_t *related)
{
    struct mcp_session *s = session_find(session_id);
    if (!s)
        return;
    if (related && json_object_size(s->modern_ids)) {
        char *key = id_key(related);
        int modern = key && json_object_get(s->modern_ids, key);
        free(key);
        if (modern) { /* mcp_era_finish_result works on the tree */
            json_t *msg = jf_loadb(text, len, JF_ALLOW_NUL | JF_BIG_INTEGERS, NULL);
            if (msg)
                session_send(s, msg, related);
            return;
        }
    }
    s->send(s->tud, text, len, related);
}

static enum mcp_level mcp_level_of(enum log_level level)
{
    return level == LOG_ERROR  ? MCP_LEVEL_ERROR
           : level == LOG_WARN ? MCP_LEVEL_WARNING
           : level == LOG_INFO ? MCP_LEVEL_INFO
                               : MCP_LEVEL_DEBUG;
}

int mcp_session_log_wanted(uint64_t session_id, enum log_level level)
{
    struct mcp_session *s = session_find(session_id);
    return s && s->log_level != MCP_LEVEL_OFF && mcp_level_of(level) >= s->log_level;
}

void mcp_session_log(uint64_t session_id, enum log_level level, const char *text, json_t *related)
{
    struct mcp_session *s = session_find(session_id);
    enum mcp_level l = mcp_level_of(level);
    if (!s || s->log_level == MCP_LEVEL_OFF || l < s->log_level)
        return;
    session_send(s,
                 rpc_request(NULL, "notifications/message",
                             json_pack("{s:s, s:s, s:s}", "level", mcp_level_names[l], "logger",
                                       "codemcp", "data", text)),
                 related);
}

struct mcp_session *mcp_session_new(mcp_send_fn send, void *tud, const char *label)
{
    struct mcp_session *s = xcalloc(1, sizeof(*s));
    s->id = next_session_id++;
    s->home = s->id;
    s->label = xstrdup(label ? label : "session");
    s->send = send;
    s->tud = tud;
    s->log_level = MCP_LEVEL_OFF;
    s->modern_ids = json_object(); /* waiting_lists and listen_ids: made when first used */
    DLIST_PUSH(&sessions, s);
    idmap_put(&sessions_by_id, s->id, s);
    log_debug("mcp", "session %llu opened (%s)", (unsigned long long)s->id, s->label);
    return s;
}

void mcp_session_close(struct mcp_session *s)
{
    if (s->pprev)
        idmap_del(&sessions_by_id, s->id);
    DLIST_UNLINK(s);
    run_session_closed(s->id);
    log_debug("mcp", "session %llu closed", (unsigned long long)s->id);
    if (s->wait_armed)
        lp_timer_stop(&s->wait_timer);
    json_decref(s->waiting_lists);
    free(s->client);
    json_decref(s->modern_ids);
    json_decref(s->listen_ids);
    json_decref(s->listen_extras);
    free(s->protocol_version);
    free(s->label);
    free(s);
}

/* ---- methods ------------------------------------------------------------------------------ */

static json_t *handle_initialize(struct mcp_session *s, json_t *params, int *code, const char **why)
{
    json_t *v = json_object_get(params, "protocolVersion");
    if (!json_is_string(v)) {
        *code = RPC_INVALID_PARAMS;
        *why = "initialize needs params.protocolVersion (a string)";
        return NULL;
    }
    const char *asked = json_string_value(v);
    const char *chosen = mcp_protocol_supported(asked) ? asked : mcp_protocol_versions[0];
    free(s->protocol_version);
    s->protocol_version = xstrdup(chosen);
    json_t *ci = json_object_get(params, "clientInfo");
    json_t *cname = json_object_get(ci, "name");
    if (json_is_string(cname)) {
        free(s->label);
        s->label = xstrdup(json_string_value(cname));
        free(s->client);
        s->client = xstrdup(json_string_value(cname));
    }
    log_info("mcp", "session %llu: initialize from %s, protocol %s%s", (unsigned long long)s->id,
             s->label, chosen, strcmp(chosen, asked) ? " (client asked for an unknown one)" : "");
    return json_object(); /* the answer is initialize_result(), now or after the wait */
}

/* tools always; resources and prompts when a configured server offers them (mcp_extras.c). */
static json_t *server_capabilities(void)
{
    json_t *caps = json_pack("{s:{s:b}}", "tools", "listChanged", 1);
    if (mcp_extras_offered(UP_RESOURCES))
        json_object_set_new(caps, "resources", json_pack("{s:b}", "listChanged", 1));
    if (mcp_extras_offered(UP_PROMPTS))
        json_object_set_new(caps, "prompts", json_pack("{s:b}", "listChanged", 1));
    return caps;
}

/* The initialize answer; its instructions name what the description cannot hold, as the
 * catalog is when it is sent. */
static json_t *initialize_result(struct mcp_session *s)
{
    char *instructions = NULL;
    free(cat_describe_for(s->client, ns_asker(s->id, s->home), &instructions));
    json_t *caps = server_capabilities();
    json_object_set_new(caps, "logging", json_object());
    json_t *res = json_pack("{s:s, s:o, s:{s:s, s:s, s:s}, s:s}", "protocolVersion",
                            mcp_session_protocol(s), "capabilities", caps, "serverInfo", "name",
                            "codemcp", "title", "codemcp code-mode gateway", "version",
                            CODEMCP_VERSION, "instructions", instructions);
    free(instructions);
    return res;
}

/* The server/discover answer (2026 era): like initialize's, the instructions as the catalog is
 * when it is sent. */
static json_t *discover_result(struct mcp_session *s)
{
    char *instructions = NULL;
    free(cat_describe_for(s->client, ns_asker(s->id, s->home), &instructions));
    json_t *res = mcp_era_discover_result(server_capabilities(), instructions);
    free(instructions);
    return res;
}

static json_t *tools_list_result(struct mcp_session *s)
{
    s->listed_version = cat_version();
    s->notified_version = 0;
    json_t *res = json_pack("{s:[o]}", "tools",
                            mcp_execute_python_tool_for(s->client, ns_asker(s->id, s->home)));
    json_t *more = cat_discovery_tools(); /* CODEMCP_DISCOVERY_TOOLS=1 */
    if (more)
        json_array_extend(json_object_get(res, "tools"), more);
    json_decref(more);
    return res;
}

/* Answers the session's waiting initialize and tools/list requests, in arrival order: when
 * every upstream settled, or (force) when the wait is over. */
static void answer_waiting(struct mcp_session *s, int force)
{
    if (!json_array_size(s->waiting_lists) || (!force && !up_all_settled()))
        return;
    if (s->wait_armed) {
        lp_timer_stop(&s->wait_timer);
        s->wait_armed = 0;
    }
    json_t *waiting = s->waiting_lists;
    s->waiting_lists = NULL;
    size_t i;
    json_t *w;
    json_array_foreach(waiting, i, w)
    {
        json_t *id = json_array_get(w, 0);
        const char *method = json_string_value(json_array_get(w, 1));
        json_t *res = strcmp(method, "initialize") == 0        ? initialize_result(s)
                      : strcmp(method, "server/discover") == 0 ? discover_result(s)
                                                               : tools_list_result(s);
        session_send(s, rpc_result(id, res), id);
    }
    json_decref(waiting);
}

static void wait_over(void *ud)
{
    struct mcp_session *s = session_find((uint64_t)(uintptr_t)ud);
    if (!s)
        return;
    s->wait_armed = 0;
    answer_waiting(s, 1);
}

/* Holds request `id` until the upstreams settle, at most until the session's deadline
 * (CODEMCP_LIST_WAIT_MS after its first held request). Returns 0 when held, -1 when it must
 * be answered now. */
static int hold_request(struct mcp_session *s, json_t *id, const char *method)
{
    int64_t now = now_ms();
    if (!s->wait_deadline)
        s->wait_deadline = now + list_wait_ms;
    int64_t until = s->wait_deadline;
    if (up_all_settled() || now >= until)
        return -1;
    if (!s->waiting_lists)
        s->waiting_lists = json_array();
    json_array_append_new(s->waiting_lists, json_pack("[O,s]", id, method));
    if (!s->wait_armed) {
        s->wait_armed = 1;
        lp_timer_start(&s->wait_timer, until - now, wait_over, (void *)(uintptr_t)s->id);
    }
    return 0;
}

static json_t *handle_set_level(struct mcp_session *s, json_t *params, int *code, const char **why)
{
    json_t *v = json_object_get(params, "level");
    for (int i = MCP_LEVEL_DEBUG; i < MCP_LEVEL_OFF && json_is_string(v); i++)
        if (strcmp(mcp_level_names[i], json_string_value(v)) == 0) {
            s->log_level = (enum mcp_level)i;
            return json_object();
        }
    *code = RPC_INVALID_PARAMS;
    *why = "level must be one of debug, info, notice, warning, error, critical, alert, "
           "emergency";
    return NULL;
}

/* The span of tools/call `tool` (OpenTelemetry's MCP server span): the caller's trace context
 * from _meta, else from the HTTP request's headers. NULL while tracing is off. */
static struct trace_span *request_span(struct mcp_session *s, json_t *id, json_t *meta,
                                       const char *tool)
{
    struct trace_remote parent;
    trace_request_parent(&parent, json_string_value(json_object_get(meta, "traceparent")),
                         json_string_value(json_object_get(meta, "tracestate")));
    struct trace_span *span = trace_start_on("tools/call", tool, TRACE_SERVER, NULL, &parent);
    if (!span)
        return NULL;
    trace_attr_str(span, "mcp.method.name", "tools/call");
    trace_attr_str(span, "gen_ai.tool.name", tool);
    trace_attr_str(span, "gen_ai.operation.name", "execute_tool");
    char num[24];
    if (json_is_integer(id))
        snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(id));
    trace_attr_str(span, "jsonrpc.request.id", json_is_integer(id) ? num : json_string_value(id));
    json_t *modern = json_object_get(meta, MCP_META_PROTOCOL_VERSION); /* 2026: per request */
    trace_attr_str(span, "mcp.protocol.version",
                   json_is_string(modern) ? json_string_value(modern) : s->protocol_version);
    return span;
}

/* Queues an execute_python run: NULL, or the tool error for bad arguments. */
static json_t *submit_execute(struct mcp_session *s, json_t *id, json_t *args, json_t *progress,
                              json_t *caps, struct trace_span *span)
{
    static char err[512];
    if (run_submit(s->id, s->home, id, args, progress, caps, span, err, sizeof(err)) < 0) {
        trace_fail(span, "tool_error", err);
        trace_end(span);
        /* Bad arguments of execute_python are the model's to fix: a tool error it can read
         * (SEP-1303), not a protocol error the client swallows. The text may quote an
         * argument's name cut at the buffer's end: not UTF-8, json_pack would refuse it and
         * the request would never be answered. */
        utf8_trim_cut(err);
        return json_pack("{s:[{s:s, s:s}], s:{s:s}, s:b}", "content", "type", "text", "text", err,
                         "structuredContent", "error", err, "isError", 1);
    }
    return NULL;
}

/* tools/call: returns NULL when the answer comes later (a run) or on error (*code set). */
static json_t *handle_tools_call(struct mcp_session *s, json_t *id, json_t *params, int *code,
                                 const char **why)
{
    static char err[512];
    json_t *name = json_object_get(params, "name");
    if (!json_is_string(name)) {
        *code = RPC_INVALID_PARAMS;
        *why = "tools/call needs params.name";
        return NULL;
    }
    json_t *args = json_object_get(params, "arguments");
    json_t *meta = json_object_get(params, "_meta");
    json_t *progress = json_object_get(meta, "progressToken");
    char *discovery = cat_discovery_code(json_string_value(name), args);
    if (discovery) { /* search_tools / describe as MCP tools: a run of the SDK helper */
        json_t *run_args = json_pack("{s:s}", "code", discovery);
        free(discovery);
        json_t *res = submit_execute(s, id, run_args, progress, NULL,
                                     request_span(s, id, meta, json_string_value(name)));
        json_decref(run_args);
        return res;
    }
    if (strcmp(json_string_value(name), "execute_python") != 0) {
        *code = RPC_INVALID_PARAMS;
        snprintf(err, sizeof(err), "unknown tool %s: this server has one tool, execute_python",
                 json_string_value(name));
        utf8_trim_cut(err); /* a long name cut mid-character: rpc_error would refuse it */
        *why = err;
        return NULL;
    }
    /* A 2026 client's capabilities: input a tool asks for can be relayed to it (runs.c). */
    json_t *caps =
        mcp_era_is_modern_request(params) ? json_object_get(meta, MCP_META_CLIENT_CAPS) : NULL;
    json_t *state = json_object_get(params, "requestState");
    if (state) { /* the retry of a request answered input_required */
        if (run_resume(s->id, s->home, id, args, state, json_object_get(params, "inputResponses"),
                       progress, caps, err, sizeof(err)) < 0) {
            utf8_trim_cut(err);
            *code = RPC_INVALID_PARAMS;
            *why = err;
        }
        return NULL;
    }
    return submit_execute(s, id, args, progress, caps, request_span(s, id, meta, "execute_python"));
}

/* subscriptions/listen (2026 era): acknowledged now, answered never (until cancelled); the
 * list changes it asked for reach it tagged with its id: tools, and resources and prompts when
 * a server offers them (mcp_extras.c). Resource subscriptions are not offered. */
static void handle_listen(struct mcp_session *s, json_t *id, json_t *params)
{
    json_t *want = json_object_get(params, "notifications");
    int tools = json_is_true(json_object_get(want, "toolsListChanged"));
    int res = json_is_true(json_object_get(want, "resourcesListChanged")) &&
              mcp_extras_offered(UP_RESOURCES);
    int prompts =
        json_is_true(json_object_get(want, "promptsListChanged")) && mcp_extras_offered(UP_PROMPTS);
    if (tools) {
        if (!s->listen_ids)
            s->listen_ids = json_array();
        json_array_append(s->listen_ids, id);
    }
    if (res || prompts) {
        if (!s->listen_extras)
            s->listen_extras = json_array();
        json_array_append_new(s->listen_extras, json_pack("[O,b,b]", id, res, prompts));
    }
    json_t *granted = json_pack("{s:b}", "toolsListChanged", tools);
    if (res)
        json_object_set_new(granted, "resourcesListChanged", json_true());
    if (prompts)
        json_object_set_new(granted, "promptsListChanged", json_true());
    json_t *ack = rpc_request(NULL, "notifications/subscriptions/acknowledged",
                              json_pack("{s:o, s:{s:O}}", "notifications", granted, "_meta",
                                        MCP_META_SUBSCRIPTION_ID, id));
    session_send(s, ack, id);
}

/* A cancelled subscriptions/listen: forgotten (nothing more is sent for it). 1 when rid was one. */
static int listen_closed(struct mcp_session *s, json_t *rid)
{
    int found = 0;
    size_t i;
    json_t *lid;
    json_array_foreach(s->listen_ids, i, lid)
    {
        if (json_equal(lid, rid)) {
            json_array_remove(s->listen_ids, i);
            found = 1;
            break;
        }
    }
    json_array_foreach(s->listen_extras, i, lid)
    {
        if (json_equal(json_array_get(lid, 0), rid)) {
            json_array_remove(s->listen_extras, i);
            found = 1;
            break;
        }
    }
    return found;
}

json_t *mcp_modern_check(json_t *id, const char *method, json_t *params)
{
    if (params && !json_is_object(params))
        return rpc_error(id, RPC_INVALID_PARAMS, "params must be an object", NULL);
    json_t *bad = mcp_era_check_request(id, params);
    if (!bad && mcp_era_removed_method(method)) {
        char why[160];
        snprintf(why, sizeof(why), "%s was removed in protocol %s", method, MCP_MODERN_VERSION);
        bad = rpc_error(id, RPC_METHOD_NOT_FOUND, why, json_pack("{s:s}", "method", method));
    }
    return bad;
}

/* A modern request's envelope and method are acceptable; otherwise answers and returns -1.
 * The request's log level (if any) becomes the session's: a modern client hears
 * notifications/message only when its request asks (a transient HTTP session is one
 * request; over stdio the latest request's level holds). */
static int modern_admit(struct mcp_session *s, json_t *id, const char *method, json_t *params,
                        int checked)
{
    json_t *bad = checked ? NULL : mcp_modern_check(id, method, params);
    if (bad) {
        session_send(s, bad, id);
        return -1;
    }
    int sev = mcp_era_request_log_level(params); /* syslog: 0 emergency .. 7 debug */
    s->log_level = sev < 0 ? MCP_LEVEL_OFF : (enum mcp_level)(MCP_LEVEL_EMERGENCY - sev);
    char *key = id_key(id);
    if (key)
        json_object_set_new(s->modern_ids, key, json_string(method));
    free(key);
    return 0;
}

static void handle_request(struct mcp_session *s, json_t *msg, int checked)
{
    json_t *id = json_object_get(msg, "id");
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *params = json_object_get(msg, "params");
    if (params && !json_is_object(params)) {
        session_send(s, rpc_error(id, RPC_INVALID_PARAMS, "params must be an object", NULL), id);
        return;
    }
    int modern = mcp_era_is_modern_request(params);
    if (modern && modern_admit(s, id, method, params, checked) < 0)
        return;
    int code = 0;
    const char *why = NULL;
    json_t *result = NULL;
    if (modern && !s->client) { /* 2026 clients name themselves in every request */
        json_t *ci = json_object_get(json_object_get(params, "_meta"), MCP_META_CLIENT_INFO);
        const char *cname = json_string_value(json_object_get(ci, "name"));
        if (cname)
            s->client = xstrdup(cname);
    }
    if (strcmp(method, "server/discover") == 0) {
        if (hold_request(s, id, method) == 0)
            return; /* answered when the upstreams settle or the wait is over */
        result = discover_result(s);
    } else if (strcmp(method, "subscriptions/listen") == 0) {
        if (modern) {
            handle_listen(s, id, params);
            return;
        }
        code = RPC_METHOD_NOT_FOUND;
        why = "subscriptions/listen is part of protocol 2026-07-28 (send _meta with the "
              "protocol version); 2025 sessions get notifications/tools/list_changed directly";
    } else if (strcmp(method, "initialize") == 0) {
        result = handle_initialize(s, params, &code, &why);
        if (result) {
            json_decref(result);
            if (hold_request(s, id, method) == 0)
                return; /* answered when the upstreams settle or the wait is over */
            result = initialize_result(s);
        }
    } else if (strcmp(method, "ping") == 0) {
        result = json_object();
    } else if (strcmp(method, "tools/list") == 0) {
        if (json_array_size(s->waiting_lists)) { /* behind a held first answer: keep order */
            json_array_append_new(s->waiting_lists, json_pack("[O,s]", id, method));
            return;
        }
        if (hold_request(s, id, method) == 0)
            return;
        result = tools_list_result(s);
    } else if (strcmp(method, "tools/call") == 0) {
        result = handle_tools_call(s, id, params, &code, &why);
        if (!result && !code)
            return; /* answered when the run ends */
    } else if (strcmp(method, "logging/setLevel") == 0) {
        result = handle_set_level(s, params, &code, &why);
    } else if (mcp_extras_request(s->id, id, method, params, &result, &code, &why)) {
        if (!result && !code)
            return; /* answered when the server does */
    } else {
        code = RPC_METHOD_NOT_FOUND;
        why = "method not found";
    }
    if (result)
        session_send(s, rpc_result(id, result), id);
    else
        session_send(s, rpc_error(id, code, why, json_pack("{s:s}", "method", method)), id);
}

static void handle_notification(struct mcp_session *s, json_t *msg)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *params = json_object_get(msg, "params");
    if (strcmp(method, "notifications/initialized") == 0) {
        s->initialized = 1;
    } else if (strcmp(method, "notifications/cancelled") == 0) {
        json_t *rid = json_object_get(params, "requestId");
        json_t *reason = json_object_get(params, "reason");
        if (listen_closed(s, rid))
            return;
        if (rid)
            run_cancel_request(s->id, rid,
                               json_is_string(reason) ? json_string_value(reason)
                                                      : "cancelled by the client");
    } else {
        log_trace("mcp", "session %llu: notification %s ignored", (unsigned long long)s->id,
                  method);
    }
}

static void receive(struct mcp_session *s, json_t *msg, int checked)
{
    const char *why;
    switch (rpc_classify(msg, &why)) {
    case RPC_REQUEST:
        handle_request(s, msg, checked);
        break;
    case RPC_NOTIFICATION:
        handle_notification(s, msg);
        break;
    case RPC_RESPONSE:
        break; /* we send no requests to clients */
    case RPC_INVALID: {
        json_t *id = json_object_get(msg, "id");
        if (id && !json_is_string(id) && !json_is_integer(id))
            id = NULL;
        session_send(s, rpc_error(id, RPC_INVALID_REQUEST, why, NULL), id);
        break;
    }
    }
}

void mcp_session_receive_msg(struct mcp_session *s, json_t *msg)
{
    receive(s, msg, 0);
}

void mcp_session_receive_checked(struct mcp_session *s, json_t *msg)
{
    receive(s, msg, 1);
}

/* The usual request of a 2025-era client, {"jsonrpc":"2.0","id":<int or plain string>,
 * "method":"tools/call","params":{"name":"execute_python","arguments":{...}}} (members in any
 * order, nothing else) in jf_dumps' form: its arguments decoded alone, no tree of the rest.
 * Returns 1 when handled as receive() would have; 0: anything else, decoded whole. */
static int receive_execute(struct mcp_session *s, const char *text, size_t len)
{
    static const char method[] = "\"tools/call\"";
    if (!memmem(text, len < 200 ? len : 200, method, sizeof(method) - 1))
        return 0;
    struct js_member m[4], p[2];
    struct js_scan sc = {.m = m, .max = 4, .sub = "params", .sm = p, .smax = 2};
    if (js_canon_scan(text, len, 0, &sc) < 0 || sc.n != 4 || sc.sn != 2)
        return 0;
    const struct js_member *id = js_get(m, 4, "id"), *args = js_get(p, 2, "arguments");
    if (!js_is(js_get(m, 4, "jsonrpc"), "\"2.0\"") ||
        !js_is(js_get(m, 4, "method"), "\"tools/call\"") || !id ||
        !js_is(js_get(p, 2, "name"), "\"execute_python\"") || !args || args->val[0] != '{')
        return 0;
    json_t *idv = rpc_canon_id(id->val, id->vlen);
    if (!idv)
        return 0; /* null (a notification), an escape, or not an id: the tree path */
    json_t *argv = jf_loadb(args->val, args->vlen, 0, NULL);
    if (argv) {
        /* no _meta here: a trace context can only be the HTTP request's */
        json_t *result =
            submit_execute(s, idv, argv, NULL, NULL, request_span(s, idv, NULL, "execute_python"));
        if (result)
            session_send(s, rpc_result(idv, result), idv);
    }
    json_decref(argv);
    json_decref(idv);
    return argv != NULL;
}

/* The id of a message refused only for what it holds (a string with U+0000, an integer
 * beyond 64 bits): a new reference, else NULL. Such a request is answered with its id, so
 * that the client's request fails instead of waiting for an answer that never comes. */
static json_t *refused_request_id(const char *text, size_t len)
{
    json_t *whole = jf_loadb(text, len, JF_ALLOW_NUL | JF_BIG_INTEGERS, NULL);
    json_t *id = json_object_get(whole, "id"), *method = json_object_get(whole, "method");
    /* a request with a plain id and method (a string holding U+0000, or a big integer, which
     * is kept as a tagged string, is neither) */
    int plain = json_is_string(method) &&
                strlen(json_string_value(method)) == json_string_length(method) &&
                (json_is_integer(id) ||
                 (json_is_string(id) && strlen(json_string_value(id)) == json_string_length(id)));
    id = plain ? json_incref(id) : NULL;
    json_decref(whole);
    return id;
}

void mcp_session_receive(struct mcp_session *s, const char *text, size_t len)
{
    if (receive_execute(s, text, len))
        return;
    json_error_t jerr;
    json_t *msg = jf_loadb(text, len, JF_DECODE_ANY, &jerr); /* jsonfast: ~4x fewer instructions */
    if (!msg) {
        char why[300];
        json_t *id = refused_request_id(text, len);
        snprintf(why, sizeof(why), "%s: %s", id ? "invalid request" : "parse error",
                 jerr.text); /* the text names the byte */
        session_send(s, rpc_error(id, id ? RPC_INVALID_REQUEST : RPC_PARSE_ERROR, why, NULL), id);
        json_decref(id);
        return;
    }
    if (json_is_array(msg)) {
        session_send(
            s, rpc_error(NULL, RPC_INVALID_REQUEST, "JSON-RPC batches are not supported", NULL),
            NULL);
        json_decref(msg);
        return;
    }
    mcp_session_receive_msg(s, msg);
    json_decref(msg);
}

void mcp_on_upstreams_changed(void)
{
    for (struct mcp_session *s = sessions; s; s = s->next)
        answer_waiting(s, 0);
}

void mcp_on_catalog_changed(void)
{
    int v = cat_version();
    for (struct mcp_session *s = sessions; s; s = s->next) {
        size_t i;
        json_t *lid;
        json_array_foreach(s->listen_ids, i, lid)
        {
            session_send(
                s,
                rpc_request(NULL, "notifications/tools/list_changed",
                            json_pack("{s:{s:O}}", "_meta", MCP_META_SUBSCRIPTION_ID, lid)),
                lid);
        }
        if (!s->listed_version || s->listed_version == v || s->notified_version)
            continue;
        s->notified_version = v;
        session_send(s, rpc_request(NULL, "notifications/tools/list_changed", NULL), NULL);
    }
}

void mcp_on_extras_changed(enum up_extra kind)
{
    const char *method = kind == UP_PROMPTS ? "notifications/prompts/list_changed"
                                            : "notifications/resources/list_changed";
    for (struct mcp_session *s = sessions; s; s = s->next) {
        size_t i;
        json_t *l;
        json_array_foreach(s->listen_extras, i, l)
        {
            if (!json_is_true(json_array_get(l, kind == UP_PROMPTS ? 2 : 1)))
                continue;
            json_t *lid = json_array_get(l, 0);
            session_send(
                s,
                rpc_request(NULL, method,
                            json_pack("{s:{s:O}}", "_meta", MCP_META_SUBSCRIPTION_ID, lid)),
                lid);
        }
        if (s->initialized)
            session_send(s, rpc_request(NULL, method, NULL), NULL);
    }
}

long mcp_session_count(void)
{
    return (long)sessions_by_id.n;
}

void mcp_free_all(void)
{
    while (sessions)
        mcp_session_close(sessions);
    idmap_free(&sessions_by_id);
    mcp_tool_free();
}
