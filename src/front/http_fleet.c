/* http_fleet — what the HTTP front does as one replica of a fleet behind a load balancer:
 * /healthz and /readyz, the drain's refusals, and telling a client whose session lived on a
 * lost replica what it lost. Loop thread only.
 *
 * Routing is the balancer's (contrib/fleet/): it reads the replica id at the head of
 * Mcp-Session-Id, of the legacy ?sessionId= and of Mcp-Param-Namespace (replica.h). A request
 * that reaches a replica other than the one in its id arrives because that replica is gone
 * (the balancer sends an id to its replica while it is up), so its state is lost, and the
 * answer says which replica held it and what went with it.
 *
 * During a drain (health.h), a request that would start something is refused: a new session
 * or a 2026 request with 503 and Retry-After (the balancer retries it on another replica,
 * contrib/fleet/haproxy.cfg's retry-on), a request on an existing 2025 session with 404,
 * which tells a 2025 client to initialize a new session (on another replica). Notifications
 * and responses still go through, so a run in flight can finish. */
#include "health.h"
#include "http_int.h"
#include "jsonrpc.h"
#include "replica.h"

#include <stdio.h>
#include <string.h>

#define MODULE "http"

void http__reply_session_lost(struct hconn *c, const char *start_over)
{
    char who[REPLICA_ID_MAX + 1], msg[600];
    enum replica_verdict v =
        replica_id() && !c->bad_sid && c->sid[0] ? replica_check("sid", c->sid, who) : REPLICA_MINE;
    if (v == REPLICA_OTHER)
        snprintf(msg, sizeof(msg),
                 "Session not found: it was held by replica %s of this fleet, which is gone "
                 "(stopped, restarted or unreachable); its Python variables and any run in "
                 "flight are lost; %s",
                 who, start_over);
    else if (v == REPLICA_EARLIER)
        snprintf(msg, sizeof(msg),
                 "Session not found: replica %s restarted since this session began; its Python "
                 "variables and any run in flight are lost; %s",
                 who, start_over);
    else if (v == REPLICA_FORGED)
        snprintf(msg, sizeof(msg),
                 "Session not found: this session id was not issued by this fleet; %s", start_over);
    else if (health_draining())
        snprintf(msg, sizeof(msg),
                 "Session not found: %s%s is shutting down and this session ends with it; its "
                 "Python variables are discarded; %s",
                 replica_id() ? "replica " : "codemcp", replica_id() ? replica_id() : "",
                 start_over);
    else
        snprintf(msg, sizeof(msg), "Session not found: it ended or expired; %s", start_over);
    http__reply_error(c, 404, -32001, msg);
}

int http__health_request(struct hconn *c, const char *uri)
{
    int alive = strcmp(uri, "/healthz") == 0, ready = strcmp(uri, "/readyz") == 0;
    if (!alive && !ready)
        return 0;
    if (c->method != M_GET) {
        c->extra_name = "allow:";
        c->extra_value = "GET";
        http__reply_error(c, 405, RPC_SERVER_ERROR, "Method Not Allowed: GET only");
        return 1;
    }
    int ok = 1;
    buf_reset(&c->out);
    if (alive)
        buf_appends(&c->out, "{\"status\":\"alive\"}");
    else
        ok = health_ready(&c->out);
    c->close_after = 1; /* probes come one at a time; nothing to keep alive for */
    http__reply_ready(c, ok ? 200 : 503);
    return 1;
}

int http__drain_refused(struct hconn *c, json_t *msg, int starts_session)
{
    if (!health_draining())
        return 0;
    int request = json_object_get(msg, "method") && json_object_get(msg, "id");
    if (!starts_session && !request)
        return 0; /* a notification or a response: a run in flight may need it */
    if (!starts_session && c->has_sid) {
        http__reply_session_lost(c, "initialize a new session");
        return 1;
    }
    http__reply_shutting_down(c);
    return 1;
}

void http__reply_shutting_down(struct hconn *c)
{
    c->extra_name = "retry-after:";
    c->extra_value = "1";
    char why[240];
    snprintf(why, sizeof(why),
             "Service Unavailable: %s%s is shutting down and takes no new sessions or runs; "
             "retry (a load balancer sends it to another replica)",
             replica_id() ? "replica " : "codemcp", replica_id() ? replica_id() : "");
    http__reply_error(c, 503, RPC_SERVER_ERROR, why);
}
