/* oauth_flow — the token endpoint and RFC 7009 revocation, with the client's authentication
 * (none, client_secret_basic, client_secret_post). Blocking: for the CLI process and the
 * gateway's helper threads. Never logs the form, the response or a secret. */
#include "oauth.h"

#include "util.h"

#include <openssl/evp.h>
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

/* The request's headers and full form for client: adds the client authentication. */
static void with_client(json_t *client, const char *form, struct buf *body, char **auth_hdr)
{
    const char *id = json_string_value(json_object_get(client, "client_id"));
    const char *secret = json_string_value(json_object_get(client, "client_secret"));
    const char *method = json_string_value(json_object_get(client, "token_endpoint_auth_method"));
    *auth_hdr = NULL;
    buf_appends(body, form);
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
