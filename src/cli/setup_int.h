/* setup_int — the pieces of `codemcp setup` and `codemcp init`, by what each does:
 * setup_file.c reads, backs up and writes one harness file (JSONC, edited with cfgedit) and
 * keeps undo records; setup_harnesses.c is the table of harnesses, where each keeps its servers
 * and in which format; setup_move.c plans and carries out the move and its undo; setup.c
 * is the command line and `init`. */
#ifndef CODEMCP_SETUP_INT_H
#define CODEMCP_SETUP_INT_H

#include <jansson.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>

#define SETUP_ENTRY "codemcp" /* the server name setup gives codemcp in a harness */

/* ---- setup_file.c ---------------------------------------------------------------------------- */

struct setup_file {
    char path[PATH_MAX];
    int exists;
    char *text;   /* as on disk ("" when missing) */
    json_t *root; /* parsed: an object ({} for a missing or blank file) */
};

/* Reads and parses f->path. 0, or -1 with the error printed (nothing changed). */
int sf_load(struct setup_file *f);
/* Parses f->text (already set) into f->root. 0 / -1 printed. */
int sf_load_text(struct setup_file *f);
void sf_free(struct setup_file *f);
/* Sets keys = value (borrowed) in f->text, in memory; the rest of the text stays. 0 / -1. */
int sf_edit(struct setup_file *f, const char *const *keys, size_t n, json_t *value);
/* Writes f->text to f->path (mkdir -p of its directory; a new file gets mode 0600), first
 * copying an existing file to <path>.bak.<UTC time> (name printed). 0 / -1 printed. */
int sf_write(struct setup_file *f);
/* mkdir -p of path's directory (0700 for what it creates). */
void sf_make_parent_dirs(const char *path);
/* Makes path absolute against the cwd (harnesses start codemcp anywhere). 0 / -1 printed. */
int sf_absolute(char *path, size_t n);
/* codemcp's config path: given, else the default; absolute. 0 / -1 printed. */
int sf_codemcp_path(const char *given, char *out, size_t n);

/* Undo records: one per servers object of a harness file, under
 * <config dir>/codemcp/setup-undo/. */
struct servers_at;
int sf_record_path(const char *harness, const char *file, const struct servers_at *at, char *out,
                   size_t n);
int sf_record_save(const char *rpath, json_t *rec);
json_t *sf_record_load(const char *rpath); /* NULL when there is none */

/* ---- setup_harnesses.c ----------------------------------------------------------------------- */

/* local: Claude Code's per-project servers kept in the user's file (`claude mcp add -s local`). */
enum harness_scope { SCOPE_DEFAULT, SCOPE_USER, SCOPE_PROJECT, SCOPE_LOCAL };

/* Where the servers object is inside the harness file: a path of members. */
struct servers_at {
    const char *keys[3];
    size_t n;
    char cwd[PATH_MAX]; /* keys may point here */
};
/* The servers object at at in root, or NULL. */
json_t *servers_get(json_t *root, const struct servers_at *at);

struct harness;
const struct harness *harness_find(const char *name);
const struct harness *harness_at(size_t i); /* NULL past the end */
const char *harness_name(const struct harness *h);
/* Where h keeps its servers for scope. 0, or -1 with the error printed. */
int harness_servers_at(const struct harness *h, enum harness_scope scope, struct servers_at *at);
int harness_is_opencode(const struct harness *h);
struct settings;
/* The settings harness files are found with (HOME, OPENCODE_CONFIG, ...); kept. Before any
 * harness_* call. */
void harness_use_settings(const struct settings *s);
/* The harness file for scope (or --file). 0, or -1 with the error printed. */
int harness_path(const struct harness *h, enum harness_scope scope, const char *file, char *out,
                 size_t n);
/* The file for scope exists (absolute path in out); nothing printed. */
int harness_found(const struct harness *h, enum harness_scope scope, char *out, size_t n);
/* Is this servers entry one that runs codemcp? */
int harness_is_ours(const struct harness *h, json_t *e);
/* The entry that launches codemcp with cm_path (new reference). */
json_t *harness_entry(const struct harness *h, const char *cm_path);
/* A harness entry in codemcp's format (opencode_fmt: "mcp", else "mcpServers"); notes what it
 * drops. New reference. */
json_t *harness_to_codemcp(const struct harness *h, const char *name, json_t *e, int opencode_fmt);
/* opencode's "tools" settings about moved servers (entries edited in place), edited in f. */
int harness_fix_opencode_tools(struct setup_file *f, json_t *moved);
/* Names the adopted opencode local servers that may have relied on an inherited variable. */
void harness_note_inherited_env(json_t *moved);

/* ---- setup_move.c ---------------------------------------------------------------------------- */

int setup_move(const struct harness *h, enum harness_scope scope, const char *file,
               const char *codemcp_config, int dry_run);
int setup_undo(const struct harness *h, enum harness_scope scope, const char *file);

#endif
