/* oauth_flow — the token endpoint and RFC 7009 revocation, with the client's authentication
 * (none, client_secret_basic, client_secret_post). Blocking: for the CLI process and the
 * gateway's helper threads. Never logs the form, the response or a secret. */
#include "oauth.h"

#include "util.h"

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *basic_auth(const char *id, const char *secret)
{
    char *eid = oa_form_escape(id), *esec = oa_form_escape(secret ? secret : "");
    struct buf raw = {0};
    buf_printf(&raw, "%s:%s", eid, esec);
    free(eid);
    free(esec);
    size_t n = 4 * ((raw.len + 2) / 3) + 1;
    unsigned char *b64 = xmalloc(n);
    EVP_EncodeBlock(b64, (const unsigned char *)raw.data, (int)raw.len);
    buf_free(&raw);
    struct buf h = {0};
    buf_printf(&h, "Authorization: Basic %s", (char *)b64);
    free(b64);
    return buf_steal(&h);
}

static char *b64url_enc(const unsigned char *in, size_t n)
{
    size_t cap = 4 * ((n + 2) / 3) + 1;
    unsigned char *b = xmalloc(cap);
    int len = EVP_EncodeBlock(b, in, (int)n);
    while (len > 0 && b[len - 1] == '=')
        len--;
    b[len] = 0;
    for (int i = 0; i < len; i++)
        b[i] = b[i] == '+' ? '-' : b[i] == '/' ? '_' : b[i];
    return (char *)b;
}

/* An RFC 7523 client assertion (private_key_jwt): iss = sub = client_id, aud = the
 * authorization server's issuer, a minute of life, a random jti. NULL on failure. */
static char *client_assertion(json_t *client)
{
    const char *id = json_string_value(json_object_get(client, "client_id"));
    const char *pem = json_string_value(json_object_get(client, "private_key"));
    const char *alg = json_string_value(json_object_get(client, "signing_alg"));
    const char *aud = json_string_value(json_object_get(client, "assertion_audience"));
    if (!id || !pem || !aud)
        return NULL;
    if (!alg)
        alg = "ES256";
    int ec = strcmp(alg, "ES256") == 0;
    if (!ec && strcmp(alg, "RS256") != 0)
        return NULL;
    BIO *bio = BIO_new_mem_buf(pem, -1);
    EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    if (!key)
        return NULL;
    unsigned char jti_raw[16];
    char jti[40] = "";
    if (RAND_bytes(jti_raw, sizeof(jti_raw)) == 1)
        for (size_t i = 0; i < sizeof(jti_raw); i++)
            snprintf(jti + 2 * i, 3, "%02x", jti_raw[i]);
    json_t *hdr = json_pack("{s:s, s:s}", "alg", alg, "typ", "JWT");
    json_t *claims =
        json_pack("{s:s, s:s, s:s, s:I, s:I, s:s}", "iss", id, "sub", id, "aud", aud, "iat",
                  (json_int_t)oa_now(), "exp", (json_int_t)(oa_now() + 60), "jti", jti);
    char *h = json_dumps(hdr, JSON_COMPACT), *c = json_dumps(claims, JSON_COMPACT);
    char *h64 = b64url_enc((unsigned char *)h, strlen(h)),
         *c64 = b64url_enc((unsigned char *)c, strlen(c));
    struct buf in = {0};
    buf_printf(&in, "%s.%s", h64, c64);
    char *out = NULL;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    size_t siglen = 0;
    unsigned char *sig = NULL;
    if (md && EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) == 1 &&
        EVP_DigestSign(md, NULL, &siglen, (unsigned char *)in.data, in.len) == 1) {
        sig = xmalloc(siglen);
        if (EVP_DigestSign(md, sig, &siglen, (unsigned char *)in.data, in.len) != 1)
            siglen = 0;
    }
    unsigned char raw[64];
    const unsigned char *sp = sig;
    ECDSA_SIG *es = ec && siglen ? d2i_ECDSA_SIG(NULL, &sp, (long)siglen) : NULL;
    if (ec && es) {
        const BIGNUM *r, *s;
        ECDSA_SIG_get0(es, &r, &s);
        if (BN_bn2binpad(r, raw, 32) == 32 && BN_bn2binpad(s, raw + 32, 32) == 32) {
            char *s64 = b64url_enc(raw, 64);
            buf_printf(&in, ".%s", s64);
            free(s64);
            out = buf_steal(&in);
        }
        ECDSA_SIG_free(es);
    } else if (!ec && siglen) {
        char *s64 = b64url_enc(sig, siglen);
        buf_printf(&in, ".%s", s64);
        free(s64);
        out = buf_steal(&in);
    }
    buf_free(&in);
    free(sig);
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(key);
    free(h);
    free(c);
    free(h64);
    free(c64);
    json_decref(hdr);
    json_decref(claims);
    return out;
}

