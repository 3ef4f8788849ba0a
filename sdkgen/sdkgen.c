/* sdkgen — builds the model of the generated functions from the servers' tool lists and
 * writes sdk.py and the `functions` map from it (describe.c writes the description).
 *
 * Everything the model writes comes from upstream servers, i.e. from strangers: names go
 * through the sanitizer in names.c, strings through sdk__py_str, prose through
 * sdk__clean_text plus the docstring escaper below. The worker compiles the module before
 * swapping it in, so a bug here costs an SDK reload, never a crash. Pure: no I/O. */
#include "sdkgen.h"
#include "sdkgen_int.h"

#include <stdlib.h>
#include <string.h>

/* Names a generated function may never take: what the runtime injects next to the SDK, what
 * the module itself defines, and the builtins its annotations evaluate. */
static const char *const sdk_reserved[] = {
    "call",
    "gather",
    "settle",
    "resolve",
    "Pending",
    "ToolError",
    "result",
    "Any",
    "Literal",
    "_call",
    "__all__",
    "__codemcp_meta__",
    "__codemcp_schemas__",
    "_json",
    "dict",
    "list",
    "str",
    "int",
    "float",
    "bool",
    "search_tools",
    "describe",
    NULL,
};

static int sdk_fn_cmp(const void *pa, const void *pb)
{
    const struct sdk_fn *a = pa, *b = pb;
    size_t n = a->server_len < b->server_len ? a->server_len : b->server_len;
    int c = memcmp(a->server, b->server, n);
    if (c == 0 && a->server_len != b->server_len)
        c = a->server_len < b->server_len ? -1 : 1;
    if (c == 0) {
        n = a->tool_len < b->tool_len ? a->tool_len : b->tool_len;
        c = memcmp(a->tool, b->tool, n);
        if (c == 0 && a->tool_len != b->tool_len)
            c = a->tool_len < b->tool_len ? -1 : 1;
    }
    if (c == 0)
        c = a->order < b->order ? -1 : a->order > b->order;
    return c;
}

static int sdk_taken(json_t *used, const char *name)
{
    return json_object_get(used, name) != NULL;
}

/* Returns base, or base_2, base_3, ... — the first not in used — and marks it used. Takes
 * ownership of base. */
static char *sdk_claim(json_t *used, char *base)
{
    char *name = base;
    for (int k = 2; sdk_taken(used, name); k++) {
        if (name != base)
            free(name);
        struct buf b = {0};
        buf_printf(&b, "%s_%d", base, k);
        name = buf_steal(&b);
    }
    if (name != base)
        free(base);
    json_object_set_new(used, name, json_true());
    return name;
}

/* Function names. Pass one gives every tool its natural name if no earlier tool (in sorted
 * order) or reserved word holds it; pass two gives the losers base_2, base_3, ... skipping
 * every name already taken, so a tool whose natural name happens to be "x_2" keeps it. */
static void sdk_assign_names(struct sdk_fn *fns, size_t n)
{
    json_t *used = json_object();
    for (const char *const *r = sdk_reserved; *r; r++)
        json_object_set_new(used, *r, json_true());
    char **base = xcalloc(n, sizeof *base);
    for (size_t i = 0; i < n; i++) {
        char *s = sdk__identifier_n(fns[i].server, fns[i].server_len);
        char *t = sdk__identifier_n(fns[i].tool, fns[i].tool_len);
        struct buf b = {0};
        buf_printf(&b, "%s_%s", s, t);
        base[i] = buf_steal(&b);
        free(s);
        free(t);
        if (!sdk_taken(used, base[i])) {
            json_object_set_new(used, base[i], json_true());
            fns[i].name = base[i];
            base[i] = NULL;
        }
    }
    for (size_t i = 0; i < n; i++)
        if (base[i])
            fns[i].name = sdk_claim(used, base[i]);
    free(base);
    json_decref(used);
}

/* Like sdk_claim, but a taken name is retried with a leading underscore ("_timeout_ms"):
 * for the names the generator adds itself, so the schema's own parameters keep theirs. */
static char *sdk_claim_internal(json_t *used, const char *base)
{
    struct buf b = {0};
    buf_appends(&b, base);
    while (sdk_taken(used, b.data)) {
        char *prev = buf_steal(&b);
        buf_printf(&b, "_%s", prev);
        free(prev);
    }
    json_object_set_new(used, b.data, json_true());
    return buf_steal(&b);
}

