/* setup_move — plans and carries out `codemcp setup HARNESS` and its undo.
 *
 * The move: the harness's servers (all but codemcp's own entry) go into codemcp's config
 * (verbatim into an mcpServers file, converted into an opencode-format "mcp" one; on a name
 * clash the harness's entry wins, with a warning), and the harness's servers object becomes
 * one entry launching this gateway. codemcp's config is written first, so a failure in between
 * leaves the servers in both places, never in neither. Both files are backed up first. Running
 * it again finds only codemcp and changes nothing. --dry-run prints the plan only.
 *
 * An undo record keeps, for the harness file and codemcp's config, the text before and the
 * text setup wrote. `--undo` puts the harness file back exactly when it is as setup left it;
 * when the harness changed other settings since (Claude Code rewrites ~/.claude.json all the
 * time), only the servers object is put back, and only if it is still the one setup wrote;
 * otherwise undo refuses and names the backup. codemcp's config goes back only if nothing
 * changed it since (else it keeps the moved servers, which is harmless, and says so). */
#include "setup_int.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The servers to move out of the harness file (new object), or NULL with the error printed. */
static json_t *servers_to_move(const struct harness *h, struct setup_file *hf,
                               const struct servers_at *at, int *have_ours)
{
    json_t *servers = servers_get(hf->root, at);
    if (servers && !json_is_object(servers)) {
        fprintf(stderr, "codemcp setup: %s: \"%s\" is not an object\n", hf->path,
                at->keys[at->n - 1]);
        return NULL;
    }
    json_t *moved = json_object();
    const char *name;
    json_t *e;
    json_object_foreach(servers, name, e)
    {
        if (strcmp(name, SETUP_ENTRY) != 0) {
            json_object_set(moved, name, e);
        } else if (!harness_is_ours(h, e)) {
            fprintf(stderr,
                    "codemcp setup: %s already has a server named \"%s\" that does not run "
                    "codemcp: rename it, then run setup again\n",
                    hf->path, SETUP_ENTRY);
            json_decref(moved);
            return NULL;
        }
    }
    *have_ours = json_object_get(servers, SETUP_ENTRY) != NULL;
    return moved;
}

/* codemcp's config with the moved servers added (in cm->text). 0 / -1 printed. */
static int add_to_codemcp(const struct harness *h, struct setup_file *cm, json_t *moved)
{
    if (harness_is_opencode(h) && json_object_get(cm->root, "mcpServers")) {
        fprintf(stderr,
                "codemcp setup: %s uses the \"mcpServers\" format; opencode's servers need the "
                "\"mcp\" format: move that file aside (or pass -c with another path) and run "
                "setup again\n",
                cm->path);
        return -1;
    }
    int fresh = !json_object_size(cm->root);
    int opencode_fmt = json_object_get(cm->root, "mcp") || (fresh && harness_is_opencode(h));
    const char *root_key = opencode_fmt ? "mcp" : "mcpServers";
    json_t *conv = json_object();
    const char *name;
    json_t *e;
    json_object_foreach(moved, name, e)
        json_object_set_new(conv, name, harness_to_codemcp(h, name, e, opencode_fmt));
    int rc = -1;
    if (fresh) { /* a new (or empty) config: written out whole, indented */
        json_t *doc = json_pack("{s:O}", root_key, conv);
        char *t = json_dumps(doc, JSON_INDENT(2));
        json_decref(doc);
        free(cm->text);
        cm->text = xmalloc(strlen(t) + 2);
        sprintf(cm->text, "%s\n", t);
        free(t);
        rc = 0;
        goto out;
    }
    const char *top[] = {root_key};
    json_t *empty = json_object();
    int erc = json_object_get(cm->root, root_key) ? 0 : sf_edit(cm, top, 1, empty);
    json_decref(empty);
    if (erc < 0)
        goto out;
    json_object_foreach(conv, name, e)
    {
        json_t *old = json_object_get(json_object_get(cm->root, root_key), name);
        if (old && !json_equal(old, e))
            printf("warning: codemcp already had a server \"%s\": %s's entry replaces it\n", name,
                   harness_name(h));
        const char *keys[] = {root_key, name};
        if (sf_edit(cm, keys, 2, e) < 0)
            goto out;
    }
    rc = 0;
out:
    json_decref(conv);
    return rc;
}

