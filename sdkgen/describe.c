/* describe — the execute_python tool description, and the prose helpers behind it (cleaning
 * upstream text, one-line summaries).
 *
 * The description is sent with every tools/list and so paid on every model turn: the intro
 * stays a handful of lines and each tool gets exactly a signature and a summary (plus a
 * learned "returns" exemplar when the shape learner has one). Pure: no I/O. */
#include "sdkgen_int.h"

#include <stdlib.h>
#include <string.h>

/* The intro: what the model must know to write a correct program on its first try. */
static const char sdk_intro[] =
    "Run Python 3 code that calls the connected MCP tools as plain functions; only what you "
    "return comes back.\n"
    "- The functions below are already in scope: call them directly, do not import them.\n"
    "- Each call is sent at once and returns a Pending that resolves on first use, so calls "
    "made before reading any result run concurrently.\n"
    "- The value of `result` (or of the last expression) is returned; print() output is "
    "captured.\n"
    "- Variables persist between runs of the same session; reset: true starts fresh.\n"
    "- gather(*pendings) never raises: it returns [{\"ok\": True, \"value\": ...} or "
    "{\"ok\": False, \"error\": ...}, ...].\n"
    "- A failed call raises ToolError (.kind, .server, .tool).\n"
    "- Every function also accepts timeout_ms=<int>.\n"
    "- [write] tools can be previewed with dry_run: true and may have to be listed in "
    "allow_mutations.\n"
    "\n"
    "Available tools (signature + summary):\n";

static int sdk_is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n';
}

/* First pass of sdk__clean_text: unify line ends, drop control characters. */
static void sdk_normalize(const char *s, size_t n, struct buf *out)
{
    size_t i = 0;
    while (i < n) {
        uint32_t cp = sdk__utf8_next(s, n, &i);
        if (cp == '\r') {
            if (i < n && s[i] == '\n')
                i++;
            buf_appends(out, "\n");
        } else if (cp == '\n' || cp == 0x85 || cp == 0x2028 || cp == 0x2029) {
            buf_appends(out, "\n");
        } else if (cp == '\t') {
            buf_appends(out, "\t");
        } else if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {
            continue; /* NUL, escapes, bells: nothing a reader needs */
        } else {
            sdk__utf8_put(out, cp);
        }
    }
}

char *sdk__clean_text(const char *s, size_t n, int one_line)
{
    struct buf tmp = {0}, out = {0};
    sdk_normalize(s ? s : "", s ? n : 0, &tmp);
    const char *p = tmp.data ? tmp.data : "";
    if (one_line) {
        int pending = 0;
        for (size_t i = 0; i < tmp.len; i++) {
            if (sdk_is_blank(p[i])) {
                pending = 1;
                continue;
            }
            if (pending && out.len)
                buf_appends(&out, " ");
            pending = 0;
            buf_append(&out, p + i, 1);
        }
    } else {
        /* Line by line: trailing blanks trimmed, leading blank lines dropped, runs of blank
         * lines kept as one, trailing blank lines dropped. */
        size_t start = 0;
        int blank_run = 0;
        while (start <= tmp.len) {
            const char *nl = memchr(p + start, '\n', tmp.len - start);
            size_t end = nl ? (size_t)(nl - p) : tmp.len;
            size_t len = end - start;
            while (len && (p[start + len - 1] == ' ' || p[start + len - 1] == '\t'))
                len--;
            if (len == 0) {
                blank_run = out.len > 0;
            } else {
                if (out.len)
                    buf_appends(&out, blank_run ? "\n\n" : "\n");
                size_t lead = 0;
                if (out.len == 0) /* the first line is not indented in a docstring */
                    while (lead < len && (p[start + lead] == ' ' || p[start + lead] == '\t'))
                        lead++;
                buf_append(&out, p + start + lead, len - lead);
                blank_run = 0;
            }
            start = end + 1;
        }
    }
    buf_free(&tmp);
    return buf_steal(&out);
}

/* Where the first sentence of a one-line text ends (just after its punctuation), or len.
 * A period ends a sentence only before a space and a word that does not start lowercase,
 * and not right after an abbreviation-like word ("e.g.", "v2.", single letters). */
static size_t sdk_first_sentence(const char *s, size_t len)
{
    for (size_t i = 1; i + 2 < len; i++) {
        char c = s[i];
        if ((c != '.' && c != '!' && c != '?') || s[i + 1] != ' ')
            continue;
        if (s[i + 2] >= 'a' && s[i + 2] <= 'z')
            continue;
        if (c == '.') {
            size_t w = i;
            while (w > 0 && s[w - 1] != ' ')
                w--;
            if (i - w < 2 || memchr(s + w, '.', i - w))
                continue;
        }
        return i + 1;
    }
    return len;
}

/* Cuts s (one line) to at most max code points, ending in "…" when cut; prefers a word
 * boundary in the last quarter. Returns a new string. */
static char *sdk_cap(const char *s, size_t max)
{
    size_t len = strlen(s), i = 0, cps = 0, cut = 0, last_space = 0, space_cp = 0;
    while (i < len) {
        if (cps == max - 1)
            cut = i;
        if (s[i] == ' ' && cps < max - 1) {
            last_space = i;
            space_cp = cps;
        }
        sdk__utf8_next(s, len, &i);
        cps++;
    }
    if (cps <= max)
        return xstrdup(s);
    if (last_space && space_cp >= (max - 1) - (max - 1) / 4)
        cut = last_space;
    while (cut > 0 && strchr(" ,;:-", s[cut - 1]))
        cut--;
    struct buf b = {0};
    buf_append(&b, s, cut);
    buf_appends(&b, "\xE2\x80\xA6"); /* … */
    return buf_steal(&b);
}

char *sdk__summary(const char *desc)
{
    char *clean = sdk__clean_text(desc, desc ? strlen(desc) : 0, 0);
    char *nl = strchr(clean, '\n');
    char *line = sdk__clean_text(clean, nl ? (size_t)(nl - clean) : strlen(clean), 1);
    line[sdk_first_sentence(line, strlen(line))] = '\0';
    char *out = sdk_cap(line, SDK_SUMMARY_MAX);
    free(line);
    free(clean);
    return out;
}

char *sdk__describe(struct sdk_fn *fns, size_t n, json_t *shapes)
{
    struct buf b = {0};
    buf_appends(&b, sdk_intro);
    if (n == 0)
        buf_appends(&b, "(no upstream tools connected)\n");
    for (size_t i = 0; i < n; i++) {
        struct sdk_fn *fn = &fns[i];
        /* The intro promises timeout_ms; only a tool that owns a timeout_ms parameter of
         * its own shows the renamed keyword. */
        sdk__signature(&b, fn, strcmp(fn->timeout_name, "timeout_ms") != 0);
        buf_printf(&b, "\n    # %s%s\n", fn->mutation ? "[write] " : "",
                   fn->summary[0] ? fn->summary : "(no description)");
        json_t *shape = json_object_get(shapes, fn->name);
        if (json_is_string(shape)) {
            char *one = sdk__clean_text(json_string_value(shape), json_string_length(shape), 1);
            char *capped = sdk_cap(one, SDK_SHAPE_MAX);
            if (capped[0])
                buf_printf(&b, "    # returns: %s\n", capped);
            free(capped);
            free(one);
        }
    }
    if (b.len && b.data[b.len - 1] == '\n')
        b.data[--b.len] = '\0';
    return buf_steal(&b);
}