static void sdk_add_param(struct sdk_fn *fn, json_t *used, const char *key, size_t key_len,
                          json_t *prop, int required, json_t *root)
{
    struct sdk_param *p;
    fn->params = xrealloc(fn->params, (fn->nparams + 1) * sizeof *fn->params);
    p = &fn->params[fn->nparams++];
    memset(p, 0, sizeof *p);
    p->name = sdk_claim(used, sdk__identifier_n(key, key_len));
    p->key = xstrndup(key, key_len);
    p->key_len = key_len;
    p->type = sdk__py_type(prop, root, &p->has_none);
    json_t *d = json_object_get(prop, "description");
    if (!json_is_string(d))
        d = json_object_get(prop, "title");
    p->doc = json_is_string(d) ? sdk__clean_text(json_string_value(d), json_string_length(d), 1)
                               : xstrdup("");
    p->required = required;
}

/* Parameters: required ones in `properties` order, then keys that `required` names without
 * describing them (typed Any), then optional ones in `properties` order. Python names are
 * unique within the function and never shadow the body's own _args and _call; the timeout
 * keyword and the **extra catch-all take whatever names are left. */
static void sdk_build_params(struct sdk_fn *fn, json_t *schema)
{
    json_t *props = json_object_get(schema, "properties");
    json_t *required = json_object_get(schema, "required");
    json_t *used = json_pack("{s:b,s:b}", "_args", 1, "_call", 1);
    const char *key;
    size_t key_len;
    json_t *prop;
    if (!json_is_object(props))
        props = NULL;
    if (!json_is_array(required))
        required = NULL;
    json_object_keylen_foreach(props, key, key_len, prop)
    {
        if (sdk__is_required(required, key, key_len))
            sdk_add_param(fn, used, key, key_len, prop, 1, schema);
    }
    size_t i;
    json_t *r;
    json_array_foreach(required, i, r)
    {
        if (json_is_string(r) &&
            !json_object_getn(props, json_string_value(r), json_string_length(r)))
            sdk_add_param(fn, used, json_string_value(r), json_string_length(r), NULL, 1, schema);
    }
    json_object_keylen_foreach(props, key, key_len, prop)
    {
        if (!sdk__is_required(required, key, key_len))
            sdk_add_param(fn, used, key, key_len, prop, 0, schema);
    }
    fn->timeout_name = sdk_claim_internal(used, "timeout_ms");
    /* Only an explicit `additionalProperties: true` or schema lets unknown keywords through.
     * An absent one would also allow them by JSON Schema's letter, but a model's typo
     * (`qeury=`) silently dropped or forwarded costs far more than an honest TypeError. */
    json_t *ap = json_object_get(schema, "additionalProperties");
    fn->extra = json_is_true(ap) || json_is_object(ap);
    fn->extra_name = sdk_claim_internal(used, "extra");
    json_decref(used);
}

static char *sdk_tool_text(json_t *tool, const char *field)
{
    json_t *v = json_object_get(tool, field);
    if (!json_is_string(v) || json_string_length(v) == 0)
        v = json_object_get(json_object_get(tool, "annotations"), "title");
    if (!json_is_string(v) || json_string_length(v) == 0)
        v = json_object_get(tool, "title");
    if (!json_is_string(v))
        return xstrdup("");
    return sdk__clean_text(json_string_value(v), json_string_length(v), 0);
}

static void sdk_build_fn(struct sdk_fn *fn, json_t *config)
{
    json_t *tool = fn->tool_json;
    json_t *out_schema = json_object_get(tool, "outputSchema");
    sdk_build_params(fn, json_object_get(tool, "inputSchema"));
    /* No outputSchema: nothing is known about the result until the shape learner has seen
     * one (sdk_generate applies what it learned). */
    fn->returns = out_schema ? sdk__py_type(out_schema, out_schema, NULL) : xstrdup("Any");
    fn->mutation = sdk_tool_is_write(json_string_value(json_object_get(tool, "name")),
                                     json_object_get(tool, "annotations"), config);
    fn->doc = sdk_tool_text(tool, "description");
    fn->summary = sdk__summary(fn->doc);
}

/* Appends a type: as is for the description, quoted in sdk.py when it is not a plain
 * Python expression (annotations there are evaluated at import time). */
static void sdk_type_out(struct buf *b, const char *type, const char *suffix, int source)
{
    if (source && sdk__type_needs_quotes(type)) {
        struct buf t = {0};
        buf_printf(&t, "%s%s", type, suffix);
        sdk__py_str(b, t.data, t.len);
        buf_free(&t);
    } else {
        buf_printf(b, "%s%s", type, suffix);
    }
}

