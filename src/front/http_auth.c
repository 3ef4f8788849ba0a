/* http_auth — see http_auth.h. Owns the token set and the 0600 token files; it never writes
 * a token to the log (only to stderr in the start-up snippet when stderr is a terminal, and
 * to stdout for --print-token), and never decides anything about sessions (serve_http.c does). */
#include "http_auth.h"
#include "http_auth_fleet.h"
#include "config.h"
#include "log.h"
#include "settings.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define MODULE     "http"
#define MAX_NAME   64
#define MIN_TOKEN  16
#define MAX_TOKEN  512
#define DIGEST_LEN 32

struct principal {
    char name[MAX_NAME];
    unsigned char digest[DIGEST_LEN];
};

static struct {
    int none;
    struct principal *p;
    size_t n;
    char *single;          /* the one token when there is exactly one source token (for snippets) */
    const char *env_token; /* CODEMCP_HTTP_TOKEN (the environment's), read again on SIGHUP */
    char source[PATH_MAX];
    char tokens_file[PATH_MAX];
} st;

static void digest(const char *token, size_t len, unsigned char out[DIGEST_LEN])
{
    unsigned int n = DIGEST_LEN;
    if (!EVP_Digest(token, len, out, &n, EVP_sha256(), NULL))
        memset(out, 0, DIGEST_LEN); /* never matches a real digest by chance */
}

/* RFC 6750 b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=" */
static int b64token_ok(const char *t, size_t n)
{
    size_t i = 0;
    while (i < n && (strchr("-._~+/", t[i]) || (t[i] >= '0' && t[i] <= '9') ||
                     ((t[i] | 32) >= 'a' && (t[i] | 32) <= 'z')))
        i++;
    if (i == 0)
        return 0;
    while (i < n && t[i] == '=')
        i++;
    return i == n;
}

static int name_ok(const char *s, size_t n)
{
    if (n == 0 || n >= MAX_NAME)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!strchr("-._@", s[i]) && !(s[i] >= '0' && s[i] <= '9') &&
            !((s[i] | 32) >= 'a' && (s[i] | 32) <= 'z'))
            return 0;
    return 1;
}

static void add(struct principal **p, size_t *n, const char *name, const char *token, size_t len)
{
    *p = xrealloc(*p, (*n + 1) * sizeof(**p));
    snprintf((*p)[*n].name, MAX_NAME, "%s", name);
    digest(token, len, (*p)[*n].digest);
    (*n)++;
}

/* Opens a secret file for reading: a regular file of ours, not readable by others. Returns
 * its text (caller frees) or NULL with a message in err. */
static char *read_private(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat sb;
    char *text = NULL;
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s is not a regular file", path);
    } else if (sb.st_uid != geteuid()) {
        snprintf(err, errlen, "%s belongs to another user (uid %d): refusing to use its tokens",
                 path, (int)sb.st_uid);
    } else if (sb.st_mode & 077) {
        snprintf(err, errlen, "%s is readable by other users (mode %03o): chmod 600 %s", path,
                 (unsigned)(sb.st_mode & 0777), path);
    } else if (sb.st_size > (1 << 20)) {
        snprintf(err, errlen, "%s is larger than 1 MiB", path);
    } else {
        text = xmalloc((size_t)sb.st_size + 1);
        ssize_t got = read(fd, text, (size_t)sb.st_size);
        if (got < 0) {
            snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
            free(text);
            text = NULL;
        } else {
            text[got] = '\0';
        }
    }
    close(fd);
    return text;
}

