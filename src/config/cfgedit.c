/* cfgedit — see cfgedit.h. A small JSONC scanner (strings, numbers, literals, objects, arrays,
 * // and block comments, trailing commas) finds byte spans; the edit splices text. O(len). */
#include "cfgedit.h"
#include "jsonc.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct sc {
    const char *s;
    size_t len, pos;
};

static void skip_ws(struct sc *c)
{
    while (c->pos < c->len) {
        char ch = c->s[c->pos];
        if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
            c->pos++;
        } else if (ch == '/' && c->pos + 1 < c->len && c->s[c->pos + 1] == '/') {
            while (c->pos < c->len && c->s[c->pos] != '\n')
                c->pos++;
        } else if (ch == '/' && c->pos + 1 < c->len && c->s[c->pos + 1] == '*') {
            c->pos += 2;
            while (c->pos + 1 < c->len && !(c->s[c->pos] == '*' && c->s[c->pos + 1] == '/'))
                c->pos++;
            c->pos = c->pos + 2 <= c->len ? c->pos + 2 : c->len;
        } else {
            return;
        }
    }
}

static int skip_string(struct sc *c)
{
    if (c->pos >= c->len || c->s[c->pos] != '"')
        return -1;
    for (c->pos++; c->pos < c->len; c->pos++) {
        if (c->s[c->pos] == '\\')
            c->pos++;
        else if (c->s[c->pos] == '"') {
            c->pos++;
            return 0;
        }
    }
    return -1;
}

static int skip_value(struct sc *c, int depth)
{
    if (depth > 200)
        return -1;
    skip_ws(c);
    if (c->pos >= c->len)
        return -1;
    char ch = c->s[c->pos];
    if (ch == '"')
        return skip_string(c);
    if (ch == '{' || ch == '[') {
        char close = ch == '{' ? '}' : ']';
        c->pos++;
        for (;;) {
            skip_ws(c);
            if (c->pos >= c->len)
                return -1;
            if (c->s[c->pos] == close) {
                c->pos++;
                return 0;
            }
            if (ch == '{') {
                if (skip_string(c) < 0)
                    return -1;
                skip_ws(c);
                if (c->pos >= c->len || c->s[c->pos] != ':')
                    return -1;
                c->pos++;
            }
            if (skip_value(c, depth + 1) < 0)
                return -1;
            skip_ws(c);
            if (c->pos < c->len && c->s[c->pos] == ',')
                c->pos++;
            else if (c->pos >= c->len || c->s[c->pos] != close)
                return -1;
        }
    }
    size_t start = c->pos; /* number or literal */
    while (c->pos < c->len && strchr("+-.0123456789eEtruefalsn", c->s[c->pos]))
        c->pos++;
    return c->pos > start ? 0 : -1;
}

/* A member of the object starting at obj ('{'). */
struct member {
    size_t key_start, value_start, value_end;
};

/* Finds key in the object at obj (last occurrence wins, as in the parser). Fills *m when found
 * and *last with the last member (any key); *n_members counts them. -1 on a syntax error. */
static int find_member(const char *s, size_t len, size_t obj, const char *key, struct member *m,
                       int *found, struct member *last, int *n_members, size_t *close_pos)
{
    struct sc c = {s, len, obj + 1};
    *found = 0;
    *n_members = 0;
    for (;;) {
        skip_ws(&c);
        if (c.pos >= len)
            return -1;
        if (s[c.pos] == '}') {
            *close_pos = c.pos;
            return 0;
        }
        struct member cur = {.key_start = c.pos};
        if (skip_string(&c) < 0)
            return -1;
        json_t *k = json_loadb(s + cur.key_start, c.pos - cur.key_start, JSON_DECODE_ANY, NULL);
        int match = json_is_string(k) && strcmp(json_string_value(k), key) == 0;
        json_decref(k);
        skip_ws(&c);
        if (c.pos >= len || s[c.pos] != ':')
            return -1;
        c.pos++;
        skip_ws(&c);
        cur.value_start = c.pos;
        if (skip_value(&c, 0) < 0)
            return -1;
        cur.value_end = c.pos;
        if (match) {
            *m = cur;
            *found = 1;
        }
        *last = cur;
        (*n_members)++;
        skip_ws(&c);
        if (c.pos < len && s[c.pos] == ',')
            c.pos++;
        else if (c.pos >= len || s[c.pos] != '}')
            return -1;
    }
}

static void text_splice(struct buf *out, const char *s, size_t a, size_t b, const char *ins,
                        size_t len)
{
    buf_append(out, s, a);
    buf_appends(out, ins);
    buf_append(out, s + b, len - b);
}