static void sdk_signature_as(struct buf *b, const struct sdk_fn *fn, int with_timeout, int source)
{
    int first = 1;
    buf_printf(b, "def %s(", fn->name);
    for (size_t i = 0; i < fn->nparams; i++, first = 0) {
        const struct sdk_param *p = &fn->params[i];
        buf_printf(b, "%s%s: ", first ? "" : ", ", p->name);
        sdk_type_out(b, p->type, p->required || p->has_none ? "" : " | None", source);
        if (!p->required)
            buf_appends(b, " = None");
    }
    if (with_timeout) {
        buf_printf(b, "%s*, %s: int | None = None", first ? "" : ", ", fn->timeout_name);
        first = 0;
    }
    if (fn->extra)
        buf_printf(b, "%s**%s: Any", first ? "" : ", ", fn->extra_name);
    buf_appends(b, ") -> ");
    sdk_type_out(b, fn->returns, "", source);
    buf_appends(b, ":");
}

void sdk__signature(struct buf *b, const struct sdk_fn *fn, int with_timeout)
{
    sdk_signature_as(b, fn, with_timeout, 0);
}

/* Appends text into a """docstring""": backslashes doubled, and a quote escaped whenever
 * another quote follows or the text ends, so no run of two unescaped quotes exists and the
 * closing delimiter cannot be forged. Lines after the first are indented by four spaces. */
static void sdk_docstring_body(struct buf *b, const char *text)
{
    for (const char *p = text; *p; p++) {
        if (*p == '\\')
            buf_appends(b, "\\\\");
        else if (*p == '"' && (p[1] == '"' || p[1] == '\0'))
            buf_appends(b, "\\\"");
        else if (*p == '\n')
            buf_appends(b, p[1] == '\n' ? "\n" : "\n    ");
        else
            buf_append(b, p, 1);
    }
}

static void sdk_emit_docstring(struct buf *b, const struct sdk_fn *fn)
{
    struct buf doc = {0};
    int documented = 0;
    buf_appends(&doc, fn->doc);
    for (size_t i = 0; i < fn->nparams; i++)
        documented += fn->params[i].doc[0] != '\0';
    if (documented) {
        buf_appends(&doc, doc.len ? "\n\nArgs:" : "Args:");
        for (size_t i = 0; i < fn->nparams; i++)
            if (fn->params[i].doc[0])
                buf_printf(&doc, "\n    %s: %s", fn->params[i].name, fn->params[i].doc);
    }
    if (doc.len) {
        int multi = memchr(doc.data, '\n', doc.len) != NULL;
        buf_appends(b, "    \"\"\"");
        sdk_docstring_body(b, doc.data);
        buf_appends(b, multi ? "\n    \"\"\"\n" : "\"\"\"\n");
    }
    buf_free(&doc);
}

static void sdk_emit_fn(struct buf *b, const struct sdk_fn *fn)
{
    buf_appends(b, "\n\n");
    sdk_signature_as(b, fn, 1, 1);
    buf_appends(b, "\n");
    sdk_emit_docstring(b, fn);
    /* The wire uses the schema's own keys, whatever the Python names became. Explicit
     * parameters come after **extra so a forwarded key cannot override them. */
    buf_appends(b, "    _args: dict[str, Any] = {");
    int first = 1;
    if (fn->extra) {
        buf_printf(b, "**%s", fn->extra_name);
        first = 0;
    }
    for (size_t i = 0; i < fn->nparams; i++) {
        const struct sdk_param *p = &fn->params[i];
        if (!p->required)
            continue;
        buf_appends(b, first ? "" : ", ");
        sdk__py_str(b, p->key, p->key_len);
        buf_printf(b, ": %s", p->name);
        first = 0;
    }
    buf_appends(b, "}\n");
    /* None means "not given": the server applies its own default. */
    for (size_t i = 0; i < fn->nparams; i++) {
        const struct sdk_param *p = &fn->params[i];
        if (p->required)
            continue;
        buf_printf(b, "    if %s is not None:\n        _args[", p->name);
        sdk__py_str(b, p->key, p->key_len);
        buf_printf(b, "] = %s\n", p->name);
    }
    buf_appends(b, "    return _call(");
    sdk__py_str(b, fn->server, fn->server_len);
    buf_appends(b, ", ");
    sdk__py_str(b, fn->tool, fn->tool_len);
    buf_printf(b, ", _args, %s)\n", fn->timeout_name);
}

