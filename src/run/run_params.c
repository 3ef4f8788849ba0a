/* run_params — see run_params.h. */
#include "run_params.h"
#include "jsonfast.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct w {
    struct buf b;
    int first;
};

/* `"k":`, after a comma unless it is the first member (k: a literal, at most 40 bytes). */
static void key(struct w *w, const char *k)
{
    char t[48];
    size_t n = 0, kl = strlen(k);
    if (!w->first)
        t[n++] = ',';
    t[n++] = '"';
    memcpy(t + n, k, kl);
    n += kl;
    t[n++] = '"';
    t[n++] = ':';
    buf_append(&w->b, t, n);
}

/* One member: a value (v), a string (s), or raw text (raw). Left out when it cannot be written. */
static void member(struct w *w, const char *k, const json_t *v, const char *s, const char *raw)
{
    size_t at = w->b.len;
    key(w, k);
    int rc = 0;
    if (raw)
        buf_appends(&w->b, raw);
    else
        rc = jf_append(&w->b.data, &w->b.len, &w->b.cap, v, s, s ? strlen(s) : 0);
    if (rc < 0) {
        w->b.len = at;
        w->b.data[at] = '\0';
        return;
    }
    w->first = 0;
}

static void integer(struct w *w, const char *k, int64_t v)
{
    char num[24];
    fmt_i64(num, v);
    member(w, k, NULL, NULL, num);
}

char *run_params_text(const struct run_params *p, size_t *len)
{
    struct w w = {{0}, 1};
    buf_append(&w.b, "{", 1);
    if (p->run_id)
        member(&w, "run_id", NULL, p->run_id, NULL);
    if (p->ns_key)
        member(&w, "namespace", NULL, p->ns_key, NULL);
    if (p->code)
        member(&w, "code", NULL, p->code, NULL);
    integer(&w, "timeout_ms", p->timeout_ms);
    member(&w, "dry_run", NULL, NULL, p->dry_run ? "true" : "false");
    if (p->allow_mutations)
        member(&w, "allow_mutations", p->allow_mutations, NULL, NULL);
    member(&w, "enforce_mutations", NULL, NULL, p->enforce_mutations ? "true" : "false");
    integer(&w, "max_output_bytes", p->max_output_bytes);
    integer(&w, "max_result_bytes", p->max_output_bytes);
    member(&w, "reset", NULL, NULL, p->reset ? "true" : "false");
    member(&w, "validate", NULL, NULL, p->validate ? "true" : "false");
    if (json_array_size(p->disabled))
        member(&w, "disabled", p->disabled, NULL, NULL);
    if (json_array_size(p->unavailable))
        member(&w, "unavailable", p->unavailable, NULL, NULL);
    if (p->namespace_note && *p->namespace_note)
        member(&w, "namespace_note", NULL, p->namespace_note, NULL);
    member(&w, "namespace_fresh", NULL, NULL, p->namespace_fresh ? "true" : "false");
    if (p->drop_namespaces)
        member(&w, "drop_namespaces", p->drop_namespaces, NULL, NULL);
    if (p->policy)
        member(&w, "policy", p->policy, NULL, NULL);
    buf_append(&w.b, "}", 1);
    *len = w.b.len;
    return buf_steal(&w.b);
}
