/* describe — the execute_python tool description, and the prose helpers behind it (cleaning
 * upstream text, one-line summaries).
 *
 * The description is sent with every tools/list and so paid on every model turn. Two forms:
 * the full listing (sdk__describe: the intro, then exactly a signature and a summary per tool,
 * plus a learned "returns" exemplar when the shape learner has one) and the budgeted one
 * (sdk_describe_budget: a byte budget that clients do not cut, with servers, chosen
 * signatures, compact names and the overflow for the server instructions). Which functions
 * to show is decided here; how one signature reads is types.c / sdk__signature's business.
 * Pure: no I/O. */
#include "sdkgen.h"
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
    "- Variables persist in the `namespace` each result names: pass it back to continue; reset: "
    "true starts fresh.\n"
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

/* ---- the budgeted description ------------------------------------------------------------ */

/* The intro of the budgeted description: the full intro's facts in fewer words, plus the
 * discovery functions, since most functions are not listed. */
static const char sdk_intro_short[] =
    "Run Python 3 calling the connected MCP tools as plain functions (in scope, no imports); "
    "only what you return comes back.\n"
    "- Calls return Pendings at once and run concurrently until read. `result` or the last "
    "expression is returned; print() is captured; variables persist (pass back the result's "
    "`namespace`; reset: true clears).\n"
    "- gather(*p) never raises: [{\"ok\": True, \"value\": v} | {\"ok\": False, \"error\": e}]. "
    "Failed calls raise ToolError (.kind .server .tool). All take timeout_ms=.\n"
    "- [write] tools: preview with dry_run: true; may need allow_mutations.\n"
    "- Every function works, listed or not: search_tools(\"task words\") -> [{name, signature, "
    "summary, server}]; describe(\"fn\" or \"server\") -> docs.\n";

/* Summaries in the budgeted description are cut to this many code points. */
#define SDK_BUDGET_SUMMARY 64

struct sdk_pick {
    const char *name;
    const char *server;
    json_t *fn;
    int shown; /* 1: signature in the description, 2: name in the description, 3: name in
                  the instructions */
};

static void sdk_servers_line(struct buf *b, json_t *servers, size_t nfns)
{
    size_t i;
    json_t *s;
    buf_printf(b, "Servers (%zu functions): ", nfns);
    int first = 1;
    json_array_foreach(servers, i, s)
    {
        const char *name = json_string_value(json_object_get(s, "server"));
        const char *state = json_string_value(json_object_get(s, "state"));
        if (!name)
            continue;
        json_int_t n = json_integer_value(json_object_get(s, "tools"));
        buf_appends(b, first ? "" : ", ");
        first = 0;
        buf_appends(b, name);
        if (state && strcmp(state, "ready") == 0)
            buf_printf(b, " %lld", (long long)n);
        else if (n > 0)
            buf_printf(b, " %lld (%s)", (long long)n, state ? state : "?");
        else
            buf_printf(b, " (%s)", state ? state : "?");
    }
    buf_appends(b, first ? "none connected.\n" : ".\n");
}

char *sdk_servers_note(json_t *servers)
{
    struct buf b = {0};
    size_t i;
    json_t *s;
    json_array_foreach(servers, i, s)
    {
        const char *name = json_string_value(json_object_get(s, "server"));
        const char *state = json_string_value(json_object_get(s, "state"));
        if (!name || !state || strcmp(state, "ready") == 0 || strcmp(state, "disabled") == 0)
            continue;
        buf_printf(&b, "%s%s (%s)", b.len ? ", " : "\nNot ready: ", name, state);
    }
    if (b.len)
        buf_appends(&b, "; their functions appear when they connect.");
    return b.data ? buf_steal(&b) : xstrdup("");
}

static void sdk_sort_by_length(struct sdk_pick *p, size_t n)
{
    for (size_t i = 1; i < n; i++) { /* insertion sort: stable, and n is one server's tools */
        struct sdk_pick x = p[i];
        size_t len = strlen(x.name), j = i;
        while (j > 0 && strlen(p[j - 1].name) > len) {
            p[j] = p[j - 1];
            j--;
        }
        p[j] = x;
    }
}

/* Order of preference: the priority names, then round-robin over the servers (each server's
 * functions in module order), so every server gets some signatures. */