/* Input schemas larger than this (compact JSON) are left out: the worker's literal
 * argument checks then skip that tool (the gateway and the server still check). */
#define SDK_SCHEMA_MAX (64 * 1024)

/* __codemcp_schemas__: {fn: inputSchema} for the validator's literal argument checks, as
 * one JSON text parsed at import (a Python literal of a big schema would cost more to
 * compile than json.loads costs to parse). */
static void sdk_emit_schemas(struct buf *b, struct sdk_fn *fns, size_t n)
{
    json_t *all = json_object();
    for (size_t i = 0; i < n; i++) {
        json_t *schema = json_object_get(fns[i].tool_json, "inputSchema");
        if (!json_is_object(schema))
            continue;
        char *text = json_dumps(schema, JSON_COMPACT | JSON_ENCODE_ANY);
        if (text && strlen(text) <= SDK_SCHEMA_MAX)
            json_object_set(all, fns[i].name, schema);
        free(text);
    }
    char *text = json_dumps(all, JSON_COMPACT);
    buf_appends(b, "# Input schemas for the pre-flight argument checks.\n"
                   "__codemcp_schemas__ = _json.loads(");
    sdk__py_str(b, text ? text : "{}", text ? strlen(text) : 2);
    buf_appends(b, ")\n");
    free(text);
    json_decref(all);
}

static char *sdk_emit_source(struct sdk_fn *fns, size_t n)
{
    struct buf b = {0};
    buf_appends(&b, "# Generated by codemcp from the connected MCP servers. Do not edit.\n"
                    "import json as _json\n"
                    "from typing import Any, Literal\n"
                    "from codemcp_rt.client import call as _call\n"
                    "\n"
                    "# Unknown keyword arguments raise TypeError: a function forwards **extra "
                    "only when its\n"
                    "# tool's schema allows additionalProperties explicitly.\n");
    for (size_t i = 0; i < n; i++)
        sdk_emit_fn(&b, &fns[i]);
    buf_appends(&b, "\n\n__codemcp_meta__ = {\n");
    for (size_t i = 0; i < n; i++) {
        buf_printf(&b, "    \"%s\": {\"server\": ", fns[i].name);
        sdk__py_str(&b, fns[i].server, fns[i].server_len);
        buf_appends(&b, ", \"tool\": ");
        sdk__py_str(&b, fns[i].tool, fns[i].tool_len);
        buf_printf(&b, ", \"mutation\": %s},\n", fns[i].mutation ? "True" : "False");
    }
    buf_appends(&b, "}\n\n");
    sdk_emit_schemas(&b, fns, n);
    buf_appends(&b, "\n__all__ = [\n");
    for (size_t i = 0; i < n; i++)
        buf_printf(&b, "    \"%s\",\n", fns[i].name);
    buf_appends(&b, "]\n");
    return buf_steal(&b);
}

static json_t *sdk_functions_json(struct sdk_fn *fns, size_t n)
{
    json_t *all = json_object();
    for (size_t i = 0; i < n; i++) {
        const struct sdk_fn *fn = &fns[i];
        json_t *params = json_array();
        for (size_t k = 0; k < fn->nparams; k++) {
            const struct sdk_param *p = &fn->params[k];
            json_array_append_new(params,
                                  json_pack("{s:s,s:s%,s:b,s:s}", "name", p->name, "key", p->key,
                                            p->key_len, "required", p->required, "type", p->type));
        }
        json_object_set_new(all, fn->name,
                            json_pack("{s:s%,s:s%,s:b,s:o,s:b,s:s,s:s,s:s}", "server", fn->server,
                                      fn->server_len, "tool", fn->tool, fn->tool_len, "mutation",
                                      fn->mutation, "params", params, "extra", fn->extra,
                                      "timeout_param", fn->timeout_name, "returns", fn->returns,
                                      "summary", fn->summary));
    }
    return all;
}

/* "name(params) -> type" per function: sdk__signature without "def " and the colon. */
static json_t *sdk_signatures_json(struct sdk_fn *fns, size_t n)
{
    json_t *all = json_object();
    for (size_t i = 0; i < n; i++) {
        struct buf b = {0};
        sdk__signature(&b, &fns[i], strcmp(fns[i].timeout_name, "timeout_ms") != 0);
        size_t skip = strncmp(b.data, "def ", 4) == 0 ? 4 : 0;
        size_t len = b.len - skip;
        if (len && b.data[b.len - 1] == ':')
            len--;
        json_object_set_new(all, fns[i].name, json_stringn(b.data + skip, len));
        buf_free(&b);
    }
    return all;
}

