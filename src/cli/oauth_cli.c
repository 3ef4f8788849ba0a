/* oauth_cli — `codemcp auth NAME`, `codemcp auth [--list]` and `codemcp logout NAME`.
 *
 * Its own process, so it may block: it probes the server for its challenge (unless the
 * gateway already recorded one in the store), discovers, chooses the client identity, runs
 * the authorization code flow with PKCE S256, state and RFC 8707 resource on a 127.0.0.1
 * callback (or the client-credentials grant), and writes the tokens into the store; a
 * running gateway notices the store changed and reconnects the server.
 * Must not print a token or a secret. */
#include "oauth_cli.h"

#include "admin_client.h"
#include "config.h"
#include "oauth.h"
#include "settings.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define CALLBACK_WAIT_MS (5 * 60 * 1000)

static void b64url(const unsigned char *in, size_t n, char *out)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
                     (i + 2 < n ? in[i + 2] : 0);
        out[o++] = t[v >> 18 & 63];
        out[o++] = t[v >> 12 & 63];
        if (i + 1 < n)
            out[o++] = t[v >> 6 & 63];
        if (i + 2 < n)
            out[o++] = t[v & 63];
    }
    out[o] = 0;
}

static int random_b64url(char *out, size_t nbytes)
{
    unsigned char raw[64];
    if (nbytes > sizeof(raw) || RAND_bytes(raw, (int)nbytes) != 1)
        return -1;
    b64url(raw, nbytes, out);
    return 0;
}

/* ---- the probe ----------------------------------------------------------------------------- */

/* POSTs initialize, then tools/list, without credentials; fills *ch from the first 401/403. */
static long probe(const char *url, struct oa_challenge *ch)
{
    static const char *const hdr[] = {"Content-Type: application/json",
                                      "Accept: application/json, text/event-stream",
                                      "MCP-Protocol-Version: 2025-11-25", NULL};
    static const char *const bodies[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
        "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":"
        "\"codemcp\",\"version\":\"" CODEMCP_VERSION "\"}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{}}"};
    long status = 0;
    for (size_t i = 0; i < 2; i++) {
        struct oa_resp r;
        oa_http("POST", url, hdr, bodies[i], &r);
        status = r.status;
        if (r.status == 401 || r.status == 403) {
            oa_challenge_parse(r.www_auth, ch);
            oa_resp_free(&r);
            break;
        }
        oa_resp_free(&r);
        if (!status)
            break;
    }
    return status;
}

/* ---- the loopback callback ----------------------------------------------------------------- */

static int listen_loopback(int port, int *bound)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 8) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *bound = ntohs(a.sin_port);
    return fd;
}