/* Parses "name token" lines ('#' comments, blank lines). 0 or -1 with err naming the line. */
static int parse_tokens(const char *path, const char *text, struct principal **p, size_t *n,
                        char *err, size_t errlen)
{
    int line_no = 0;
    for (const char *line = text; *line;) {
        size_t len = strcspn(line, "\n");
        line_no++;
        char buf[MAX_NAME + MAX_TOKEN + 8];
        const char *next = line + len + (line[len] == '\n');
        if (len >= sizeof(buf)) {
            snprintf(err, errlen, "%s line %d is too long", path, line_no);
            return -1;
        }
        memcpy(buf, line, len);
        buf[len] = '\0';
        line = next;
        char *s = buf + strspn(buf, " \t\r");
        if (!*s || *s == '#')
            continue;
        size_t nl = strcspn(s, " \t");
        char *t = s + nl + strspn(s + nl, " \t");
        size_t tl = strcspn(t, " \t\r");
        if (!name_ok(s, nl) || tl < MIN_TOKEN || tl > MAX_TOKEN || !b64token_ok(t, tl) ||
            t[tl + strspn(t + tl, " \t\r")]) {
            snprintf(err, errlen,
                     "%s line %d: expected \"name token\" (name: letters, digits, - . _ @; token: "
                     "%d to %d characters of A-Z a-z 0-9 - . _ ~ + /)",
                     path, line_no, MIN_TOKEN, MAX_TOKEN);
            return -1;
        }
        s[nl] = '\0';
        unsigned char d[DIGEST_LEN];
        digest(t, tl, d);
        for (size_t i = 0; i < *n; i++)
            if (CRYPTO_memcmp((*p)[i].digest, d, DIGEST_LEN) == 0 || strcmp((*p)[i].name, s) == 0) {
                snprintf(err, errlen, "%s line %d: principal '%s' or its token is listed twice",
                         path, line_no, s);
                return -1;
            }
        add(p, n, s, t, tl);
    }
    return 0;
}

/* The generated token's file, in the config directory every other codemcp file uses. */
static int token_file_path(char *out, size_t n)
{
    char dir[PATH_MAX];
    if (!cfg_config_dir(dir, sizeof(dir)))
        return -1;
    return snprintf(out, n, "%s/codemcp/http-token", dir) < (int)n ? 0 : -1;
}

static int mkdirs(char *path) /* creates every parent of path (modified, restored) 0700 */
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int r = mkdir(path, 0700);
        int e = errno;
        *p = '/';
        if (r < 0 && e != EEXIST)
            return -1;
    }
    return 0;
}

/* Reads the generated token, creating it (O_EXCL, 0600) on first use. Caller frees. */
static char *owner_token(const char *path, char *err, size_t errlen)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    if (mkdirs(dir) < 0) {
        snprintf(err, errlen, "cannot create the directory of %s: %s", path, strerror(errno));
        return NULL;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
        char tok[65];
        if (random_hex(tok, 32) < 0 || write(fd, tok, 64) != 64 || write(fd, "\n", 1) != 1 ||
            fsync(fd) < 0) {
            snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
            close(fd);
            unlink(path);
            return NULL;
        }
        close(fd);
        fprintf(stderr, "codemcp: created a new HTTP token in %s (mode 0600)\n", path);
    } else if (errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return NULL;
    }
    char *text = read_private(path, err, errlen);
    if (!text)
        return NULL;
    text[strcspn(text, " \t\r\n")] = '\0';
    if (strlen(text) < MIN_TOKEN || !b64token_ok(text, strlen(text))) {
        snprintf(err, errlen,
                 "%s does not hold a token of at least %d characters (delete it to "
                 "generate a new one)",
                 path, MIN_TOKEN);
        free(text);
        return NULL;
    }
    return text;
}

static int load_tokens_file(struct principal **p, size_t *n, char *err, size_t errlen)
{
    char *text = read_private(st.tokens_file, err, errlen);
    if (!text)
        return -1;
    int rc = parse_tokens(st.tokens_file, text, p, n, err, errlen);
    explicit_bzero(text, strlen(text));
    free(text);
    return rc;
}

