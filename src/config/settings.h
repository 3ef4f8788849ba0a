/* settings — every setting of the gateway, read once at start and passed down.
 *
 * A setting is a CODEMCP_* variable (or one of the few outside ones codemcp honours, such as
 * XDG_CONFIG_HOME). settings.def lists each exactly once: its field, its variable, its type,
 * its default and range, and one line for people; this header turns that list into
 * `struct settings`, and settings.c into the loader and `codemcp settings`. main.c fills one
 * struct before anything else starts and hands each module what it needs at init, so no
 * module reads the environment itself (tests/tools/check_settings.py fails on a getenv
 * anywhere else, and on a setting the README does not document).
 *
 * A value that does not parse or is out of range is not fatal: the default is used and a
 * warning names the setting, the bad value and the range. */
#ifndef CODEMCP_SETTINGS_H
#define CODEMCP_SETTINGS_H

#include <stdio.h>

/* Where a setting's value came from (for `codemcp settings` and warnings). */
enum setting_source { SET_DEFAULT, SET_ENV, SET_BAD_ENV };

struct settings {
#define S_LONG(field, env, def, lo, hi, doc) long field;
#define S_BOOL(field, env, def, doc)         int field;
#define S_STR(field, env, def, doc)          const char *field;
#define S_SECRET(field, env, doc)            const char *field;
#include "settings.def"
#undef S_LONG
#undef S_BOOL
#undef S_STR
#undef S_SECRET
    /* per field, in settings.def's order */
    enum setting_source source[
#define S_LONG(field, env, def, lo, hi, doc) +1
#define S_BOOL(field, env, def, doc)         +1
#define S_STR(field, env, def, doc)          +1
#define S_SECRET(field, env, doc)            +1
#include "settings.def"
#undef S_LONG
#undef S_BOOL
#undef S_STR
#undef S_SECRET
    ];
};

/* Fills s from getenv(); each bad value logged once. Strings point into the environment
 * (valid for the process's life; nothing here frees them). */
void settings_load(struct settings *s);
/* A variable whose name is known only at run time: ${VAR} in mcp.json, the allow-list of what
 * a worker inherits, a client's own config variable. NULL when unset. */
const char *settings_env(const char *name);
/* `codemcp settings`: every setting, its value, where it came from, and its line. */
void settings_print(const struct settings *s, FILE *out);

#endif