static int hexval(int c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* The decoded value of key in a query string, or NULL. */
static char *query_get(const char *q, const char *key)
{
    size_t k = strlen(key);
    for (const char *p = q; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
        if (strncmp(p, key, k) != 0 || p[k] != '=')
            continue;
        const char *v = p + k + 1;
        struct buf b = {0};
        for (; *v && *v != '&' && *v != ' '; v++) {
            if (*v == '%' && hexval(v[1]) >= 0 && hexval(v[2]) >= 0) {
                char c = (char)(hexval(v[1]) * 16 + hexval(v[2]));
                buf_append(&b, &c, 1);
                v += 2;
            } else {
                buf_append(&b, *v == '+' ? " " : v, 1);
            }
        }
        buf_append(&b, "", 1);
        return buf_steal(&b);
    }
    return NULL;
}

/* Waits for GET <path>?...&state=<state> on fd; returns the query string (caller frees) or
 * NULL. A request with another state (any local process can reach 127.0.0.1) is answered 400
 * and the wait goes on, so it cannot end the login. */
static char *wait_callback(int lfd, const char *path, const char *state)
{
    int64_t deadline = now_ms() + CALLBACK_WAIT_MS;
    while (now_ms() < deadline) {
        struct pollfd p = {.fd = lfd, .events = POLLIN};
        int n = poll(&p, 1, (int)(deadline - now_ms()));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        struct timeval tv = {.tv_sec = 5};
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        char req[8192];
        ssize_t got = 0, r;
        while (got < (ssize_t)sizeof(req) - 1 &&
               (r = read(c, req + got, sizeof(req) - 1 - (size_t)got)) > 0) {
            got += r;
            req[got] = 0;
            if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
                break;
        }
        req[got > 0 ? got : 0] = 0;
        size_t pl = strlen(path);
        int ours = strncmp(req, "GET ", 4) == 0 && strncmp(req + 4, path, pl) == 0 &&
                   (req[4 + pl] == '?' || req[4 + pl] == ' ');
        if (ours) {
            const char *q = req[4 + pl] == '?' ? req + 5 + pl : "";
            char *qs = xstrndup(q, strcspn(q, " \r\n"));
            char *st = query_get(qs, "state");
            ours = st && secure_streq(st, state);
            free(st);
            free(qs);
            if (!ours) {
                static const char bad[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
                                          "Connection: close\r\n\r\n";
                if (write(c, bad, sizeof(bad) - 1) < 0) {
                    /* nothing to tell a caller that went away */
                }
                close(c);
                fprintf(stderr, "codemcp: ignored a callback with another state; still waiting\n");
                continue;
            }
        }
        const char *reply =
            ours ? "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n"
                   "<html><body><h1>codemcp: authorization received</h1><p>You can close "
                   "this window.</p></body></html>"
                 : "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        if (write(c, reply, strlen(reply)) < 0) {
            /* the browser went away; the query still counts */
        }
        close(c);
        if (ours) {
            const char *q = req[4 + pl] == '?' ? req + 5 + pl : "";
            return xstrndup(q, strcspn(q, " \r\n"));
        }
    }
    return NULL;
}

static const struct settings *set; /* the command's, from main.c */

static pid_t open_browser(const char *url)
{
    const char *b = set->browser;
    const char *cmd = b && *b ? "exec $BROWSER \"$1\" >/dev/null"
                              : "command -v xdg-open >/dev/null 2>&1 && exec xdg-open \"$1\" "
                                ">/dev/null 2>&1";
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, "sh", url, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* ---- the login --------------------------------------------------------------------------- */

struct login {
    const char *name, *url;
    struct oa_settings st;
    struct oa_challenge ch;
    struct oa_server srv;
    json_t *client;
    json_t *tok;
    char *scope;
    int sent_resource;
    int step_ups;
    int have_challenge; /* ch came from the caller (the gateway's 401) */
    char *err;
};

static void add_scopes(struct buf *b, const char *list)
{
    if (!list)
        return;
    char *copy = xstrdup(list), *save = NULL;
    for (char *s = strtok_r(copy, " ", &save); s; s = strtok_r(NULL, " ", &save)) {
        int dup = 0;
        char *have = b->len ? xstrndup(b->data, b->len) : xstrdup(""), *sv2 = NULL;
        for (char *h = strtok_r(have, " ", &sv2); h && !dup; h = strtok_r(NULL, " ", &sv2))
            dup = strcmp(h, s) == 0;
        free(have);
        if (!dup) {
            if (b->len)
                buf_append(b, " ", 1);
            buf_appends(b, s);
        }
    }
    free(copy);
}

/* Scopes: configured, else the challenge's, else PRM scopes_supported, else none; plus
 * what was asked before on a step-up, plus offline_access when the server lists it. */
static void choose_scope(struct login *l, json_t *prev)
{
    struct buf b = {0};
    if (l->st.scope)
        add_scopes(&b, l->st.scope);
    else if (l->ch.scope)
        add_scopes(&b, l->ch.scope);
    else if (json_array_size(l->srv.scopes_supported)) {
        size_t i;
        json_t *v;
        json_array_foreach(l->srv.scopes_supported, i, v) add_scopes(&b, json_string_value(v));
    }
    const char *issuer = json_string_value(json_object_get(prev, "issuer"));
    if (prev && issuer && l->srv.issuer && strcmp(issuer, l->srv.issuer) == 0)
        add_scopes(&b, json_string_value(json_object_get(prev, "scope")));
    if (b.len && !l->st.client_credentials &&
        oa_meta_has(&l->srv, "scopes_supported", "offline_access"))
        add_scopes(&b, "offline_access");
    buf_append(&b, "", 1);
    l->scope = b.len > 1 ? buf_steal(&b) : NULL;
    buf_free(&b);
}

static void form_add(struct buf *f, const char *k, const char *v)
{
    if (!v)
        return;
    char *e = oa_form_escape(v);
    buf_printf(f, "%s%s=%s", f->len ? "&" : "", k, e);
    free(e);
}

/* One authorization-code round. Returns 0, -1 (err set) or 1: retry without resource. */
static int code_round(struct login *l, int lfd, const char *redirect, int no_browser)
{
    char verifier[90], challenge[64], state[48];
    unsigned char digest[SHA256_DIGEST_LENGTH];
    if (random_b64url(verifier, 48) < 0 || random_b64url(state, 24) < 0) {
        l->err = xstrdup("no randomness for PKCE");
        return -1;
    }
    SHA256((const unsigned char *)verifier, strlen(verifier), digest);
    b64url(digest, sizeof(digest), challenge);
    const char *authz = oa_meta_str(&l->srv, "authorization_endpoint");
    const char *cid = json_string_value(json_object_get(l->client, "client_id"));
    struct buf q = {0};
    form_add(&q, "response_type", "code");
    form_add(&q, "client_id", cid);
    form_add(&q, "redirect_uri", redirect);
    form_add(&q, "code_challenge", challenge);
    form_add(&q, "code_challenge_method", "S256");
    form_add(&q, "state", state);
    form_add(&q, "scope", l->scope);
    if (l->sent_resource)
        form_add(&q, "resource", l->srv.resource);
    buf_append(&q, "", 1);
    struct buf u = {0};
    buf_printf(&u, "%s%c%s", authz, strchr(authz, '?') ? '&' : '?', q.data);
    buf_free(&q);
    fprintf(stderr, "codemcp: to authorize %s, open this URL in a browser:\n\n  %s\n\n", l->name,
            u.data);
    pid_t br = no_browser ? -1 : open_browser(u.data);
    if (!no_browser)
        fprintf(stderr, "codemcp: waiting up to 5 minutes for the browser to finish...\n");
    buf_free(&u);
    char *cb = wait_callback(lfd, strchr(strchr(redirect, ':') + 3, '/'), state);
    if (br > 0)
        waitpid(br, NULL, WNOHANG);
    if (!cb) {
        l->err = xstrdup("no answer on the callback within 5 minutes");
        return -1;
    }
    char *code = query_get(cb, "code"), *st = query_get(cb, "state"), *iss = query_get(cb, "iss");
    char *error = query_get(cb, "error"), *desc = query_get(cb, "error_description");
    free(cb);
    int rc = -1;
    struct buf m = {0};
    if (!st || !secure_streq(st, state)) {
        buf_printf(&m, "the callback's state does not match (refused)");
    } else if (error) {
        if (strcmp(error, "invalid_target") == 0 && l->sent_resource)
            rc = 1;
        else
            buf_printf(&m, "authorization refused: %s%s%s", error, desc ? ": " : "",
                       desc ? desc : "");
    } else if (iss && (!l->srv.issuer || strcmp(iss, l->srv.issuer) != 0)) {
        buf_printf(&m,
                   "the authorization response names issuer \"%s\", not \"%s\" (refused, "
                   "RFC 9207)",
                   iss, l->srv.issuer ? l->srv.issuer : "");
    } else if (!iss && json_is_true(json_object_get(
                           l->srv.as_meta, "authorization_response_iss_parameter_supported"))) {
        buf_printf(&m, "the authorization response has no iss although the server "
                       "advertises it (refused, RFC 9207)");
    } else if (!code) {
        buf_printf(&m, "the callback carried no code");
    } else {
        struct buf f = {0};
        form_add(&f, "grant_type", "authorization_code");
        form_add(&f, "code", code);
        form_add(&f, "redirect_uri", redirect);
        form_add(&f, "code_verifier", verifier);
        if (l->sent_resource)
            form_add(&f, "resource", l->srv.resource);
        buf_append(&f, "", 1);
        char *oerr = NULL, *why = NULL;
        rc = oa_token_request(oa_meta_str(&l->srv, "token_endpoint"), l->client, f.data, &l->tok,
                              &oerr, &why);
        memset(f.data, 0, f.len);
        buf_free(&f);
        if (rc < 0 && oerr && strcmp(oerr, "invalid_target") == 0 && l->sent_resource)
            rc = 1;
        else if (rc < 0)
            buf_printf(&m, "%s", why);
        free(oerr);
        free(why);
    }
    if (rc < 0 && m.len) {
        buf_append(&m, "", 1);
        l->err = buf_steal(&m);
    }
    buf_free(&m);
    free(code);
    free(st);
    free(iss);
    free(error);
    free(desc);
    return rc;
}

struct save_ctx {
    struct login *l;
    const char *redirect;
};

static int save_entry(json_t *store, void *ud)
{
    struct save_ctx *c = ud;
    struct login *l = c->l;
    json_t *servers = json_object_get(store, "servers");
    json_t *prev = json_object_get(servers, l->name);
    json_t *e = json_object();
    json_object_set_new(e, "url", json_string(l->url));
    json_object_set_new(e, "resource", json_string(l->srv.resource ? l->srv.resource : l->url));
    json_object_set_new(e, "send_resource", json_boolean(l->sent_resource));
    if (l->srv.issuer)
        json_object_set_new(e, "issuer", json_string(l->srv.issuer));
    json_t *cl = json_deep_copy(l->client);
    if (c->redirect)
        json_object_set_new(cl, "redirect_uri", json_string(c->redirect));
    json_object_set_new(e, "client", cl);
    json_object_set_new(e, "token_endpoint", json_string(oa_meta_str(&l->srv, "token_endpoint")));
    const char *rev = oa_meta_str(&l->srv, "revocation_endpoint");
    if (rev)
        json_object_set_new(e, "revocation_endpoint", json_string(rev));
    json_object_set(e, "access_token", json_object_get(l->tok, "access_token"));
    json_t *rt = json_object_get(l->tok, "refresh_token");
    if (json_is_string(rt))
        json_object_set(e, "refresh_token", rt);
    json_t *exp = json_object_get(l->tok, "expires_in");
    if (json_is_integer(exp))
        json_object_set_new(e, "expires_at", json_integer(oa_now() + json_integer_value(exp)));
    if (l->scope)
        json_object_set_new(e, "scope", json_string(l->scope));
    if (l->st.client_credentials)
        json_object_set_new(e, "grant", json_string("client_credentials"));
    json_object_set_new(e, "obtained_at", json_integer(oa_now()));
    json_object_set_new(e, "generation",
                        json_integer(json_integer_value(json_object_get(prev, "generation")) + 1));
    json_object_set_new(e, "step_ups", json_integer(l->step_ups));
    json_object_set_new(servers, l->name, e);
    return 1;
}

static int login(struct login *l, int no_browser)
{
    json_t *store = oa_store_read();
    json_t *prev = oa_store_entry(store, l->name, l->url);
    json_t *pch = json_object_get(prev, "challenge");
    if (l->have_challenge) {
        l->step_ups = (int)json_integer_value(json_object_get(prev, "step_ups"));
    } else if (json_is_object(pch)) { /* what the gateway saw last (a 401, or a 403 step-up) */
        const char *rm = json_string_value(json_object_get(pch, "resource_metadata"));
        const char *sc = json_string_value(json_object_get(pch, "scope"));
        l->ch.resource_metadata = rm ? xstrdup(rm) : NULL;
        l->ch.scope = sc ? xstrdup(sc) : NULL;
        l->step_ups = (int)json_integer_value(json_object_get(prev, "step_ups"));
    } else {
        long st = probe(l->url, &l->ch);
        if (!st)
            fprintf(stderr, "codemcp: warning: %s did not answer; discovering anyway\n", l->url);
    }
    int rc = -1, lfd = -1;
    char redirect[300] = "";
    if (oa_discover(l->url, &l->ch, &l->srv, &l->err) < 0)
        goto out;
    if (!oa_meta_str(&l->srv, "token_endpoint") ||
        (!l->st.client_credentials && !oa_meta_str(&l->srv, "authorization_endpoint"))) {
        l->err = xstrdup("the authorization server metadata lacks its endpoints");
        goto out;
    }
    l->sent_resource = l->srv.have_prm && !json_is_false(json_object_get(prev, "send_resource"));
    choose_scope(l, prev);
    if (l->st.client_credentials) {
        if (oa_client_identity(&l->st, &l->srv, NULL, &l->client, &l->err) < 0)
            goto out;
        for (int attempt = 0; attempt < 2; attempt++) {
            struct buf f = {0};
            form_add(&f, "grant_type", "client_credentials");
            form_add(&f, "scope", l->scope);
            if (l->sent_resource)
                form_add(&f, "resource", l->srv.resource);
            buf_append(&f, "", 1);
            char *oerr = NULL;
            free(l->err);
            l->err = NULL;
            rc = oa_token_request(oa_meta_str(&l->srv, "token_endpoint"), l->client, f.data,
                                  &l->tok, &oerr, &l->err);
            buf_free(&f);
            int retry = rc < 0 && oerr && strcmp(oerr, "invalid_target") == 0 && l->sent_resource;
            free(oerr);
            if (!retry)
                break;
            l->sent_resource = 0;
        }
        goto save;
    }
    if (l->srv.as_meta && !oa_meta_has(&l->srv, "code_challenge_methods_supported", "S256")) {
        l->err = xstrdup("the authorization server does not support PKCE S256 (refused)");
        goto out;
    }
    int port = 0;
    const char *path = "/callback";
    if (l->st.redirect_uri) {
        const char *p = strstr(l->st.redirect_uri, "://127.0.0.1:");
        if (!p || strncmp(l->st.redirect_uri, "http", 4) != 0) {
            l->err = xstrdup("oauth.redirectUri must be http://127.0.0.1:PORT/PATH");
            goto out;
        }
        port = atoi(p + 13);
        path = strchr(p + 13, '/') ? strchr(p + 13, '/') : "/";
    } else {
        port = l->st.callback_port;
    }
    int bound = 0;
    if ((lfd = listen_loopback(port, &bound)) < 0) {
        l->err = xmalloc(100);
        snprintf(l->err, 100, "cannot listen on 127.0.0.1:%d for the callback", port);
        goto out;
    }
    snprintf(redirect, sizeof(redirect), "http://127.0.0.1:%d%s", bound, path);
    json_t *pcl = json_object_get(prev, "client");
    const char *pis = json_string_value(json_object_get(prev, "issuer"));
    const char *pru = json_string_value(json_object_get(pcl, "redirect_uri"));
    const char *src = json_string_value(json_object_get(pcl, "source"));
    if (!l->st.client_id && src && strcmp(src, "registered") == 0 && pis && l->srv.issuer &&
        strcmp(pis, l->srv.issuer) == 0 && pru && strcmp(pru, redirect) == 0)
        l->client = json_incref(pcl); /* same issuer, same redirect: no second registration */
    else if (oa_client_identity(&l->st, &l->srv, redirect, &l->client, &l->err) < 0)
        goto out;
    rc = code_round(l, lfd, redirect, no_browser);
    if (rc == 1) {
        fprintf(stderr, "codemcp: the server rejected the resource parameter; trying without\n");
        l->sent_resource = 0;
        rc = code_round(l, lfd, redirect, no_browser);
    }
save:
    if (rc == 0) {
        struct save_ctx sc = {l, redirect[0] ? redirect : NULL};
        if (oa_store_update(save_entry, &sc) < 0) {
            l->err = xstrdup("cannot write the token store");
            rc = -1;
        }
    }
out:
    if (lfd >= 0)
        close(lfd);
    json_decref(store);
    return rc == 0 ? 0 : -1;
}

int oa_login_client_credentials(const char *name, const char *url, struct oa_settings *st,
                                const char *www_auth, char **err)
{
    struct login l = {.name = name, .url = url, .st = *st, .have_challenge = 1};
    memset(st, 0, sizeof(*st)); /* ours now */
    oa_challenge_parse(www_auth, &l.ch);
    int rc = l.st.client_credentials ? login(&l, 1) : -1;
    *err = l.err ? l.err : rc < 0 ? xstrdup("not a client_credentials server") : NULL;
    free(l.scope);
    json_decref(l.client);
    json_decref(l.tok);
    oa_server_free(&l.srv);
    oa_challenge_free(&l.ch);
    oa_settings_free(&l.st);
    return rc;
}

/* ---- commands ----------------------------------------------------------------------------- */

static int load_cfg(const char *config_path, struct cfg *c)
{
    char *err = NULL;
    if (cfg_load(config_path, c, &err) < 0) {
        fprintf(stderr, "codemcp: %s\n", err ? err : "cannot load the config");
        free(err);
        return -1;
    }
    return 0;
}

static const struct cfg_server *remote(const struct cfg *c, const char *name)
{
    const struct cfg_server *s = cfg_find(c, name);
    if (!s || s->type != CFG_REMOTE || !s->url) {
        fprintf(stderr, "codemcp: no usable remote server '%s' in %s\n", name,
                c->path ? c->path : "the config");
        return NULL;
    }
    return s;
}

static const char *state_of(const struct cfg_server *s, json_t *store, char *buf, size_t n)
{
    if (json_is_false(s->oauth))
        return "disabled (oauth: false)";
    for (char **h = s->headers; h && *h; h++)
        if (strncasecmp(*h, "Authorization:", 14) == 0)
            return "header (Authorization configured)";
    json_t *e = oa_store_entry(store, s->name, s->url);
    json_t *ch = json_object_get(e, "challenge");
    if (json_is_true(json_object_get(ch, "gave_up"))) {
        snprintf(buf, n, "forbidden (403 insufficient_scope \"%s\" after %d authorizations)",
                 json_string_value(json_object_get(ch, "scope")) ?: "",
                 (int)json_integer_value(json_object_get(e, "step_ups")));
        return buf;
    }
    if (!e || !json_is_string(json_object_get(e, "access_token"))) {
        if (json_is_object(json_object_get(e, "challenge")) || e) {
            snprintf(buf, n, "needs_auth (Run: codemcp auth %s)", s->name);
            return buf;
        }
        return "not authenticated";
    }
    if (json_is_object(json_object_get(e, "challenge"))) {
        snprintf(buf, n, "needs_auth (Run: codemcp auth %s)", s->name);
        return buf;
    }
    json_t *exp = json_object_get(e, "expires_at");
    int64_t left = json_is_integer(exp) ? json_integer_value(exp) - oa_now() : 0;
    int refresh = json_is_string(json_object_get(e, "refresh_token"));
    if (json_is_integer(exp) && left <= 0)
        snprintf(buf, n, "expired%s", refresh ? " (refreshes on use)" : "");
    else if (json_is_integer(exp))
        snprintf(buf, n, "authenticated (expires in %lld s%s)", (long long)left,
                 refresh ? ", refreshable" : "");
    else
        snprintf(buf, n, "authenticated");
    return buf;
}

static int list_all(const struct cfg *c)
{
    json_t *store = oa_store_read();
    printf("%-22s %-50s %s\n", "NAME", "URL", "AUTH");
    for (size_t i = 0; i < c->n_servers; i++) {
        const struct cfg_server *s = &c->servers[i];
        if (s->type != CFG_REMOTE || !s->url)
            continue;
        char buf[200];
        printf("%-22s %-50s %s\n", s->name, s->url, state_of(s, store, buf, sizeof(buf)));
    }
    json_decref(store);
    return 0;
}

/* Best effort: the running gateway of this config (admin socket) reconnects NAME now; its
 * store watcher would within a second anyway (and covers every gateway). */
static void tell_gateway(const struct cfg *c, const char *name)
{
    char why[512];
    json_t *inst = admc_select(set->admin_socket, NULL, why, sizeof(why));
    const char *sock = json_string_value(json_object_get(inst, "socket"));
    const char *conf = json_string_value(json_object_get(inst, "config"));
    if (sock && conf && c->path && strcmp(conf, c->path) == 0)
        json_decref(
            admc_call(sock, "enable", json_pack("{s:s}", "name", name), 3000, why, sizeof(why)));
    json_decref(inst);
}

static void auth_usage(FILE *f)
{
    fputs("usage: codemcp auth [NAME [--no-browser] | --list]\n"
          "\n"
          "log in to remote server NAME with OAuth 2.1: prints the URL, opens $BROWSER (or\n"
          "xdg-open) and waits up to 5 minutes for the redirect on loopback; the running\n"
          "gateway reconnects the server. Without NAME (or with --list): every remote\n"
          "server's auth state.\n"
          "\n"
          "options:\n"
          "      --no-browser   only print the URL (headless machines)\n"
          "      --list         every remote server's auth state\n"
          "  -h, --help         this help\n",
          f);
}

static void logout_usage(FILE *f)
{
    fputs("usage: codemcp logout NAME\n"
          "\n"
          "revoke server NAME's OAuth tokens (RFC 7009 when the server offers it), delete\n"
          "them from the token store and disconnect the server in the running gateway.\n"
          "\n"
          "options:\n"
          "  -h, --help         this help\n",
          f);
}

int oauth_auth_main(const struct settings *settings, int argc, char **argv, const char *config_path)
{
    set = settings;
    const char *name = NULL;
    int no_browser = 0, list = 0;
    if (args_ask_help(argc, argv)) {
        auth_usage(stdout);
        return 0;
    }
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--no-browser") == 0)
            no_browser = 1;
        else if (strcmp(argv[i], "--list") == 0)
            list = 1;
        else if (argv[i][0] == '-' || name) {
            auth_usage(stderr);
            return 2;
        } else
            name = argv[i];
    }
    struct cfg c;
    if (load_cfg(config_path, &c) < 0)
        return 1;
    int rc = 0;
    if (list || !name) {
        rc = list_all(&c);
        goto out;
    }
    const struct cfg_server *s = remote(&c, name);
    if (!s) {
        rc = 1;
        goto out;
    }
    struct login l = {.name = s->name, .url = s->url};
    char *err = NULL;
    if (oa_settings_load(s, &l.st, &err) < 0 || l.st.disabled) {
        fprintf(stderr, "codemcp: %s: %s\n", name, err ? err : "OAuth is off (\"oauth\": false)");
        free(err);
        rc = 1;
        goto out;
    }
    signal(SIGPIPE, SIG_IGN);
    if (login(&l, no_browser) < 0) {
        fprintf(stderr, "codemcp: %s: %s\n", name, l.err ? l.err : "authorization failed");
        rc = 1;
    } else {
        fprintf(stderr, "codemcp: %s: authorized; a running gateway reconnects it by itself\n",
                name);
        tell_gateway(&c, name);
    }
    free(l.err);
    free(l.scope);
    json_decref(l.client);
    json_decref(l.tok);
    oa_server_free(&l.srv);
    oa_challenge_free(&l.ch);
    oa_settings_free(&l.st);
out:
    cfg_free(&c);
    return rc;
}

static int drop_entry(json_t *store, void *ud)
{
    json_t *servers = json_object_get(store, "servers");
    if (!json_object_get(servers, ud))
        return 0;
    json_object_del(servers, ud);
    return 1;
}

int oauth_logout_main(const struct settings *settings, int argc, char **argv,
                      const char *config_path)
{
    set = settings;
    if (args_ask_help(argc, argv)) {
        logout_usage(stdout);
        return 0;
    }
    if (argc != 1 || argv[0][0] == '-') {
        logout_usage(stderr);
        return 2;
    }
    struct cfg c;
    if (load_cfg(config_path, &c) < 0)
        return 1;
    const char *name = argv[0];
    json_t *store = oa_store_read();
    json_t *e = json_object_get(json_object_get(store, "servers"), name);
    if (!e && !cfg_find(&c, name)) {
        fprintf(stderr, "codemcp: no server '%s'\n", name);
        json_decref(store);
        cfg_free(&c);
        return 1;
    }
    const char *rev = json_string_value(json_object_get(e, "revocation_endpoint"));
    json_t *client = json_object_get(e, "client");
    if (rev && client) {
        oa_revoke(rev, client, json_string_value(json_object_get(e, "refresh_token")),
                  "refresh_token");
        oa_revoke(rev, client, json_string_value(json_object_get(e, "access_token")),
                  "access_token");
    }
    int rc = oa_store_update(drop_entry, (void *)name);
    json_decref(store);
    cfg_free(&c);
    if (rc < 0) {
        fprintf(stderr, "codemcp: cannot write the token store\n");
        return 1;
    }
    fprintf(stderr, "codemcp: %s: %s\n", name,
            rc == 1 ? "credentials removed; a running gateway disconnects it"
                    : "no stored credentials");
    return 0;
}