/* Tells the fleet (http_auth_fleet.h) which tokens this replica holds now. */
static void share_local(int reload)
{
    const char **names = xcalloc(st.n ? st.n : 1, sizeof(*names));
    unsigned char(*digests)[HAF_DIGEST_LEN] = xcalloc(st.n ? st.n : 1, sizeof(*digests));
    for (size_t i = 0; i < st.n; i++) {
        names[i] = st.p[i].name;
        memcpy(digests[i], st.p[i].digest, DIGEST_LEN);
    }
    haf_local(names, (const unsigned char(*)[HAF_DIGEST_LEN])digests, st.n, reload);
    free(names);
    free(digests);
}

int hauth_init(const struct settings *s, int loopback, int no_auth)
{
    const char *mode = s->http_auth;
    char err[PATH_MAX + 200];
    memset(&st, 0, sizeof(st));
    if (mode && *mode && strcmp(mode, "none") && strcmp(mode, "token")) {
        fprintf(stderr,
                "codemcp: CODEMCP_HTTP_AUTH must be 'token' (default) or 'none', got '%s'\n", mode);
        return -1;
    }
    if (no_auth || (mode && strcmp(mode, "none") == 0)) {
        if (!loopback) {
            fprintf(stderr, "codemcp: refusing to serve without authentication on a non-loopback "
                            "address (--no-auth / CODEMCP_HTTP_AUTH=none need -H 127.0.0.1)\n");
            return -1;
        }
        st.none = 1;
        log_warn(MODULE, "authentication is OFF (--no-auth): every local user and process can "
                         "run Python as this user through the HTTP front");
        return 0;
    }
    const char *env_token = s->http_token, *file = s->http_tokens_file;
    st.env_token = env_token;
    if (env_token && *env_token) {
        size_t len = strlen(env_token);
        if (!b64token_ok(env_token, len)) {
            fprintf(stderr, "codemcp: CODEMCP_HTTP_TOKEN may only hold A-Z a-z 0-9 - . _ ~ + / "
                            "(and trailing =)\n");
            return -1;
        }
        if (len < MIN_TOKEN)
            log_warn(MODULE,
                     "CODEMCP_HTTP_TOKEN is only %zu characters: anyone who can reach the "
                     "port can guess it faster than a generated one (%d+ recommended)",
                     len, MIN_TOKEN);
        add(&st.p, &st.n, "default", env_token, len);
        st.single = xstrdup(env_token);
        snprintf(st.source, sizeof(st.source), "CODEMCP_HTTP_TOKEN");
    }
    if (file && *file) {
        snprintf(st.tokens_file, sizeof(st.tokens_file), "%s", file);
        if (load_tokens_file(&st.p, &st.n, err, sizeof(err)) < 0) {
            fprintf(stderr, "codemcp: %s\n", err);
            return -1;
        }
        if (!st.source[0])
            snprintf(st.source, sizeof(st.source), "%s", file);
        if (st.n != 1 || !st.single) {
            free(st.single);
            st.single = NULL;
        }
    }
    if (!st.n && !st.tokens_file[0]) {
        char path[PATH_MAX];
        if (token_file_path(path, sizeof(path)) < 0) {
            fprintf(stderr, "codemcp: neither XDG_CONFIG_HOME nor HOME is set: set "
                            "CODEMCP_HTTP_TOKEN or CODEMCP_HTTP_TOKENS_FILE\n");
            return -1;
        }
        char *tok = owner_token(path, err, sizeof(err));
        if (!tok) {
            fprintf(stderr, "codemcp: %s\n", err);
            return -1;
        }
        add(&st.p, &st.n, "owner", tok, strlen(tok));
        st.single = tok;
        snprintf(st.source, sizeof(st.source), "%s", path);
    }
    log_info(MODULE, "authentication: bearer token (%zu principal%s, from %s)", st.n,
             st.n == 1 ? "" : "s", st.source);
    share_local(0);
    return 0;
}

int hauth_required(void)
{
    return !st.none;
}

