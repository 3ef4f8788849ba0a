/* http_auth_fleet — see http_auth_fleet.h. */
#include "http_auth_fleet.h"

#include "log.h"
#include "state.h"
#include "util.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODULE    "http"
#define HEX_LEN   (HAF_DIGEST_LEN * 2)
#define MAX_FLEET 65536 /* principals and revocations read from Redis (a bound on memory) */

struct entry {
    unsigned char d[HAF_DIGEST_LEN];
    const char *name; /* interned in `names` */
};

static struct entry *shared, *revoked;
static size_t n_shared, n_revoked;
static json_t *names;   /* principal -> true: names handed out stay valid until exit */
static json_t *local;   /* hex -> principal: this replica's own tokens */
static json_t *pending; /* hex -> "revoke" / "unrevoke", not yet written (Redis away) */
static int hooked;

static void hex(const unsigned char d[HAF_DIGEST_LEN], char out[HEX_LEN + 1])
{
    for (int i = 0; i < HAF_DIGEST_LEN; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static int unhex(const char *s, unsigned char d[HAF_DIGEST_LEN])
{
    if (!s || strlen(s) != HEX_LEN)
        return -1;
    for (int i = 0; i < HAF_DIGEST_LEN; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return -1;
        d[i] = (unsigned char)v;
    }
    return 0;
}

static const char *intern(const char *name)
{
    if (!names)
        names = json_object();
    if (!json_object_get(names, name))
        json_object_set_new(names, name, json_true());
    return json_object_iter_key(json_object_iter_at(names, name));
}

const char *haf_check(const unsigned char d[HAF_DIGEST_LEN], int *revoked_out)
{
    int r = 0;
    const char *found = NULL;
    for (size_t i = 0; i < n_revoked; i++)
        r |= CRYPTO_memcmp(revoked[i].d, d, HAF_DIGEST_LEN) == 0;
    for (size_t i = 0; i < n_shared; i++)
        if (CRYPTO_memcmp(shared[i].d, d, HAF_DIGEST_LEN) == 0)
            found = shared[i].name;
    *revoked_out = r;
    return r ? NULL : found;
}

/* ---- reading the fleet's copy ---------------------------------------------------------------- */

static void on_revoked(void *ud, json_t *reply)
{
    (void)ud;
    if (json_is_array(reply)) {
        size_t n = json_array_size(reply) < MAX_FLEET ? json_array_size(reply) : MAX_FLEET, k = 0;
        struct entry *e = xcalloc(n ? n : 1, sizeof(*e));
        for (size_t i = 0; i < n; i++)
            if (unhex(json_string_value(json_array_get(reply, i)), e[k].d) == 0)
                k++;
        free(revoked);
        revoked = e;
        n_revoked = k;
    }
    json_decref(reply);
}

static void on_tokens(void *ud, json_t *reply)
{
    (void)ud;
    if (json_is_array(reply)) {
        size_t n = json_array_size(reply) / 2, k = 0;
        n = n < MAX_FLEET ? n : MAX_FLEET;
        struct entry *e = xcalloc(n ? n : 1, sizeof(*e));
        for (size_t i = 0; i < n; i++) {
            const char *name = json_string_value(json_array_get(reply, 2 * i + 1));
            if (name && strlen(name) < 64 &&
                unhex(json_string_value(json_array_get(reply, 2 * i)), e[k].d) == 0)
                e[k++].name = intern(name);
        }
        free(shared);
        shared = e;
        n_shared = k;
    }
    json_decref(reply);
}

static void pull(void)
{
    char tk[64], rk[64];
    const char *hall[] = {"HGETALL", state_key(tk, sizeof(tk), "tokens")};
    const char *smem[] = {"SMEMBERS", state_key(rk, sizeof(rk), "revoked")};
    state_cmd(on_tokens, NULL, 2, hall, NULL);
    state_cmd(on_revoked, NULL, 2, smem, NULL);
}

static void on_message(json_t *msg)
{
    (void)msg;
    pull();
}

/* ---- writing this replica's changes -------------------------------------------------------- */

/* Queues the writes for one digest; -1 when Redis is away (kept in `pending`). */
static int write_one(const char *h, const char *what, const char *name)
{
    char tk[64], rk[64];
    state_key(tk, sizeof(tk), "tokens");
    state_key(rk, sizeof(rk), "revoked");
    if (strcmp(what, "revoke") == 0) {
        const char *hdel[] = {"HDEL", tk, h};
        const char *sadd[] = {"SADD", rk, h};
        return state_cmd(NULL, NULL, 3, hdel, NULL) < 0 || state_cmd(NULL, NULL, 3, sadd, NULL) < 0
                   ? -1
                   : 0;
    }
    const char *hset[] = {"HSET", tk, h, name};
    const char *srem[] = {"SREM", rk, h};
    if (state_cmd(NULL, NULL, 4, hset, NULL) < 0)
        return -1;
    return strcmp(what, "unrevoke") == 0 && state_cmd(NULL, NULL, 3, srem, NULL) < 0 ? -1 : 0;
}

static void push(void)
{
    const char *h;
    json_t *v, *left = json_object();
    json_object_foreach(pending, h, v)
    {
        const char *name = json_string_value(json_object_get(local, h));
        if (write_one(h, json_string_value(v), name ? name : "") < 0)
            json_object_set(left, h, v);
    }
    json_decref(pending);
    pending = left;
    json_object_foreach(local, h, v)
    {
        if (!json_object_get(pending, h))
            write_one(h, "add", json_string_value(v));
    }
    json_t *msg = json_object();
    state_publish("tokens", msg);
    json_decref(msg);
    pull(); /* our own changes come back with the others' */
}

static void on_connect(void)
{
    push(); /* then reads back (one queue, in order) */
}

/* What this replica revoked holds here at once, before the fleet's copy is read back. */
static void forget_revoked_here(void)
{
    const char *h;
    json_t *v;
    json_object_foreach(pending, h, v)
    {
        unsigned char d[HAF_DIGEST_LEN];
        if (strcmp(json_string_value(v), "revoke") != 0 || unhex(h, d) < 0)
            continue;
        for (size_t i = 0; i < n_shared; i++)
            if (memcmp(shared[i].d, d, HAF_DIGEST_LEN) == 0)
                shared[i] = shared[--n_shared];
    }
}

void haf_local(const char *const *pnames, const unsigned char (*digests)[HAF_DIGEST_LEN], size_t n,
               int reload)
{
    if (!state_enabled())
        return;
    if (!hooked) {
        hooked = 1;
        state_on_message("tokens", on_message);
        state_on_connect(on_connect);
    }
    if (!pending)
        pending = json_object();
    json_t *now = json_object();
    char h[HEX_LEN + 1];
    for (size_t i = 0; i < n; i++) {
        hex(digests[i], h);
        json_object_set_new(now, h, json_string(pnames[i]));
        if (reload && !json_object_get(local, h))
            json_object_set_new(pending, h, json_string("unrevoke"));
    }
    const char *k;
    json_t *v;
    size_t dropped = 0;
    json_object_foreach(reload ? local : NULL, k, v)
    {
        if (!json_object_get(now, k)) {
            json_object_set_new(pending, k, json_string("revoke"));
            dropped++;
        }
    }
    json_decref(local);
    local = now;
    forget_revoked_here();
    if (dropped)
        log_info(MODULE, "%zu token%s revoked for every replica", dropped, dropped == 1 ? "" : "s");
    push();
}
