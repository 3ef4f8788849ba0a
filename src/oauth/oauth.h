/* oauth — OAuth 2.1 for remote upstreams: the pieces shared by the `codemcp auth`
 * command (its own process, blocking libcurl) and the gateway (which only ever runs these
 * blocking calls on its own helper threads, never on the loop).
 *
 * oauth_store.c: the token store, $XDG_CONFIG_HOME/codemcp/mcp-auth.json (0600), one entry
 *   per server name holding the issuer + resource it was issued for; every change is a
 *   compare-and-swap under an flock on mcp-auth.json.lock, written to a temp file + rename.
 * oauth_disc.c: blocking HTTP, WWW-Authenticate parsing, RFC 9728 / RFC 8414 / OpenID
 *   discovery with the 2025-03-26 fallbacks, client identity (configured, CIMD, RFC 7591).
 * oauth_flow.c: PKCE, the loopback callback, the browser, the token endpoint (code, refresh,
 *   client credentials), RFC 7009 revocation.
 * oauth_cli.c: `codemcp auth [NAME|--list]` and `codemcp logout NAME`.
 * oauth_gw.c: the gateway's side (oauth_gw.h).
 *
 * Nothing here logs a token or a secret. */
#ifndef CODEMCP_OAUTH_H
#define CODEMCP_OAUTH_H

#include <jansson.h>
#include <stdint.h>

#include "config.h"

/* ---- settings from the server's "oauth" block (camelCase and snake_case) ---- */
struct oa_settings {
    int disabled;              /* "oauth": false */
    char *client_id;           /* interpolated; NULL when not configured */
    char *client_secret;       /* interpolated; NULL when not configured */
    char *scope;               /* configured scope, or NULL */
    int callback_port;         /* 0: ephemeral */
    char *redirect_uri;        /* configured redirect URI, or NULL */
    char *client_metadata_url; /* CIMD document URL, or NULL */
    char *auth_method;         /* configured token endpoint auth method, or NULL */
    int client_credentials;    /* "grant": "client_credentials" */
    char *private_key;         /* PEM for private_key_jwt (interpolated), or NULL */
    char *signing_alg;         /* "ES256" (default) or "RS256" */
};
/* Reads s->oauth; *err (caller frees) names a bad value. 0 / -1. */
int oa_settings_load(const struct cfg_server *s, struct oa_settings *out, char **err);
void oa_settings_free(struct oa_settings *s);

/* ---- blocking HTTP (libcurl easy) ---- */
struct oa_resp {
    long status; /* 0: no response */
    char *body;  /* NUL-terminated, or NULL */
    char *www_auth;
    char *location;
    char error[256];
};
/* headers: NULL-terminated "Name: value" lines or NULL; body NULL for GET. 0 / -1. */
int oa_http(const char *method, const char *url, const char *const *headers, const char *body,
            struct oa_resp *r);
void oa_resp_free(struct oa_resp *r);
/* application/x-www-form-urlencoded value escape; caller frees. */
char *oa_form_escape(const char *s);

/* ---- WWW-Authenticate (the Bearer challenge) ---- */
struct oa_challenge {
    char *resource_metadata, *scope, *error;
};
void oa_challenge_parse(const char *header, struct oa_challenge *c);
void oa_challenge_free(struct oa_challenge *c);

/* ---- discovery ---- */
struct oa_server {
    char *resource;           /* PRM "resource" (exactly as published), else the server URL */
    int have_prm;             /* protected-resource metadata was found */
    json_t *scopes_supported; /* PRM scopes_supported, or NULL */
    char *issuer;             /* AS issuer ("" never: NULL when synthesised 2025-03-26) */
    json_t *as_meta;          /* AS metadata (synthesised defaults in the endpoint fallback) */
};
/* Discovers everything for server_url given the challenge of its 401 (may be NULL).
 * 0, or -1 with *err (caller frees). */
int oa_discover(const char *server_url, const struct oa_challenge *ch, struct oa_server *out,
                char **err);
void oa_server_free(struct oa_server *s);
const char *oa_meta_str(const struct oa_server *s, const char *key);
int oa_meta_has(const struct oa_server *s, const char *list_key, const char *value);

/* Client identity in the 2026-07-28 order: configured, CIMD when advertised and a document
 * URL is configured, else RFC 7591 registration. Fills *client (an object with client_id,
 * client_secret?, token_endpoint_auth_method). 0 / -1 (*err). */
int oa_client_identity(const struct oa_settings *st, const struct oa_server *srv,
                       const char *redirect_uri, json_t **client, char **err);

/* ---- token endpoint ---- */
/* POSTs the form (already encoded pairs joined by '&', without client auth) with the
 * client's authentication. On 2xx *tok is the token response and 0 returned; otherwise -1,
 * *oauth_error the server's "error" code when it sent one (caller frees), *err the reason. */
int oa_token_request(const char *token_endpoint, json_t *client, const char *form, json_t **tok,
                     char **oauth_error, char **err);
/* Best-effort RFC 7009 revocation. */
void oa_revoke(const char *endpoint, json_t *client, const char *token, const char *hint);

/* ---- the store ---- */
/* Path of mcp-auth.json in buf, or NULL. */
const char *oa_store_path(char *buf, size_t n);
/* The whole store (a new object; {} when missing or unreadable). */
json_t *oa_store_read(void);
/* Runs fn under the store's exclusive lock with the current content; when fn returns 1 the
 * (modified) content is written back atomically. Returns fn's result, or -1 when the store
 * cannot be locked or written. */
int oa_store_update(int (*fn)(json_t *store, void *ud), void *ud);
/* The same without waiting: -1 at once when another thread or process holds the lock (the
 * gateway's loop uses it: a refresh elsewhere holds the lock across its HTTP request). */
int oa_store_try_update(int (*fn)(json_t *store, void *ud), void *ud);
/* The entry for a server (borrowed from store), or NULL; ignores an entry whose url differs. */
json_t *oa_store_entry(json_t *store, const char *name, const char *url);

/* The whole client-credentials login without a person (oauth_cli.c; blocking: the gateway
 * runs it on a helper thread): discovery from the 401's challenge, the token request, the
 * store. Takes over *st. 0, or -1 with *err (caller frees). */
int oa_login_client_credentials(const char *name, const char *url, struct oa_settings *st,
                                const char *www_auth, char **err);

/* Seconds since the epoch. */
int64_t oa_now(void);

#endif