/* The request's headers and full form for client: adds the client authentication. */
static void with_client(json_t *client, const char *form, struct buf *body, char **auth_hdr)
{
    const char *id = json_string_value(json_object_get(client, "client_id"));
    const char *secret = json_string_value(json_object_get(client, "client_secret"));
    const char *method = json_string_value(json_object_get(client, "token_endpoint_auth_method"));
    *auth_hdr = NULL;
    buf_appends(body, form);
    if (method && strcmp(method, "private_key_jwt") == 0) {
        char *a = client_assertion(client);
        char *e = oa_form_escape(id ? id : "");
        buf_printf(body,
                   "&client_id=%s&client_assertion_type=urn%%3Aietf%%3Aparams%%3Aoauth%%3A"
                   "client-assertion-type%%3Ajwt-bearer&client_assertion=%s",
                   e, a ? a : "");
        free(e);
        free(a);
        return;
    }
    if (method && strcmp(method, "client_secret_basic") == 0 && secret) {
        *auth_hdr = basic_auth(id, secret);
        return;
    }
    char *e = oa_form_escape(id ? id : "");
    buf_printf(body, "&client_id=%s", e);
    free(e);
    if (method && strcmp(method, "client_secret_post") == 0 && secret) {
        e = oa_form_escape(secret);
        buf_printf(body, "&client_secret=%s", e);
        free(e);
    }
}

int oa_token_request(const char *token_endpoint, json_t *client, const char *form, json_t **tok,
                     char **oauth_error, char **err)
{
    *tok = NULL;
    *oauth_error = *err = NULL;
    struct buf body = {0};
    char *auth = NULL;
    with_client(client, form, &body, &auth);
    buf_append(&body, "", 1);
    const char *hdr[4] = {"Content-Type: application/x-www-form-urlencoded",
                          "Accept: application/json", auth, NULL};
    struct oa_resp r;
    oa_http("POST", token_endpoint, hdr, body.data, &r);
    /* the form held the code, the verifier or the refresh token: wipe it */
    if (body.data)
        memset(body.data, 0, body.len);
    buf_free(&body);
    if (auth) {
        memset(auth, 0, strlen(auth));
        free(auth);
    }
    json_t *j = r.body ? json_loads(r.body, 0, NULL) : NULL;
    int rc = -1;
    if (r.status >= 200 && r.status < 300 && json_is_string(json_object_get(j, "access_token"))) {
        *tok = j;
        j = NULL;
        rc = 0;
    } else {
        const char *e = json_string_value(json_object_get(j, "error"));
        const char *d = json_string_value(json_object_get(j, "error_description"));
        if (e)
            *oauth_error = xstrdup(e);
        struct buf m = {0};
        if (!r.status)
            buf_printf(&m, "the token endpoint %s cannot be reached: %s", token_endpoint, r.error);
        else
            buf_printf(&m, "the token endpoint answered HTTP %ld%s%s%s%s", r.status, e ? " " : "",
                       e ? e : "", d ? ": " : "", d ? d : "");
        *err = buf_steal(&m);
    }
    if (r.body)
        memset(r.body, 0, strlen(r.body));
    oa_resp_free(&r);
    json_decref(j);
    return rc;
}

void oa_revoke(const char *endpoint, json_t *client, const char *token, const char *hint)
{
    if (!endpoint || !token)
        return;
    struct buf form = {0};
    char *e = oa_form_escape(token);
    buf_printf(&form, "token=%s&token_type_hint=%s", e, hint);
    memset(e, 0, strlen(e));
    free(e);
    struct buf body = {0};
    char *auth = NULL;
    with_client(client, form.data, &body, &auth);
    buf_append(&body, "", 1);
    const char *hdr[3] = {"Content-Type: application/x-www-form-urlencoded", auth, NULL};
    struct oa_resp r;
    oa_http("POST", endpoint, hdr, body.data, &r);
    oa_resp_free(&r);
    memset(form.data, 0, form.len);
    buf_free(&form);
    memset(body.data, 0, body.len);
    buf_free(&body);
    free(auth);
}