/* `"k1": {"k2": ... value}` for the keys not yet present. */
static char *member_text(const char *const *keys, size_t n, const char *value)
{
    struct buf b = {0};
    for (size_t i = 0; i < n; i++) {
        json_t *k = json_string(keys[i]);
        char *kt = json_dumps(k, JSON_ENCODE_ANY);
        json_decref(k);
        buf_printf(&b, "%s%s: ", i ? "{" : "", kt);
        free(kt);
    }
    buf_appends(&b, value);
    for (size_t i = 1; i < n; i++)
        buf_appends(&b, "}");
    return buf_steal(&b);
}

/* Inserts a member into the object at obj, after its last member, indented like it. */
static char *insert_member(const char *s, size_t len, size_t obj, const struct member *last,
                           int n_members, size_t close_pos, const char *member)
{
    struct buf out = {0};
    if (!n_members) {
        text_splice(&out, s, obj + 1, obj + 1, member, len);
        return buf_steal(&out);
    }
    /* The indentation of the last member's line, and whether members sit on their own lines. */
    size_t ls = last->key_start;
    while (ls > 0 && s[ls - 1] != '\n')
        ls--;
    int own_line = 1;
    for (size_t i = ls; i < last->key_start; i++)
        if (s[i] != ' ' && s[i] != '\t')
            own_line = 0;
    if (!own_line || ls <= obj) {
        struct buf m = {0};
        buf_printf(&m, ", %s", member);
        text_splice(&out, s, last->value_end, last->value_end, m.data, len);
        buf_free(&m);
        return buf_steal(&out);
    }
    /* After the value: an optional trailing comma, then a // comment to the end of the line. */
    size_t p = last->value_end;
    int had_comma = 0;
    while (p < close_pos && (s[p] == ' ' || s[p] == '\t'))
        p++;
    if (p < close_pos && s[p] == ',') {
        had_comma = 1;
        p++;
    }
    while (p < close_pos && (s[p] == ' ' || s[p] == '\t'))
        p++;
    if (p + 1 < close_pos && s[p] == '/' && s[p + 1] == '/')
        while (p < close_pos && s[p] != '\n')
            p++;
    if (p >= close_pos || s[p] != '\n')
        p = had_comma ? last->value_end + 1 : last->value_end; /* odd layout: stay on the line */
    struct buf m = {0};
    buf_appends(&m, "\n");
    buf_append(&m, s + ls, last->key_start - ls);
    buf_appends(&m, member);
    size_t comma_at = had_comma ? (size_t)-1 : last->value_end;
    if (comma_at != (size_t)-1 && comma_at == p) {
        struct buf m2 = {0};
        buf_printf(&m2, ",%s", m.data);
        buf_free(&m);
        m = m2;
        comma_at = (size_t)-1;
    }
    if (comma_at == (size_t)-1) {
        text_splice(&out, s, p, p, m.data, len);
    } else { /* a comma after the value, the member after the comment */
        buf_append(&out, s, comma_at);
        buf_appends(&out, ",");
        buf_append(&out, s + comma_at, p - comma_at);
        buf_appends(&out, m.data);
        buf_append(&out, s + p, len - p);
    }
    buf_free(&m);
    return buf_steal(&out);
}

/* value's JSON; pretty: indented by 2, continuation lines under the line holding pos. */
static char *value_text(json_t *value, int flags, const char *text, size_t pos)
{
    if (!(flags & CE_PRETTY) || !(json_is_object(value) || json_is_array(value)))
        return json_dumps(value, JSON_ENCODE_ANY); /* one line, ", " and ": " */
    char *raw = json_dumps(value, JSON_INDENT(2));
    size_t ls = pos;
    while (ls > 0 && text[ls - 1] != '\n')
        ls--;
    size_t ind = 0;
    while (text[ls + ind] == ' ' || text[ls + ind] == '\t')
        ind++;
    struct buf b = {0};
    for (const char *p = raw; *p; p++) {
        buf_append(&b, p, 1);
        if (*p == '\n')
            buf_append(&b, text + ls, ind);
    }
    free(raw);
    return buf_steal(&b);
}

