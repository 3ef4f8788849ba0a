/* sdkgen_int — what the sdkgen files share with each other and nobody else: the model of one
 * generated function, text helpers and the Python-literal emitters. Prefix sdk__. */
#ifndef CODEMCP_SDKGEN_INT_H
#define CODEMCP_SDKGEN_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

/* Longest summary in code points (including the trailing "…" when cut). */
#define SDK_SUMMARY_MAX 160
/* Longest "# returns:" exemplar in code points; the shape learner caps its own output too. */
#define SDK_SHAPE_MAX 600

/* One parameter of a generated function. */
struct sdk_param {
    char *name; /* Python identifier, unique within the function */
    char *key;  /* the schema key sent on the wire (may contain NUL: use key_len) */
    size_t key_len;
    char *type;   /* Python type text, e.g. "list[str]" */
    int has_none; /* the type already admits None (so optional adds no "| None") */
    char *doc;    /* one-line description, "" when none */
    int required;
};

/* One generated function (one enabled upstream tool). */
struct sdk_fn {
    const char *server; /* borrowed from the input JSON */
    size_t server_len;
    const char *tool; /* borrowed from the input JSON */
    size_t tool_len;
    json_t *tool_json; /* borrowed */
    size_t order;      /* position in the input, the last sort key (keeps sorting stable) */
    char *name;        /* the unique Python function name */
    int mutation;
    struct sdk_param *params;
    size_t nparams;
    int extra;          /* schema allows additional properties: **<extra_name> is forwarded */
    char *extra_name;   /* "extra" unless a parameter took that name */
    char *timeout_name; /* "timeout_ms" unless a parameter took that name */
    char *returns;      /* Python return type */
    char *doc;          /* cleaned multi-line description for the docstring, "" when none */
    char *summary;      /* <= SDK_SUMMARY_MAX code points, "" when none */
};

/* names.c */
/* Decodes one UTF-8 code point at s[*i] (i < n), advancing *i; invalid bytes yield
 * U+FFFD and advance by one. */
uint32_t sdk__utf8_next(const char *s, size_t n, size_t *i);
void sdk__utf8_put(struct buf *b, uint32_t cp);
/* sdk_identifier over an explicit length. Caller frees. */
char *sdk__identifier_n(const char *s, size_t n);
/* Appends s as a double-quoted Python string literal that round-trips exactly. */
void sdk__py_str(struct buf *b, const char *s, size_t n);

/* types.c */
/* Longest type text of one parameter or return type, in bytes; deeper levels are cut with
 * "…" until it fits. */
#define SDK_TYPE_MAX 480
/* The compact type text for a JSON Schema (borrowed, any JSON value): nested objects as
 * {key: T, optional?: T}, see types.c. root: the document "$ref"s resolve in (the tool's
 * inputSchema / outputSchema; borrowed, may be NULL). *has_none (may be NULL) is set when
 * the type admits None. This is the one renderer of a schema for people and models:
 * describe.c and describe(name) use it too. Caller frees. */
char *sdk__py_type(json_t *schema, json_t *root, int *has_none);
/* Whether key (key_len bytes, not NUL-terminated) is in a schema's `required` array (types.c). */
int sdk__is_required(json_t *required, const char *key, size_t key_len);
/* 1 when a type text is not a plain Python expression ({…}, "…", "?" keys): sdk.py then
 * writes the annotation as a string. */
int sdk__type_needs_quotes(const char *type);

/* describe.c */
/* Cleans upstream prose: drops control characters (NUL, C0 except tab/newline, DEL, C1),
 * turns \r\n, \r, U+2028 and U+2029 into newlines, trims each line's trailing blanks and the
 * leading/trailing blank lines. one_line collapses all whitespace into single spaces.
 * Caller frees. */
char *sdk__clean_text(const char *s, size_t n, int one_line);
/* The summary of a description (first line, first sentence, <= SDK_SUMMARY_MAX code points
 * with "…" when cut). Caller frees. */
char *sdk__summary(const char *desc);
/* Builds the execute_python description from the sorted functions. */
char *sdk__describe(struct sdk_fn *fns, size_t n, json_t *shapes);

/* sdkgen.c */
/* Appends "def name(params) -> ret:"; with_timeout adds the keyword-only timeout. */
void sdk__signature(struct buf *b, const struct sdk_fn *fn, int with_timeout);

#endif
