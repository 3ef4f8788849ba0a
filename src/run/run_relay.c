/* run_relay — see run_relay.h. */
#include "run_relay.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

/* Whether a client with capabilities caps can answer every one of requests (an InputRequests
 * map, borrowed; absent or empty: only a requestState to echo, which any 2026 client can). */
int run_relay_can_answer(json_t *caps, json_t *requests)
{
    const char *key;
    json_t *req;
    json_object_foreach(requests, key, req)
    {
        const char *m = json_string_value(json_object_get(req, "method"));
        json_t *p = json_object_get(req, "params");
        if (!m)
            return 0;
        if (strcmp(m, "elicitation/create") == 0) {
            json_t *e = json_object_get(caps, "elicitation");
            const char *mode = json_string_value(json_object_get(p, "mode"));
            int url = mode && strcmp(mode, "url") == 0;
            if (!json_is_object(e) || (url && !json_object_get(e, "url")) ||
                (!url && json_object_size(e) && !json_object_get(e, "form")))
                return 0;
        } else if (strcmp(m, "sampling/createMessage") == 0) {
            if (!json_is_object(json_object_get(caps, "sampling")))
                return 0;
        } else if (strcmp(m, "roots/list") == 0) {
            if (!json_is_object(json_object_get(caps, "roots")))
                return 0;
        } else {
            return 0;
        }
    }
    return 1;
}

#define STATE_PREFIX "rs_"

int run_relay_mint_state(char out[RUN_RELAY_STATE_MAX])
{
    if (replica_id()) { /* routable by the balancer, checkable by every replica */
        memcpy(out, STATE_PREFIX, sizeof(STATE_PREFIX));
        return replica_mint("rs", out + strlen(STATE_PREFIX),
                            RUN_RELAY_STATE_MAX - strlen(STATE_PREFIX));
    }
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned char raw[24];
    size_t got = 0;
    while (got < sizeof(raw)) {
        ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    char *o = out;
    *o++ = 'r', *o++ = 's', *o++ = '_';
    for (size_t i = 0; i < sizeof(raw); i += 3) {
        uint32_t v = (uint32_t)raw[i] << 16 | (uint32_t)raw[i + 1] << 8 | raw[i + 2];
        *o++ = b64[v >> 18 & 63];
        *o++ = b64[v >> 12 & 63];
        *o++ = b64[v >> 6 & 63];
        *o++ = b64[v & 63];
    }
    *o = '\0';
    explicit_bzero(raw, sizeof(raw));
    return 0;
}

int run_relay_elsewhere(const char *state, char *err, size_t errlen)
{
    char who[REPLICA_ID_MAX + 1];
    size_t np = strlen(STATE_PREFIX);
    if (!replica_id() || strncmp(state, STATE_PREFIX, np) != 0)
        return 0;
    enum replica_verdict v = replica_check("rs", state + np, who);
    if (v == REPLICA_OTHER)
        snprintf(err, errlen,
                 "requestState belongs to a run on replica %s of this fleet, not on this one "
                 "(%s): replica %s is gone (that run and its session's variables are lost) or "
                 "the load balancer does not route a retry by the replica id in its "
                 "requestState (contrib/fleet/haproxy.cfg does); send the request again without "
                 "requestState",
                 who, replica_id(), who);
    else if (v == REPLICA_EARLIER)
        snprintf(err, errlen,
                 "requestState is lost: replica %s restarted since it issued it, and the run "
                 "waiting for this input went with it; send the request again without "
                 "requestState",
                 who);
    else
        return 0; /* this replica's, or not of this fleet: runs.c says which */
    return -1;
}
