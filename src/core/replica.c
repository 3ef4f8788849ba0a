/* replica — see replica.h. The mac binds the kind of id, so a session id shown to a client
 * is never accepted as a namespace handle; comparisons of macs are constant-time. */
#include "replica.h"
#include "util.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>

#define BOOT_HEX   8
#define RANDOM_HEX 48
#define MAC_HEX    32
#define SECRET_MIN 16 /* bytes of fleet secret: a shorter one is a typo, not a secret */

static char me[REPLICA_ID_MAX + 1];
static char boot[BOOT_HEX + 1];
static unsigned char key[256];
static size_t key_len;

static int id_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-';
}

static int valid_id(const char *id, size_t n)
{
    if (n == 0 || n > REPLICA_ID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!id_char(id[i]))
            return 0;
    return 1;
}

int replica_init(const char *id, const char *secret, char *err, size_t errlen)
{
    me[0] = '\0';
    if (!id || !*id)
        return 0;
    if (!valid_id(id, strlen(id))) {
        snprintf(err, errlen,
                 "CODEMCP_REPLICA_ID='%.40s' must be 1 to %d characters of a-z, 0-9 and '-'", id,
                 REPLICA_ID_MAX);
        return -1;
    }
    size_t sl = secret ? strlen(secret) : 0;
    if (sl < SECRET_MIN || sl > sizeof(key)) {
        snprintf(err, errlen,
                 "CODEMCP_REPLICA_ID needs CODEMCP_FLEET_SECRET: %d to %zu characters, the same "
                 "on every replica (e.g. openssl rand -hex 32)",
                 SECRET_MIN, sizeof(key));
        return -1;
    }
    if (random_hex(boot, BOOT_HEX / 2) < 0) {
        snprintf(err, errlen, "no randomness for the replica's boot id");
        return -1;
    }
    memcpy(key, secret, sl);
    key_len = sl;
    snprintf(me, sizeof(me), "%s", id);
    return 0;
}

const char *replica_id(void)
{
    return me[0] ? me : NULL;
}

/* Hex of the first MAC_HEX / 2 bytes of HMAC-SHA256(secret, kind ":" body[0..n)). */
static void mac_of(const char *kind, const char *body, size_t n, char *out)
{
    unsigned char md[EVP_MAX_MD_SIZE], msg[16 + REPLICA_MINTED_MAX];
    unsigned int md_len = 0;
    int kl = snprintf((char *)msg, sizeof(msg), "%s:", kind);
    memcpy(msg + kl, body, n);
    HMAC(EVP_sha256(), key, (int)key_len, msg, (size_t)kl + n, md, &md_len);
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < MAC_HEX / 2; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[MAC_HEX] = '\0';
}

int replica_mint(const char *kind, char *out, size_t n)
{
    char rnd[RANDOM_HEX + 1];
    /* boot after the random part: a log's "%.8s" of an id still tells sessions apart */
    if (!me[0] || n < REPLICA_MINTED_MAX || random_hex(rnd, RANDOM_HEX / 2) < 0)
        return -1;
    int len = snprintf(out, n, "%s.%s%s.", me, rnd, boot); /* logs show "<replica>.<random…" */
    mac_of(kind, out, (size_t)len - 1, out + len);
    return 0;
}

static int all_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

enum replica_verdict replica_check(const char *kind, const char *id, char *who)
{
    who[0] = '\0';
    const char *dot = strchr(id, '.');
    size_t idl = dot ? (size_t)(dot - id) : 0;
    size_t total = strlen(id), body = idl + 1 + BOOT_HEX + RANDOM_HEX;
    if (!me[0] || !dot || !valid_id(id, idl) || total != body + 1 + MAC_HEX || id[body] != '.' ||
        !all_hex(dot + 1, BOOT_HEX + RANDOM_HEX) || !all_hex(id + body + 1, MAC_HEX))
        return REPLICA_FORGED;
    char want[MAC_HEX + 1];
    mac_of(kind, id, body, want);
    if (CRYPTO_memcmp(want, id + body + 1, MAC_HEX) != 0)
        return REPLICA_FORGED;
    memcpy(who, id, idl);
    who[idl] = '\0';
    if (strcmp(who, me) != 0)
        return REPLICA_OTHER;
    return memcmp(dot + 1 + RANDOM_HEX, boot, BOOT_HEX) == 0 ? REPLICA_MINE : REPLICA_EARLIER;
}