const char *hauth_check(const char *auth, const char **why)
{
    *why = "no Authorization header";
    if (st.none)
        return "";
    if (!auth)
        return NULL;
    *why = "the Authorization header is not a Bearer credential";
    if (strncasecmp(auth, "Bearer ", 7) != 0)
        return NULL;
    const char *t = auth + 7;
    while (*t == ' ')
        t++;
    size_t len = strlen(t);
    while (len && (t[len - 1] == ' ' || t[len - 1] == '\t'))
        len--;
    if (!len || len > MAX_TOKEN || !b64token_ok(t, len))
        return NULL;
    *why = "the bearer token is not valid for this gateway";
    unsigned char d[DIGEST_LEN];
    digest(t, len, d);
    const char *found = NULL;
    for (size_t i = 0; i < st.n; i++) /* no early exit: every principal is compared */
        if (CRYPTO_memcmp(st.p[i].digest, d, DIGEST_LEN) == 0)
            found = st.p[i].name;
    int revoked = 0;
    const char *fleet = haf_check(d, &revoked); /* the other replicas' tokens (CODEMCP_STATE) */
    if (revoked) {
        *why = "the bearer token was revoked";
        return NULL;
    }
    return found ? found : fleet;
}

void hauth_reload(void)
{
    if (st.none || !st.tokens_file[0])
        return;
    struct principal *p = NULL;
    size_t n = 0;
    char err[PATH_MAX + 200];
    if (st.env_token && *st.env_token)
        add(&p, &n, "default", st.env_token, strlen(st.env_token));
    if (load_tokens_file(&p, &n, err, sizeof(err)) < 0) {
        log_error(MODULE, "SIGHUP: %s; keeping the %zu principals loaded before", err, st.n);
        free(p);
        return;
    }
    free(st.p);
    st.p = p;
    st.n = n;
    log_info(MODULE, "SIGHUP: %zu principals loaded from %s", n, st.tokens_file);
    share_local(1);
}

void hauth_print_snippet(const char *url)
{
    if (st.none)
        return;
    /* The token itself only on a terminal: stderr of a service goes to a journal or a file,
     * which others may read; `--print-token` prints it on request. */
    const char *tok = st.single && isatty(STDERR_FILENO) ? st.single : "<token>";
    fprintf(stderr,
            "codemcp: clients must send \"Authorization: Bearer <token>\" (token: %s; "
            "`codemcp start --print-token` prints it). Ready to paste:\n"
            "  opencode.json:   \"codemcp\": {\"type\": \"remote\", \"url\": \"%s\", "
            "\"headers\": {\"Authorization\": \"Bearer %s\"}}\n"
            "  Claude Code:     claude mcp add --transport http codemcp %s --header "
            "\"Authorization: Bearer %s\"\n"
            "  Claude Desktop:  \"codemcp\": {\"command\": \"npx\", \"args\": [\"mcp-remote\", "
            "\"%s\", \"--header\", \"Authorization: Bearer %s\"]}\n",
            st.source, url, tok, url, tok, url, tok);
}

int hauth_print_token(const struct settings *s)
{
    const char *env_token = s->http_token;
    if (env_token && *env_token) {
        printf("%s\n", env_token);
        return 0;
    }
    if (s->http_tokens_file && *s->http_tokens_file) {
        fprintf(stderr,
                "codemcp: tokens come from CODEMCP_HTTP_TOKENS_FILE (%s): one per "
                "principal, see that file\n",
                s->http_tokens_file);
        return 1;
    }
    char path[PATH_MAX], err[PATH_MAX + 200];
    if (token_file_path(path, sizeof(path)) < 0) {
        fprintf(stderr, "codemcp: neither XDG_CONFIG_HOME nor HOME is set\n");
        return 1;
    }
    char *tok = owner_token(path, err, sizeof(err));
    if (!tok) {
        fprintf(stderr, "codemcp: %s\n", err);
        return 1;
    }
    printf("%s\n", tok);
    explicit_bzero(tok, strlen(tok));
    free(tok);
    return 0;
}

void hauth_free(void)
{
    if (st.single)
        explicit_bzero(st.single, strlen(st.single));
    free(st.single);
    free(st.p);
    memset(&st, 0, sizeof(st));
}
