/* oauth_disc — blocking HTTP, the Bearer challenge, discovery and client identity.
 *
 * Discovery (MCP authorization, 2026-07-28): protected-resource metadata (RFC 9728) from the
 * challenge's resource_metadata URL, else /.well-known/oauth-protected-resource with the
 * server's path, else at the root; its resource must be the server's URL or a parent of it.
 * Then authorization-server metadata for its first authorization server: RFC 8414 and OpenID
 * discovery in the spec's order (path-inserted, then path-appended OpenID), with the issuer
 * checked. Without protected-resource metadata, the 2025-03-26 way: the server's origin's
 * /.well-known/oauth-authorization-server, else the default /authorize, /token, /register.
 * Every candidate that does not answer a JSON object with 2xx (404, 401, 403 from a CDN, 5xx,
 * HTML) moves on to the next. Blocking: callers are a CLI process or a helper thread. */
#include "oauth.h"

#include "curl_lib.h"
#include "util.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HTTP_TIMEOUT_MS 30000L
#define MAX_BODY        (1u << 20)

/* ---- blocking HTTP ---------------------------------------------------------------------- */

struct sink {
    struct buf body;
    char *www_auth, *location;
    int too_big;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    struct sink *s = ud;
    if (s->body.len + sz * n > MAX_BODY) {
        s->too_big = 1;
        return 0;
    }
    buf_append(&s->body, p, sz * n);
    return sz * n;
}

static char *header_value(const char *line, size_t n, const char *name)
{
    size_t k = strlen(name);
    if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
        return NULL;
    const char *v = line + k + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    return xstrndup(v, (size_t)(end - v));
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    struct sink *s = ud;
    size_t len = sz * n;
    if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) { /* a new response (after 100-continue) */
        free(s->www_auth);
        free(s->location);
        s->www_auth = s->location = NULL;
    }
    char *v;
    if ((v = header_value(p, len, "WWW-Authenticate"))) {
        free(s->www_auth);
        s->www_auth = v;
    } else if ((v = header_value(p, len, "Location"))) {
        free(s->location);
        s->location = v;
    }
    return len;
}

int oa_http(const char *method, const char *url, const char *const *headers, const char *body,
            struct oa_resp *r)
{
    memset(r, 0, sizeof(*r));
    struct sink s = {0};
    CURL *c = curl_easy_init();
    struct curl_slist *hl = NULL;
    if (!c) {
        if (curl_lib_load(r->error, sizeof(r->error)) == 0)
            snprintf(r->error, sizeof(r->error), "cannot start libcurl");
        return -1;
    }
    for (const char *const *h = headers; h && *h; h++)
        hl = curl_slist_append(hl, *h);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, HTTP_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &s);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "codemcp/" CODEMCP_VERSION);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    if (rc != CURLE_OK) {
        snprintf(r->error, sizeof(r->error), "%s", curl_easy_strerror(rc));
        r->status = s.too_big ? r->status : 0;
    }
    r->body = buf_steal(&s.body);
    r->www_auth = s.www_auth;
    r->location = s.location;
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    return rc == CURLE_OK ? 0 : -1;
}

void oa_resp_free(struct oa_resp *r)
{
    free(r->body);
    free(r->www_auth);
    free(r->location);
    memset(r, 0, sizeof(*r));
}

char *oa_form_escape(const char *s)
{
    struct buf b = {0};
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~", *p))
            buf_append(&b, p, 1);
        else
            buf_printf(&b, "%%%02X", *p);
    }
    buf_append(&b, "", 1);
    return buf_steal(&b);
}

/* ---- WWW-Authenticate -------------------------------------------------------------------- */

/* Parses auth-params (name=token or name="quoted") after the Bearer scheme. */
void oa_challenge_parse(const char *h, struct oa_challenge *c)
{
    memset(c, 0, sizeof(*c));
    if (!h)
        return;
    const char *p = h;
    while (*p == ' ')
        p++;
    if (strncasecmp(p, "Bearer", 6) == 0)
        p += 6;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        const char *name = p;
        while (*p && *p != '=' && *p != ' ' && *p != ',')
            p++;
        size_t nlen = (size_t)(p - name);
        while (*p == ' ')
            p++;
        if (*p != '=')
            continue;
        p++;
        while (*p == ' ')
            p++;
        struct buf v = {0};
        if (*p == '"') {
            for (p++; *p && *p != '"'; p++) {
                if (*p == '\\' && p[1])
                    p++;
                buf_append(&v, p, 1);
            }
            if (*p == '"')
                p++;
        } else {
            const char *s = p;
            while (*p && *p != ',' && *p != ' ')
                p++;
            buf_append(&v, s, (size_t)(p - s));
        }
        buf_append(&v, "", 1);
        char **slot = NULL;
        if (nlen == 17 && strncasecmp(name, "resource_metadata", 17) == 0)
            slot = &c->resource_metadata;
        else if (nlen == 5 && strncasecmp(name, "scope", 5) == 0)
            slot = &c->scope;
        else if (nlen == 5 && strncasecmp(name, "error", 5) == 0)
            slot = &c->error;
        if (slot && !*slot)
            *slot = buf_steal(&v);
        buf_free(&v);
    }
}

