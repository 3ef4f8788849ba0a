/* setup_file — one harness (or codemcp) config file as `codemcp setup` handles it: read and
 * parsed with the one JSONC loader, edited in its text with cfgedit (comments, other keys and
 * their order kept), copied to <file>.bak.<UTC time> before it is changed, written through a
 * temporary file and a rename. Undo records (what setup wrote and what was there before) live
 * under <config dir>/codemcp/setup-undo/, one per harness file, mode 0600 (headers may hold
 * tokens). Blocking file I/O: a command-line tool, never inside the gateway. */
#include "cfgedit.h"
#include "config.h"
#include "jsonc.h"
#include "setup_int.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int sf_load(struct setup_file *f)
{
    size_t len;
    f->text = read_file(f->path, &len);
    if (!f->text) {
        if (errno != ENOENT) {
            fprintf(stderr, "codemcp setup: %s: %s\n", f->path, strerror(errno));
            return -1;
        }
        f->text = xstrdup("");
        f->root = json_object();
        return 0;
    }
    f->exists = 1;
    return sf_load_text(f);
}

int sf_load_text(struct setup_file *f)
{
    size_t len = strlen(f->text);
    char *copy = xstrndup(f->text, len);
    json_error_t jerr;
    f->root = jsonc_parse(copy, len, 0, &jerr);
    if (!f->root && strspn(copy, " \t\r\n") == len) /* blank, or comments only */
        f->root = json_object();
    free(copy);
    if (!json_is_object(f->root)) {
        if (f->root)
            fprintf(stderr, "codemcp setup: %s: the top level is not an object\n", f->path);
        else
            fprintf(stderr, "codemcp setup: %s:%d:%d: %s (nothing was changed)\n", f->path,
                    jerr.line, jerr.column, jerr.text);
        return -1;
    }
    return 0;
}

void sf_free(struct setup_file *f)
{
    json_decref(f->root);
    free(f->text);
    f->root = NULL;
    f->text = NULL;
}

int sf_edit(struct setup_file *f, const char *const *keys, size_t n, json_t *value)
{
    char why[600];
    char *next = ce_edit_text(f->text, keys, n, value, CE_PRETTY, why, sizeof(why));
    if (!next || !ce_text_holds(next, keys, n, value)) {
        fprintf(stderr, "codemcp setup: cannot edit %s: %s (nothing was changed)\n", f->path,
                next ? "the edit did not check out" : why);
        free(next);
        return -1;
    }
    free(f->text);
    f->text = next;
    return 0;
}

/* Copies path's bytes to path.bak.<UTC time>[-k] (0600, never over an existing file). */
static int backup(const char *path)
{
    char stamp[32], out[PATH_MAX + 64];
    time_t now = time(NULL);
    strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", gmtime(&now));
    size_t len;
    char *text = read_file(path, &len);
    int fd = -1;
    for (int k = 0; text && k < 100 && fd < 0; k++) {
        if (k)
            snprintf(out, sizeof(out), "%s.bak.%s-%d", path, stamp, k);
        else
            snprintf(out, sizeof(out), "%s.bak.%s", path, stamp);
        fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    int rc = fd >= 0 && write(fd, text, len) == (ssize_t)len ? 0 : -1;
    if (fd >= 0 && close(fd) < 0)
        rc = -1;
    free(text);
    if (rc < 0)
        fprintf(stderr, "codemcp setup: cannot back up %s: %s (nothing more was changed)\n", path,
                strerror(errno));
    else
        printf("backed up %s to %s\n", path, out);
    return rc;
}

void sf_make_parent_dirs(const char *path)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0700);
            *p = '/';
        }
}

int sf_write(struct setup_file *f)
{
    char why[600];
    sf_make_parent_dirs(f->path);
    if (f->exists && backup(f->path) < 0)
        return -1;
    if (ce_write_atomic(f->path, f->text, strlen(f->text), 0600, 0, why, sizeof(why)) < 0) {
        fprintf(stderr, "codemcp setup: %s\n", why);
        return -1;
    }
    f->exists = 1;
    return 0;
}

int sf_absolute(char *path, size_t n)
{
    if (path[0] == '/')
        return 0;
    char cwd[PATH_MAX], rel[PATH_MAX];
    snprintf(rel, sizeof(rel), "%s", path);
    if (!getcwd(cwd, sizeof(cwd)) || snprintf(path, n, "%s/%s", cwd, rel) >= (int)n) {
        fprintf(stderr, "codemcp setup: cannot make %s absolute\n", rel);
        return -1;
    }
    return 0;
}

int sf_codemcp_path(const char *given, char *out, size_t n)
{
    if (given && *given)
        snprintf(out, n, "%s", given);
    else if (!cfg_default_path(out, n)) {
        fprintf(stderr, "codemcp setup: no HOME: cannot place codemcp's config (use -c)\n");
        return -1;
    }
    return sf_absolute(out, n);
}

/* ---- undo records ---------------------------------------------------------------------------- */

int sf_record_path(const char *harness, const char *file, const struct servers_at *at, char *out,
                   size_t n)
{
    char dir[PATH_MAX];
    if (!cfg_config_dir(dir, sizeof(dir))) {
        fprintf(stderr, "codemcp setup: no HOME: cannot keep the undo record\n");
        return -1;
    }
    unsigned long h = 5381; /* djb2 of the file's path and the servers' place in it */
    for (const char *p = file; *p; p++)
        h = h * 33 + (unsigned char)*p;
    for (size_t i = 0; i < at->n; i++)
        for (const char *p = at->keys[i]; *p; p++)
            h = h * 33 + (unsigned char)*p;
    return snprintf(out, n, "%s/codemcp/setup-undo/%s-%08lx.json", dir, harness, h & 0xffffffffUL) <
                   (int)n
               ? 0
               : -1;
}

int sf_record_save(const char *rpath, json_t *rec)
{
    char why[600];
    char *text = json_dumps(rec, JSON_INDENT(2));
    sf_make_parent_dirs(rpath);
    /* The records copy harness entries (tokens in headers, env): the folder is codemcp's own
     * and private, and so is each record, even when an older one was made with other modes. */
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", rpath);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        chmod(dir, 0700);
    }
    int rc = text ? ce_write_atomic(rpath, text, strlen(text), 0600, 0, why, sizeof(why)) : -1;
    if (rc == 0)
        chmod(rpath, 0600);
    if (rc < 0)
        fprintf(stderr, "codemcp setup: cannot keep the undo record %s: %s\n", rpath,
                text ? why : "out of memory");
    free(text);
    return rc;
}

json_t *sf_record_load(const char *rpath)
{
    return json_load_file(rpath, 0, NULL);
}