static void sdk_free_fns(struct sdk_fn *fns, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < fns[i].nparams; k++) {
            free(fns[i].params[k].name);
            free(fns[i].params[k].key);
            free(fns[i].params[k].type);
            free(fns[i].params[k].doc);
        }
        free(fns[i].params);
        free(fns[i].name);
        free(fns[i].extra_name);
        free(fns[i].timeout_name);
        free(fns[i].returns);
        free(fns[i].doc);
        free(fns[i].summary);
    }
    free(fns);
}

/* Collects the enabled tools of every server (unsorted). -1 on a malformed server entry;
 * *count is kept current so the caller frees what was collected either way. */
static int sdk_collect_tools(json_t *servers, struct sdk_fn **out, json_t ***configs, size_t *count)
{
    size_t si, ti, n = 0;
    json_t *entry, *tool;
    *count = 0;
    json_array_foreach(servers, si, entry)
    {
        json_t *server = json_object_get(entry, "server");
        json_t *config = json_object_get(entry, "config");
        if (!json_is_string(server))
            return -1;
        json_array_foreach(json_object_get(entry, "tools"), ti, tool)
        {
            json_t *name = json_object_get(tool, "name");
            if (!json_is_string(name))
                continue; /* not a tool anyone could call */
            json_t *cfg =
                json_object_getn(config, json_string_value(name), json_string_length(name));
            if (json_is_false(json_object_get(cfg, "enabled")))
                continue;
            *out = xrealloc(*out, (n + 1) * sizeof **out);
            *configs = xrealloc(*configs, (n + 1) * sizeof **configs);
            struct sdk_fn *fn = &(*out)[n];
            memset(fn, 0, sizeof *fn);
            fn->server = json_string_value(server);
            fn->server_len = json_string_length(server);
            fn->tool = json_string_value(name);
            fn->tool_len = json_string_length(name);
            fn->tool_json = tool;
            fn->order = n;
            (*configs)[n] = cfg;
            *count = ++n;
        }
    }
    return 0;
}

/* A learned exemplar that is one plain type (a text result is "str") becomes the return
 * type of a tool without an outputSchema. Returns the exemplars left for the description's
 * "# returns:" lines (a new reference, or NULL). */
static json_t *sdk_apply_learned(struct sdk_fn *fns, size_t n, json_t *shapes)
{
    static const char *const plain[] = {"str", "int", "float", "bool", NULL};
    if (!shapes)
        return NULL;
    json_t *rest = json_deep_copy(shapes);
    for (size_t i = 0; i < n; i++) {
        const char *ex = json_string_value(json_object_get(rest, fns[i].name));
        if (!ex || json_object_get(fns[i].tool_json, "outputSchema"))
            continue;
        for (const char *const *p = plain; *p; p++) {
            if (strcmp(ex, *p) == 0) {
                free(fns[i].returns);
                fns[i].returns = xstrdup(*p);
                json_object_del(rest, fns[i].name);
                break;
            }
        }
    }
    return rest;
}

int sdk_generate(json_t *servers, json_t *shapes, struct sdk_output *out)
{
    struct sdk_fn *fns = NULL;
    json_t **configs = NULL;
    size_t n = 0;
    int rc = -1;
    memset(out, 0, sizeof *out);
    if (!json_is_array(servers) || sdk_collect_tools(servers, &fns, &configs, &n) < 0)
        goto done;
    /* configs[] is indexed by input position: build before sorting. */
    for (size_t i = 0; i < n; i++)
        sdk_build_fn(&fns[i], configs[i]);
    if (n > 1)
        qsort(fns, n, sizeof *fns, sdk_fn_cmp);
    sdk_assign_names(fns, n);
    json_t *rest = sdk_apply_learned(fns, n, json_is_object(shapes) ? shapes : NULL);
    out->source = sdk_emit_source(fns, n);
    out->functions = sdk_functions_json(fns, n);
    out->description = sdk__describe(fns, n, rest);
    json_decref(rest);
    out->signatures = sdk_signatures_json(fns, n);
    rc = 0;
done:
    sdk_free_fns(fns, n);
    free(configs);
    return rc;
}

void sdk_output_free(struct sdk_output *out)
{
    free(out->source);
    free(out->description);
    json_decref(out->functions);
    json_decref(out->signatures);
    memset(out, 0, sizeof *out);
}