static struct sdk_pick *sdk_order(json_t *functions, json_t *priority, size_t *count)
{
    size_t n = json_object_size(functions), k = 0, i;
    struct sdk_pick *all = xcalloc(n ? n : 1, sizeof *all), *out = xcalloc(n ? n : 1, sizeof *out);
    const char *name;
    json_t *fn, *p;
    json_object_foreach(functions, name, fn)
    {
        all[k].name = name;
        all[k].fn = fn;
        const char *srv = json_string_value(json_object_get(fn, "server"));
        all[k].server = srv ? srv : "";
        k++;
    }
    n = k;
    k = 0;
    json_t *taken = json_object();
    json_array_foreach(priority, i, p)
    {
        const char *want = json_string_value(p);
        if (!want || json_object_get(taken, want))
            continue;
        for (size_t j = 0; j < n; j++)
            if (strcmp(all[j].name, want) == 0) {
                out[k++] = all[j];
                json_object_set_new(taken, want, json_true());
                break;
            }
    }
    /* Round-robin: pass r takes the r-th remaining function of every server. `all` is in
     * module order, which groups each server's functions: seg[] holds where each begins. */
    size_t *seg = xcalloc(n + 1, sizeof *seg), *cursor = xcalloc(n + 1, sizeof *cursor);
    size_t nseg = 0;
    for (size_t j = 0; j < n; j++)
        if (j == 0 || strcmp(all[j].server, all[j - 1].server) != 0)
            seg[nseg++] = j;
    seg[nseg] = n;
    /* Within a server, shorter names first: the general operations (repos_get, read_file)
     * before the specialised ones. Stable: equal lengths keep module order. */
    for (size_t g = 0; g < nseg; g++)
        sdk_sort_by_length(all + seg[g], seg[g + 1] - seg[g]);
    memcpy(cursor, seg, nseg * sizeof *cursor);
    for (int progress = 1; progress;) {
        progress = 0;
        for (size_t s = 0; s < nseg; s++) {
            while (cursor[s] < seg[s + 1] && json_object_get(taken, all[cursor[s]].name))
                cursor[s]++;
            if (cursor[s] < seg[s + 1]) {
                out[k++] = all[cursor[s]];
                json_object_set_new(taken, all[cursor[s]].name, json_true());
                cursor[s]++;
                progress = 1;
            }
        }
    }
    free(seg);
    free(cursor);
    json_decref(taken);
    free(all);
    *count = k;
    return out;
}

static void sdk_sig_line(struct buf *b, const struct sdk_pick *p, json_t *signatures)
{
    static const char dflt[] = " -> Any"; /* what no declared or learned type gives */
    const char *sig = json_string_value(json_object_get(signatures, p->name));
    const char *summary = json_string_value(json_object_get(p->fn, "summary"));
    char *cut = sdk_cap(summary ? summary : "", SDK_BUDGET_SUMMARY);
    size_t len = sig ? strlen(sig) : 0;
    if (len > sizeof dflt - 1 && strcmp(sig + len - (sizeof dflt - 1), dflt) == 0)
        len -= sizeof dflt - 1;
    buf_printf(b, "%.*s  # %s%s\n", (int)(sig ? len : strlen(p->name)), sig ? sig : p->name,
               json_is_true(json_object_get(p->fn, "mutation")) ? "[write] " : "", cut);
    free(cut);
}

/* The shown==want names grouped by server, "  server_: a, b\n" per server, within `room`
 * bytes; marks each name written as `mark`. Returns how many were written. */
/* For a server with too many functions to name: "  github_ (1218): actions_* 184, ...\n",
 * groups by the first word after the prefix, biggest first, within room bytes. */
static void sdk_groups(struct buf *b, struct sdk_pick *picks, size_t n, int want, const char *srv,
                       const char *prefix, size_t room)
{
    json_t *groups = json_object(), *order = json_array();
    size_t plen = strlen(prefix), total = 0;
    for (size_t j = 0; j < n; j++) {
        if (picks[j].shown != want || strcmp(picks[j].server, srv) != 0)
            continue;
        const char *s = picks[j].name;
        if (strncmp(s, prefix, plen) == 0 && s[plen] == '_')
            s += plen + 1;
        const char *us = strchr(s, '_');
        char word[64];
        snprintf(word, sizeof word, "%.*s", (int)(us ? (size_t)(us - s) : strlen(s)), s);
        json_t *c = json_object_get(groups, word);
        if (!c)
            json_array_append_new(order, json_string(word));
        json_object_set_new(groups, word, json_integer(c ? json_integer_value(c) + 1 : 1));
        total++;
    }
    size_t start = b->len;
    buf_printf(b, "  %s_ (%zu more, by group): ", prefix, total);
    size_t first = b->len;
    /* biggest groups first: repeated selection, fine for a few hundred groups */
    for (;;) {
        const char *best = NULL;
        json_int_t best_n = 0;
        size_t i;
        json_t *w;
        json_array_foreach(order, i, w)
        {
            json_int_t c = json_integer_value(json_object_get(groups, json_string_value(w)));
            if (c > best_n) {
                best_n = c;
                best = json_string_value(w);
            }
        }
        if (!best)
            break;
        char item[96];
        snprintf(item, sizeof item, "%s%s_* %lld", b->len > first ? ", " : "", best,
                 (long long)best_n);
        if (b->len - start + strlen(item) + 6 <= room)
            buf_appends(b, item);
        json_object_set_new(groups, best, json_integer(0));
    }
    if (b->len == first) {
        b->len = start;
        if (b->data)
            b->data[b->len] = '\0';
    } else {
        buf_appends(b, "\n");
    }
    json_decref(groups);
    json_decref(order);
}

