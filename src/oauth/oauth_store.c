/* oauth_store — the token store $XDG_CONFIG_HOME/codemcp/mcp-auth.json and the "oauth"
 * settings of a server entry.
 *
 * The file is {"servers": {NAME: entry}}; an entry names the url, issuer and resource its
 * tokens were issued for (an entry whose url no longer matches the config is ignored), the
 * client identity, the token endpoint, the tokens and expires_at (seconds since the epoch).
 * Readers just read (writes are atomic renames); writers take an exclusive flock on
 * mcp-auth.json.lock, reread, change, write a 0600 temp file, fsync and rename. Holding that
 * lock across a refresh is what makes refresh single-flight across processes.
 * Must not: log entry contents (they are secrets). */
#include "oauth.h"

#include "config.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int64_t oa_now(void)
{
    return (int64_t)time(NULL);
}

const char *oa_store_path(char *buf, size_t n)
{
    char dir[4096];
    if (!cfg_config_dir(dir, sizeof(dir)))
        return NULL;
    int w = snprintf(buf, n, "%s/codemcp/mcp-auth.json", dir);
    return w > 0 && (size_t)w < n ? buf : NULL;
}

json_t *oa_store_read(void)
{
    char path[4200];
    if (!oa_store_path(path, sizeof(path)))
        return json_object();
    json_t *root = json_load_file(path, 0, NULL);
    if (!json_is_object(root) || !json_is_object(json_object_get(root, "servers"))) {
        json_decref(root);
        root = json_object();
        json_object_set_new(root, "servers", json_object());
    }
    return root;
}

json_t *oa_store_entry(json_t *store, const char *name, const char *url)
{
    json_t *e = json_object_get(json_object_get(store, "servers"), name);
    if (!json_is_object(e))
        return NULL;
    const char *u = json_string_value(json_object_get(e, "url"));
    if (url && (!u || strcmp(u, url) != 0))
        return NULL;
    return e;
}

static int mkdirs_for(const char *path)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return 0;
}

static int store_update(int (*fn)(json_t *store, void *ud), void *ud, int wait);

int oa_store_update(int (*fn)(json_t *store, void *ud), void *ud)
{
    return store_update(fn, ud, 1);
}

int oa_store_try_update(int (*fn)(json_t *store, void *ud), void *ud)
{
    return store_update(fn, ud, 0);
}

static int store_update(int (*fn)(json_t *store, void *ud), void *ud, int wait)
{
    char path[4200], lock[4300], tmp[4300];
    if (!oa_store_path(path, sizeof(path)) || mkdirs_for(path) < 0)
        return -1;
    snprintf(lock, sizeof(lock), "%s.lock", path);
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    int rc = -1, lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    json_t *store = NULL;
    if (lfd < 0)
        goto out;
    while (flock(lfd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) < 0)
        if (errno != EINTR) /* EWOULDBLOCK: someone holds it (a refresh in flight) */
            goto out;
    store = oa_store_read();
    rc = fn(store, ud);
    if (rc != 1)
        goto out;
    char *text = json_dumps(store, JSON_INDENT(2) | JSON_SORT_KEYS);
    int fd = text ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
    size_t len = text ? strlen(text) : 0;
    int ok = fd >= 0 && fchmod(fd, 0600) == 0 && write(fd, text, len) == (ssize_t)len &&
             write(fd, "\n", 1) == 1 && fsync(fd) == 0;
    if (fd >= 0 && close(fd) < 0)
        ok = 0;
    free(text);
    if (!ok || rename(tmp, path) < 0) {
        unlink(tmp);
        rc = -1;
    }
out:
    json_decref(store);
    if (lfd >= 0)
        close(lfd); /* releases the lock */
    return rc;
}

/* ---- settings --------------------------------------------------------------------------- */

static json_t *get2(json_t *o, const char *camel, const char *snake)
{
    json_t *v = json_object_get(o, camel);
    return v ? v : json_object_get(o, snake);
}

static int get_str(json_t *o, const char *camel, const char *snake, char **out, char **err)
{
    json_t *v = get2(o, camel, snake);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v)) {
        *err = xstrdup(camel);
        return -1;
    }
    char *missing = NULL;
    *out = cfg_interpolate(json_string_value(v), &missing);
    if (!*out) {
        size_t n = strlen(camel) + (missing ? strlen(missing) : 0) + 64;
        *err = xmalloc(n);
        snprintf(*err, n, "oauth.%s: variable %s is not set", camel, missing ? missing : "?");
        free(missing);
        return -1;
    }
    if (!**out) {
        free(*out);
        *out = NULL;
    }
    return 0;
}

int oa_settings_load(const struct cfg_server *s, struct oa_settings *out, char **err)
{
    memset(out, 0, sizeof(*out));
    json_t *o = s->oauth;
    if (json_is_false(o)) {
        out->disabled = 1;
        return 0;
    }
    if (!o || json_is_true(o) || json_is_null(o))
        return 0;
    if (!json_is_object(o)) {
        *err = xstrdup("\"oauth\" must be false or an object");
        return -1;
    }
    char *bad = NULL, *grant = NULL;
    if (get_str(o, "clientId", "client_id", &out->client_id, &bad) < 0 ||
        get_str(o, "clientSecret", "client_secret", &out->client_secret, &bad) < 0 ||
        get_str(o, "scope", "scope", &out->scope, &bad) < 0 ||
        get_str(o, "redirectUri", "redirect_uri", &out->redirect_uri, &bad) < 0 ||
        get_str(o, "clientMetadataUrl", "client_metadata_url", &out->client_metadata_url, &bad) <
            0 ||
        get_str(o, "tokenEndpointAuthMethod", "token_endpoint_auth_method", &out->auth_method,
                &bad) < 0 ||
        get_str(o, "privateKey", "private_key", &out->private_key, &bad) < 0 ||
        get_str(o, "signingAlgorithm", "signing_algorithm", &out->signing_alg, &bad) < 0 ||
        get_str(o, "grant", "grant_type", &grant, &bad) < 0)
        goto bad;
    if (grant && strcmp(grant, "client_credentials") == 0)
        out->client_credentials = 1;
    else if (grant && strcmp(grant, "authorization_code") != 0) {
        free(grant);
        bad = xstrdup("oauth.grant must be \"authorization_code\" or \"client_credentials\"");
        goto bad;
    }
    free(grant);
    json_t *port = get2(o, "callbackPort", "callback_port");
    if (port && !(json_is_integer(port) && json_integer_value(port) >= 0 &&
                  json_integer_value(port) <= 65535)) {
        bad = xstrdup("oauth.callbackPort must be a port number");
        goto bad;
    }
    out->callback_port = port ? (int)json_integer_value(port) : 0;
    return 0;
bad:
    if (bad && !strchr(bad, ' ')) {
        size_t n = strlen(bad) + 40;
        char *m = xmalloc(n);
        snprintf(m, n, "oauth.%s must be a string", bad);
        free(bad);
        bad = m;
    }
    *err = bad;
    oa_settings_free(out);
    return -1;
}

void oa_settings_free(struct oa_settings *s)
{
    free(s->client_id);
    free(s->client_secret);
    free(s->scope);
    free(s->redirect_uri);
    free(s->client_metadata_url);
    free(s->auth_method);
    if (s->private_key)
        memset(s->private_key, 0, strlen(s->private_key));
    free(s->private_key);
    free(s->signing_alg);
    memset(s, 0, sizeof(*s));
}