void oa_challenge_free(struct oa_challenge *c)
{
    free(c->resource_metadata);
    free(c->scope);
    free(c->error);
    memset(c, 0, sizeof(*c));
}

/* ---- discovery ---------------------------------------------------------------------------- */

/* Splits url into its origin ("https://host:port") and path (without query, no trailing
 * '/'; "" for the root). Returns -1 for a URL that is not http(s). */
static int split_url(const char *url, char **origin, char **path)
{
    const char *p = strstr(url, "://");
    if (!p || (strncasecmp(url, "http", 4) != 0))
        return -1;
    p += 3;
    size_t host = strcspn(p, "/?#");
    *origin = xstrndup(url, (size_t)(p - url) + host);
    const char *s = p + host;
    size_t n = *s == '/' ? strcspn(s, "?#") : 0;
    while (n > 0 && s[n - 1] == '/')
        n--;
    *path = xstrndup(s, n);
    return 0;
}

/* GETs url and returns the JSON object it answered with 2xx, or NULL. */
static json_t *get_json(const char *url)
{
    static const char *const hdr[] = {"Accept: application/json", NULL};
    struct oa_resp r;
    json_t *j = NULL;
    if (oa_http("GET", url, hdr, NULL, &r) == 0 && r.status >= 200 && r.status < 300 && r.body)
        j = json_loads(r.body, 0, NULL);
    oa_resp_free(&r);
    if (j && !json_is_object(j)) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

/* The resource may be the server URL or a parent of it on the same origin. */
static int resource_covers(const char *resource, const char *server_url)
{
    char *ro = NULL, *rp = NULL, *so = NULL, *sp = NULL;
    int ok = split_url(resource, &ro, &rp) == 0 && split_url(server_url, &so, &sp) == 0 &&
             strcasecmp(ro, so) == 0 && strncmp(sp, rp, strlen(rp)) == 0 &&
             (sp[strlen(rp)] == 0 || sp[strlen(rp)] == '/');
    free(ro);
    free(rp);
    free(so);
    free(sp);
    return ok;
}

static json_t *fetch_prm(const char *server_url, const struct oa_challenge *ch)
{
    char *origin = NULL, *path = NULL;
    json_t *j = NULL;
    if (ch && ch->resource_metadata && strncasecmp(ch->resource_metadata, "http", 4) == 0)
        j = get_json(ch->resource_metadata);
    if (!j && split_url(server_url, &origin, &path) == 0) {
        struct buf u = {0};
        if (*path) {
            buf_printf(&u, "%s/.well-known/oauth-protected-resource%s", origin, path);
            j = get_json(u.data);
            buf_reset(&u);
        }
        if (!j) {
            buf_printf(&u, "%s/.well-known/oauth-protected-resource", origin);
            j = get_json(u.data);
        }
        buf_free(&u);
    }
    free(origin);
    free(path);
    return j;
}

/* RFC 8414 / OpenID discovery for an issuer; checks the issuer it states. */
static json_t *fetch_as_meta(const char *issuer, char **err)
{
    char *origin = NULL, *path = NULL;
    if (split_url(issuer, &origin, &path) < 0) {
        *err = xstrdup("the authorization server is not an http(s) URL");
        return NULL;
    }
    char urls[3][4200];
    int n = 0;
    if (*path) {
        snprintf(urls[n++], sizeof(urls[0]), "%s/.well-known/oauth-authorization-server%s", origin,
                 path);
        snprintf(urls[n++], sizeof(urls[0]), "%s/.well-known/openid-configuration%s", origin, path);
        snprintf(urls[n++], sizeof(urls[0]), "%s%s/.well-known/openid-configuration", origin, path);
    } else {
        snprintf(urls[n++], sizeof(urls[0]), "%s/.well-known/oauth-authorization-server", origin);
        snprintf(urls[n++], sizeof(urls[0]), "%s/.well-known/openid-configuration", origin);
    }
    json_t *j = NULL;
    for (int i = 0; i < n && !j; i++)
        j = get_json(urls[i]);
    free(origin);
    free(path);
    if (!j) {
        size_t len = strlen(issuer) + 80;
        *err = xmalloc(len);
        snprintf(*err, len, "no authorization server metadata for %s", issuer);
        return NULL;
    }
    const char *iss = json_string_value(json_object_get(j, "issuer"));
    if (!iss || strcmp(iss, issuer) != 0) {
        size_t len = strlen(issuer) + (iss ? strlen(iss) : 0) + 120;
        *err = xmalloc(len);
        snprintf(*err, len,
                 "the authorization server metadata names issuer \"%s\", not \"%s\" "
                 "(refused, RFC 8414 section 3.3)",
                 iss ? iss : "", issuer);
        json_decref(j);
        return NULL;
    }
    return j;
}

int oa_discover(const char *server_url, const struct oa_challenge *ch, struct oa_server *out,
                char **err)
{
    memset(out, 0, sizeof(*out));
    *err = NULL;
    json_t *prm = fetch_prm(server_url, ch);
    int rc = -1;
    if (prm) {
        out->have_prm = 1;
        const char *res = json_string_value(json_object_get(prm, "resource"));
        const char *as =
            json_string_value(json_array_get(json_object_get(prm, "authorization_servers"), 0));
        if (res && !resource_covers(res, server_url)) {
            size_t n = strlen(res) + strlen(server_url) + 120;
            *err = xmalloc(n);
            snprintf(*err, n,
                     "the protected-resource metadata is for \"%s\", not for %s (refused, "
                     "RFC 9728 section 3.3)",
                     res, server_url);
            goto out;
        }
        if (!as) {
            *err = xstrdup("the protected-resource metadata names no authorization server");
            goto out;
        }
        out->resource = xstrdup(res ? res : server_url);
        json_t *ss = json_object_get(prm, "scopes_supported");
        out->scopes_supported = json_is_array(ss) ? json_incref(ss) : NULL;
        out->issuer = xstrdup(as);
        out->as_meta = fetch_as_meta(as, err);
        rc = out->as_meta ? 0 : -1;
        goto out;
    }
    /* 2025-03-26: the authorization server is the server's origin. */
    char *origin = NULL, *path = NULL;
    if (split_url(server_url, &origin, &path) < 0) {
        *err = xstrdup("the server URL is not http(s)");
        goto out;
    }
    struct buf u = {0};
    buf_printf(&u, "%s/.well-known/oauth-authorization-server", origin);
    out->as_meta = get_json(u.data);
    buf_free(&u);
    if (out->as_meta) {
        const char *iss = json_string_value(json_object_get(out->as_meta, "issuer"));
        out->issuer = iss ? xstrdup(iss) : NULL;
    } else {
        json_t *m = json_object();
        struct buf e = {0};
        static const char *const eps[][2] = {{"authorization_endpoint", "/authorize"},
                                             {"token_endpoint", "/token"},
                                             {"registration_endpoint", "/register"}};
        for (size_t i = 0; i < 3; i++) {
            buf_reset(&e);
            buf_printf(&e, "%s%s", origin, eps[i][1]);
            json_object_set_new(m, eps[i][0], json_string(e.data));
        }
        buf_free(&e);
        json_t *pk = json_array();
        json_array_append_new(pk, json_string("S256"));
        json_object_set_new(m, "code_challenge_methods_supported", pk);
        json_object_set_new(m, "x-codemcp-defaults", json_true());
        out->as_meta = m;
    }
    free(origin);
    free(path);
    rc = 0;
out:
    json_decref(prm);
    if (rc < 0 && !*err)
        *err = xstrdup("discovery failed");
    return rc;
}

void oa_server_free(struct oa_server *s)
{
    free(s->resource);
    free(s->issuer);
    json_decref(s->scopes_supported);
    json_decref(s->as_meta);
    memset(s, 0, sizeof(*s));
}

const char *oa_meta_str(const struct oa_server *s, const char *key)
{
    return json_string_value(json_object_get(s->as_meta, key));
}

int oa_meta_has(const struct oa_server *s, const char *list_key, const char *value)
{
    json_t *a = json_object_get(s->as_meta, list_key), *v;
    size_t i;
    json_array_foreach(a, i, v) if (json_is_string(v) &&
                                    strcmp(json_string_value(v), value) == 0) return 1;
    return 0;
}

/* ---- client identity ---------------------------------------------------------------------- */

/* The token endpoint auth method for a client with or without a secret. */
static const char *pick_method(const struct oa_server *srv, int have_secret)
{
    json_t *m = json_object_get(srv->as_meta, "token_endpoint_auth_methods_supported");
    if (!have_secret)
        return "none";
    if (!json_is_array(m) ||
        oa_meta_has(srv, "token_endpoint_auth_methods_supported", "client_secret_basic"))
        return "client_secret_basic"; /* RFC 8414's default */
    if (oa_meta_has(srv, "token_endpoint_auth_methods_supported", "client_secret_post"))
        return "client_secret_post";
    return oa_meta_has(srv, "token_endpoint_auth_methods_supported", "none")
               ? "none"
               : "client_secret_basic";
}

int oa_client_identity(const struct oa_settings *st, const struct oa_server *srv,
                       const char *redirect_uri, json_t **client, char **err)
{
    *client = NULL;
    if (st->client_id) {
        json_t *c = json_object();
        json_object_set_new(c, "client_id", json_string(st->client_id));
        if (st->client_secret)
            json_object_set_new(c, "client_secret", json_string(st->client_secret));
        const char *method = st->auth_method   ? st->auth_method
                             : st->private_key ? "private_key_jwt"
                                               : pick_method(srv, !!st->client_secret);
        json_object_set_new(c, "token_endpoint_auth_method", json_string(method));
        if (st->private_key) {
            json_object_set_new(c, "private_key", json_string(st->private_key));
            json_object_set_new(c, "signing_alg",
                                json_string(st->signing_alg ? st->signing_alg : "ES256"));
            const char *aud = srv->issuer ? srv->issuer : oa_meta_str(srv, "token_endpoint");
            json_object_set_new(c, "assertion_audience", json_string(aud ? aud : ""));
        }
        json_object_set_new(c, "source", json_string("configured"));
        *client = c;
        return 0;
    }
    if (st->client_metadata_url &&
        json_is_true(json_object_get(srv->as_meta, "client_id_metadata_document_supported"))) {
        json_t *c = json_object();
        json_object_set_new(c, "client_id", json_string(st->client_metadata_url));
        json_object_set_new(c, "token_endpoint_auth_method", json_string("none"));
        json_object_set_new(c, "source", json_string("cimd"));
        *client = c;
        return 0;
    }
    const char *reg = oa_meta_str(srv, "registration_endpoint");
    if (!reg || st->client_credentials) {
        *err = xstrdup(st->client_credentials
                           ? "the client_credentials grant needs oauth.clientId and clientSecret"
                           : "the authorization server offers no dynamic client registration: "
                             "set oauth.clientId (and clientSecret) for this server");
        return -1;
    }
    const char *want =
        oa_meta_has(srv, "token_endpoint_auth_methods_supported", "none") ||
                !json_object_get(srv->as_meta, "token_endpoint_auth_methods_supported")
            ? "none"
            : pick_method(srv, 1);
    json_t *body = json_pack("{s:s, s:[s], s:[s,s], s:[s], s:s, s:s}", "client_name", "codemcp",
                             "redirect_uris", redirect_uri, "grant_types", "authorization_code",
                             "refresh_token", "response_types", "code",
                             "token_endpoint_auth_method", want, "application_type", "native");
    if (st->scope)
        json_object_set_new(body, "scope", json_string(st->scope));
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    static const char *const hdr[] = {"Content-Type: application/json", "Accept: application/json",
                                      NULL};
    struct oa_resp r;
    oa_http("POST", reg, hdr, text, &r);
    free(text);
    json_t *j = r.status >= 200 && r.status < 300 && r.body ? json_loads(r.body, 0, NULL) : NULL;
    const char *id = json_string_value(json_object_get(j, "client_id"));
    if (!id) {
        size_t n = strlen(reg) + 300;
        *err = xmalloc(n);
        snprintf(*err, n, "dynamic client registration at %s failed (HTTP %ld%s%.150s)", reg,
                 r.status, r.body ? ": " : "", r.body ? r.body : "");
        json_decref(j);
        oa_resp_free(&r);
        return -1;
    }
    oa_resp_free(&r);
    json_t *c = json_object();
    json_object_set_new(c, "client_id", json_string(id));
    const char *secret = json_string_value(json_object_get(j, "client_secret"));
    if (secret)
        json_object_set_new(c, "client_secret", json_string(secret));
    const char *m = json_string_value(json_object_get(j, "token_endpoint_auth_method"));
    json_object_set_new(c, "token_endpoint_auth_method",
                        json_string(m        ? m
                                    : secret ? pick_method(srv, 1)
                                             : want));
    json_object_set_new(c, "source", json_string("registered"));
    json_decref(j);
    *client = c;
    return 0;
}