static json_t *record_of(const struct harness *h, struct setup_file *hf, const char *hf_before,
                         json_t *servers_before, struct setup_file *cm, const char *cm_before)
{
    json_t *rec = json_pack("{s:s, s:s, s:s, s:O, s:s, s:s, s:s}", "harness", harness_name(h),
                            "file", hf->path, "before", hf_before, "servers_before",
                            servers_before ? servers_before : json_null(), "after", hf->text,
                            "codemcp_config", cm->path, "codemcp_after", cm->text);
    json_object_set_new(rec, "codemcp_before", cm_before ? json_string(cm_before) : json_null());
    return rec;
}

int setup_move(const struct harness *h, enum harness_scope scope, const char *file,
               const char *codemcp_config, int dry_run)
{
    struct setup_file hf = {0}, cm = {0};
    json_t *moved = NULL, *entry = NULL, *servers_before = NULL;
    char *hf_before = NULL, *cm_before = NULL;
    int rc = 1, have_ours = 0;
    struct servers_at at;
    if (harness_path(h, scope, file, hf.path, sizeof(hf.path)) < 0 ||
        harness_servers_at(h, scope, &at) < 0 || sf_load(&hf) < 0)
        goto out;
    if (!hf.exists) {
        fprintf(stderr, "codemcp setup: %s does not exist (pass --file PATH)\n", hf.path);
        goto out;
    }
    if (!(moved = servers_to_move(h, &hf, &at, &have_ours)))
        goto out;
    if (have_ours && !json_object_size(moved)) {
        printf("%s already launches codemcp (%s): nothing to do\n", harness_name(h), hf.path);
        rc = 0;
        goto out;
    }
    servers_before = json_deep_copy(servers_get(hf.root, &at));
    hf_before = xstrdup(hf.text);
    if (sf_codemcp_path(codemcp_config, cm.path, sizeof(cm.path)) < 0 || sf_load(&cm) < 0)
        goto out;
    cm_before = cm.exists ? xstrdup(cm.text) : NULL;
    /* opencode's "tools" settings that name the moved servers' tools point at nothing now. */
    if (harness_is_opencode(h) && harness_fix_opencode_tools(&hf, moved) < 0)
        goto out;
    if (add_to_codemcp(h, &cm, moved) < 0)
        goto out;
    entry = json_pack("{s:o}", SETUP_ENTRY, harness_entry(h, cm.path));
    if (sf_edit(&hf, at.keys, at.n, entry) < 0)
        goto out;
    printf("%s %zu server%s from %s into %s:", dry_run ? "would move" : "moving",
           json_object_size(moved), json_object_size(moved) == 1 ? "" : "s", hf.path, cm.path);
    const char *name;
    json_t *e;
    json_object_foreach(moved, name, e) printf(" %s", name);
    printf("\n");
    if (harness_is_opencode(h))
        harness_note_inherited_env(moved);
    if (dry_run) {
        printf("would write %s:\n%s\n(dry run: nothing written)\n", hf.path, hf.text);
        rc = 0;
        goto out;
    }
    char rpath[PATH_MAX];
    if (sf_record_path(harness_name(h), hf.path, &at, rpath, sizeof(rpath)) < 0)
        goto out;
    if (sf_write(&cm) < 0)
        goto out;
    if (sf_write(&hf) < 0) {
        fprintf(stderr,
                "codemcp setup: the servers are in %s already; %s's own file is "
                "unchanged\n",
                cm.path, harness_name(h));
        goto out;
    }
    json_t *rec = record_of(h, &hf, hf_before, servers_before, &cm, cm_before);
    int saved = sf_record_save(rpath, rec);
    json_decref(rec);
    printf("%s now launches codemcp with every server; restart %s%s\n", harness_name(h),
           harness_name(h), saved < 0 ? "" : " (`codemcp setup --undo` puts it back)");
    rc = 0;
out:
    json_decref(entry);
    json_decref(moved);
    json_decref(servers_before);
    free(hf_before);
    free(cm_before);
    sf_free(&hf);
    sf_free(&cm);
    return rc;
}

/* ---- undo ------------------------------------------------------------------------------------ */

