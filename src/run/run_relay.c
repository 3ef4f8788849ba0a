/* run_relay — see run_relay.h. */
#include "run_relay.h"

#include <errno.h>
#include <stdint.h>
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

/* "rs_" and 32 base64url characters from 24 random bytes. -1 without randomness. */
int run_relay_mint_state(char out[48])
{
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