/* Whether server srv's unlisted functions are too many to name within room (description
 * only): it then gets its groups instead. */
static int sdk_wants_groups(struct sdk_pick *picks, size_t n, int want, const char *srv,
                            size_t plen, size_t room)
{
    size_t cost = 0, have = 0;
    for (size_t j = 0; j < n; j++)
        if (picks[j].shown == want && strcmp(picks[j].server, srv) == 0) {
            cost += strlen(picks[j].name) - plen + 1;
            have++;
        }
    return have > 40 && cost > room / 2;
}

/* The shown==want names grouped by server, "  server_: a, b\n" per server, within `room`
 * bytes; marks each name written as `mark`. With mark 2 (the description) a server with
 * too many to name gets a line of its groups instead (first, within a third of the room). Returns
 * how many lines were written. */
static size_t sdk_names(struct buf *b, struct sdk_pick *picks, size_t n, int want, int mark,
                        size_t room, const char *header)
{
    size_t start = b->len, written = 0;
    size_t hlen = strlen(header);
    if (room <= hlen + 8)
        return 0;
    buf_appends(b, header);
    /* Servers in the order their first candidate appears; each server once per pass. */
    for (int pass = 0; pass < (mark == 2 ? 2 : 1); pass++) {
        json_t *done = json_object();
        for (size_t i = 0; i < n; i++) {
            const char *srv = picks[i].server;
            if (picks[i].shown != want || json_object_get(done, srv))
                continue;
            json_object_set_new(done, srv, json_true());
            char *prefix = sdk_identifier(srv);
            size_t plen = strlen(prefix);
            int groups = mark == 2 && sdk_wants_groups(picks, n, want, srv, plen, room);
            if (groups != (pass == 0 && mark == 2)) {
                free(prefix);
                continue;
            }
            size_t before = b->len;
            if (groups) {
                size_t left = room - (b->len - start);
                sdk_groups(b, picks, n, want, srv, prefix, left < room / 3 ? left : room / 3);
                written += b->len > before;
                free(prefix);
                continue;
            }
            buf_printf(b, "  %s_: ", prefix);
            size_t names_start = b->len;
            for (size_t j = i; j < n; j++) {
                if (picks[j].shown != want || strcmp(picks[j].server, srv) != 0)
                    continue;
                const char *short_name = picks[j].name;
                if (strncmp(short_name, prefix, plen) == 0 && short_name[plen] == '_')
                    short_name += plen + 1;
                size_t add = strlen(short_name) + (b->len > names_start ? 2 : 0) + 1;
                if (b->len - start + add > room)
                    continue; /* a shorter name may still fit */
                buf_printf(b, "%s%s", b->len > names_start ? ", " : "", short_name);
                picks[j].shown = mark;
            }
            if (b->len == names_start) {
                b->len = before; /* nothing of this server fitted */
                b->data[b->len] = '\0';
            } else {
                buf_appends(b, "\n");
                written++;
            }
            free(prefix);
        }
        json_decref(done);
    }
    if (!written) {
        b->len = start;
        if (b->data)
            b->data[b->len] = '\0';
    }
    return written;
}

/* How many of the n picks carry `mark`. */
static size_t sdk_count(const struct sdk_pick *picks, size_t n, int mark)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += picks[i].shown == mark;
    return k;
}