static const char *rec_str(json_t *rec, const char *key)
{
    return json_string_value(json_object_get(rec, key));
}

/* The harness file back as it was. 0 / -1 printed. */
static int undo_harness(json_t *rec, struct setup_file *hf, const struct servers_at *at)
{
    const char *key = at->keys[at->n - 1];
    const char *after = rec_str(rec, "after"), *before = rec_str(rec, "before");
    if (strcmp(hf->text, after) == 0) { /* untouched since: exactly as it was */
        free(hf->text);
        hf->text = xstrdup(before);
        return sf_write(hf);
    }
    /* Changed since: only the servers object, and only if it is still the one setup wrote. */
    struct setup_file wrote = {0};
    snprintf(wrote.path, sizeof(wrote.path), "%s", hf->path);
    wrote.text = xstrdup(after);
    int rc = -1;
    json_t *now = servers_get(hf->root, at);
    if (sf_load_text(&wrote) < 0 || !now || !json_equal(now, servers_get(wrote.root, at))) {
        fprintf(stderr,
                "codemcp setup: %s: its \"%s\" changed since setup: nothing was undone; what "
                "was there before setup is in its backup (%s.bak.*)\n",
                hf->path, key, hf->path);
        goto out;
    }
    json_t *servers = json_object_get(rec, "servers_before");
    json_t *value = json_is_object(servers) ? json_incref(servers) : json_object();
    rc = sf_edit(hf, at->keys, at->n, value);
    json_decref(value);
    if (rc == 0) {
        printf("%s changed since setup in other settings: those stay; \"%s\" is put back\n",
               hf->path, key);
        rc = sf_write(hf);
    }
out:
    sf_free(&wrote);
    return rc;
}

/* codemcp's config back as it was, when nothing changed it since. */
static void undo_codemcp(json_t *rec)
{
    struct setup_file cm = {0};
    snprintf(cm.path, sizeof(cm.path), "%s", rec_str(rec, "codemcp_config"));
    size_t len;
    char *now = read_file(cm.path, &len);
    const char *before = rec_str(rec, "codemcp_before");
    if (!now || strcmp(now, rec_str(rec, "codemcp_after")) != 0) {
        printf("note: %s changed since setup: left as it is (the servers are in it too)\n",
               cm.path);
    } else if (!before) {
        if (unlink(cm.path) == 0)
            printf("removed %s (setup had made it)\n", cm.path);
    } else {
        cm.exists = 1;
        cm.text = xstrdup(before);
        if (sf_write(&cm) == 0)
            printf("restored %s\n", cm.path);
    }
    free(now);
    sf_free(&cm);
}

int setup_undo(const struct harness *h, enum harness_scope scope, const char *file)
{
    struct setup_file hf = {0};
    char rpath[PATH_MAX];
    json_t *rec = NULL;
    struct servers_at at;
    int rc = 1;
    if (harness_path(h, scope, file, hf.path, sizeof(hf.path)) < 0 ||
        harness_servers_at(h, scope, &at) < 0 ||
        sf_record_path(harness_name(h), hf.path, &at, rpath, sizeof(rpath)) < 0)
        goto out;
    rec = sf_record_load(rpath);
    if (!rec || !rec_str(rec, "after") || !rec_str(rec, "before") ||
        !rec_str(rec, "codemcp_config") || !rec_str(rec, "codemcp_after")) {
        fprintf(stderr, "codemcp setup: no setup of %s at %s to undo\n", harness_name(h), hf.path);
        goto out;
    }
    if (sf_load(&hf) < 0)
        goto out;
    if (!hf.exists) {
        fprintf(stderr, "codemcp setup: %s is gone: nothing was undone\n", hf.path);
        goto out;
    }
    if (undo_harness(rec, &hf, &at) < 0)
        goto out;
    printf("restored %s's servers in %s\n", harness_name(h), hf.path);
    undo_codemcp(rec);
    if (unlink(rpath) < 0 && errno != ENOENT)
        fprintf(stderr, "codemcp setup: %s: %s\n", rpath, strerror(errno));
    printf("restart %s\n", harness_name(h));
    rc = 0;
out:
    json_decref(rec);
    sf_free(&hf);
    return rc;
}