char *ce_edit_text(const char *text, const char *const *keys, size_t n, json_t *value, int flags,
                   char *why, size_t wn)
{
    size_t len = strlen(text);
    char *vt = NULL;
    char *out = NULL;
    struct sc c = {text, len, 0};
    skip_ws(&c);
    if (c.pos >= len) { /* empty file: a fresh document */
        vt = value_text(value, 0, text, 0);
        char *m = member_text(keys, n, vt);
        struct buf b = {0};
        buf_printf(&b, "{%s}\n", m);
        free(m);
        out = buf_steal(&b);
        goto done;
    }
    if (text[c.pos] != '{') {
        snprintf(why, wn, "the top level is not an object");
        goto done;
    }
    size_t obj = c.pos;
    for (size_t i = 0; i < n; i++) {
        struct member m = {0}, last = {0};
        int found, n_members;
        size_t close_pos = 0;
        if (find_member(text, len, obj, keys[i], &m, &found, &last, &n_members, &close_pos) < 0) {
            snprintf(why, wn, "cannot read the file as JSON with comments");
            goto done;
        }
        if (found && i + 1 == n) {
            struct buf b = {0};
            vt = value_text(value, flags, text, m.value_start);
            text_splice(&b, text, m.value_start, m.value_end, vt, len);
            out = buf_steal(&b);
            goto done;
        }
        if (found) {
            if (text[m.value_start] != '{') {
                snprintf(why, wn, "\"%s\" is not an object", keys[i]);
                goto done;
            }
            obj = m.value_start;
            continue;
        }
        vt = value_text(value, n_members ? flags : 0, text, n_members ? last.key_start : obj);
        char *mt = member_text(keys + i, n - i, vt);
        out = insert_member(text, len, obj, &last, n_members, close_pos, mt);
        free(mt);
        goto done;
    }
    snprintf(why, wn, "empty key path");
done:
    free(vt);
    return out;
}

int ce_text_holds(const char *text, const char *const *keys, size_t n, json_t *value)
{
    size_t len = strlen(text);
    char *copy = xstrndup(text, len);
    json_t *root = jsonc_parse(copy, len, 0, NULL);
    free(copy);
    json_t *v = root;
    for (size_t i = 0; i < n && v; i++)
        v = json_object_get(v, keys[i]);
    int ok = v && json_equal(v, value);
    json_decref(root);
    return ok;
}

int ce_write_atomic(const char *path, const char *text, size_t len, unsigned mode, int keep_bak,
                    char *why, size_t wn)
{
    char real[PATH_MAX], tmp[PATH_MAX + 32], bak[PATH_MAX + 8];
    if (!realpath(path, real))
        snprintf(real, sizeof(real), "%s", path); /* a new file */
    struct stat st;
    int exists = stat(real, &st) == 0;
    if (exists)
        mode = st.st_mode & 07777;
    snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", real);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(why, wn, "cannot create a temporary file beside %s: %s", real, strerror(errno));
        return -1;
    }
    fchmod(fd, (mode_t)mode);
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            snprintf(why, wn, "cannot write %s: %s", tmp, strerror(errno));
            close(fd);
            unlink(tmp);
            return -1;
        }
        off += (size_t)w;
    }
    if (fsync(fd) < 0 || close(fd) < 0) {
        snprintf(why, wn, "cannot write %s: %s", tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (exists && keep_bak) {
        size_t olen;
        char *old = read_file(real, &olen);
        snprintf(bak, sizeof(bak), "%s.bak", real);
        int bfd = old ? open(bak, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, (mode_t)mode) : -1;
        int ok = bfd >= 0 && write(bfd, old, olen) == (ssize_t)olen;
        if (bfd >= 0) {
            fchmod(bfd, (mode_t)mode);
            ok = close(bfd) == 0 && ok;
        }
        free(old);
        if (!ok) {
            snprintf(why, wn, "cannot write the backup %s: %s (nothing changed)", bak,
                     strerror(errno));
            unlink(tmp);
            return -1;
        }
    }
    if (rename(tmp, real) < 0) {
        snprintf(why, wn, "cannot replace %s: %s", real, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int ce_set_in_file(const char *path, const char *const *keys, size_t n, json_t *value, int *changed,
                   char *why, size_t wn)
{
    size_t len;
    *changed = 0;
    char *text = read_file(path, &len);
    if (!text) {
        snprintf(why, wn, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    if (strlen(text) != len) {
        snprintf(why, wn, "%s holds a NUL byte; not editing it", path);
        free(text);
        return -1;
    }
    int rc = -1;
    char *next = ce_edit_text(text, keys, n, value, 0, why, wn);
    if (!next) {
        snprintf(why + strlen(why), wn - strlen(why), " (%s was not changed)", path);
        goto done;
    }
    if (!ce_text_holds(next, keys, n, value)) {
        snprintf(why, wn, "the edit of %s did not check out; it was not changed", path);
        goto done;
    }
    if (strcmp(next, text) == 0) {
        rc = 0;
        goto done;
    }
    rc = ce_write_atomic(path, next, strlen(next), 0600, 1, why, wn);
    *changed = rc == 0;
done:
    free(next);
    free(text);
    return rc;
}