void sdk_describe_budget(json_t *functions, json_t *signatures, json_t *servers, json_t *priority,
                         size_t max_bytes, size_t instr_max, char **description,
                         char **instructions)
{
    struct buf b = {0};
    size_t n = 0;
    struct sdk_pick *picks = sdk_order(functions, priority, &n);
    buf_appends(&b, sdk_intro_short);
    sdk_servers_line(&b, servers, n);
    /* The closing line, reserved up front: "+N more (not listed): search_tools(...)". */
    static const char wait_note[] = "\nServers still connecting: call their functions anyway "
                                    "(the program waits for them).";
    int connecting = 0;
    size_t si;
    json_t *sv;
    json_array_foreach(servers, si, sv)
    {
        const char *st = json_string_value(json_object_get(sv, "state"));
        connecting |= st && strcmp(st, "connecting") == 0;
    }
    const size_t tail_reserve = 96 + (connecting ? sizeof wait_note - 1 : 0);
    size_t room = max_bytes > b.len + tail_reserve ? max_bytes - b.len - tail_reserve : 0;
    /* A signature is taken while the names still unlisted fit next to it (grouped by server,
     * about their length + 2 each), but names never claim more than half the room, so big
     * catalogs still get signatures. */
    size_t names_cost = 0;
    for (size_t i = 0; i < n; i++)
        names_cost += strlen(picks[i].name) - strlen(picks[i].server) + 2;
    names_cost += 16 * json_array_size(servers) + 80;
    size_t sig_start = b.len, shown_sigs = 0;
    static const char sig_header[] = "Functions (signature  # summary):\n";
    struct buf line = {0};
    for (size_t i = 0; i < n; i++) {
        buf_reset(&line);
        sdk_sig_line(&line, &picks[i], signatures);
        size_t name_len = strlen(picks[i].name) - strlen(picks[i].server) + 2;
        size_t names_after = names_cost - name_len;
        size_t names_room = names_after < room / 2 ? names_after : room / 2;
        size_t used = b.len - sig_start + (shown_sigs ? 0 : sizeof sig_header - 1);
        if (used + line.len + names_room > room)
            continue;
        if (!shown_sigs)
            buf_appends(&b, sig_header);
        buf_append(&b, line.data, line.len);
        picks[i].shown = 1;
        names_cost = names_after;
        shown_sigs++;
    }
    buf_free(&line);
    size_t left = max_bytes > b.len + tail_reserve ? max_bytes - b.len - tail_reserve : 0;
    sdk_names(&b, picks, n, 0, 2, left,
              "Other functions (server prefix + name; describe(name) for the "
              "signature):\n");
    size_t rest = n - shown_sigs - sdk_count(picks, n, 2);
    if (rest)
        buf_printf(&b,
                   "+%zu more not listed: search_tools(\"...\") or describe(\"<server>\") "
                   "inside the program.",
                   rest);
    else if (n)
        buf_appends(&b, "describe(name) gives a function's full docs and result shape.");
    else
        buf_appends(&b, "(no upstream tools connected yet)");
    if (connecting)
        buf_appends(&b, wait_note);
    *description = buf_steal(&b);
    if (instructions) {
        struct buf ib = {0};
        /* Clients that defer tool descriptions (Claude Code's tool search) show only these
         * instructions up front: they say what the tool is and which servers stand behind it.
         * They are written once, at initialize (the spec has no way to change them later),
         * so they send the model to what is live: the tool's description (listed again after
         * tools/list_changed) and search_tools/describe (which read the current catalog). */
        buf_appends(&ib, "codemcp: execute_python runs one Python program in which every tool of "
                         "the servers below is a plain function <server>_<tool>(...); "
                         "search_tools(\"task words\") and describe(\"name\" or \"server\") "
                         "inside the program find and document any of them (the live catalog: "
                         "servers that connect later too). Images, audio and resources come back "
                         "as Content objects: return them (result = [text, image]) to show them; "
                         "read_resource(uri) reads a server's resource.\n");
        sdk_servers_line(&ib, servers, n);
        if (connecting)
            buf_appends(&ib, wait_note + 1), buf_appends(&ib, "\n");
        if (rest)
            buf_appends(&ib, "Not in the tool's description:\n");
        size_t ihead = ib.len;
        size_t more = 0;
        if (rest && instr_max > ihead + 80) {
            sdk_names(&ib, picks, n, 0, 3, instr_max - ihead - 80, "");
            more = sdk_count(picks, n, 3);
        }
        if (rest - more)
            buf_printf(&ib,
                       "+%zu more: search_tools(\"...\") / describe(\"<server>\") inside "
                       "the program.",
                       rest - more);
        else
            buf_appends(&ib, "describe(name) inside the program gives a function's full docs.");
        *instructions = buf_steal(&ib);
    }
    free(picks);
}
