/* inbox — see inbox.h. Not thread-safe: wsclient holds its lock around every call except
 * inb_classify(). */
#include "inbox.h"
#include "ctlreply.h"

#include "log.h"
#include "util.h"

#include <jansson.h>

#include <stdlib.h>
#include <string.h>

#define INB_BUCKETS 256
#define INB_EARLY   16
#define INB_DEPTH   256 /* deeper nesting goes to jansson */
/* Longer answers to calls are classified from their head (inb_reply_head). */
#define INB_HEAD_ONLY 65536

/* A reply that arrived (text != NULL) or one nobody wants any more (forgotten). */
struct inb_reply {
    struct inb_reply *next;
    char *id;
    char *text;
    size_t len;
    int forgotten;
};

static struct {
    struct inb_reply *replies[INB_BUCKETS];
    struct inb_msg *req_head, **req_tail;
    char *current_run;
    char *reason;    /* pending interrupt reason for current_run */
    int interrupted; /* the main thread was told about current_run already */
    /* Cancels for runs that were not current when they arrived: the run may simply not
     * have started yet (its request still queued). Small ring, oldest overwritten. */
    struct {
        char *run_id;
        const char *reason;
    } early[INB_EARLY];
    unsigned early_next;
} inb;

/* ---- classification (no state) ----------------------------------------------------- */

/* What the top-level scan found. Spans point into the text. */
struct inb_scan {
    const char *id;
    size_t id_len;
    int id_kind; /* 0 none, 1 plain string, 2 plain integer, 3 other (null, real, ...) */
    const char *method;
    size_t method_len;
    int has_method, has_result;
    int request; /* a request whatever the rest says (see inb_scan) */
};

static const char *js_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* Skips the string starting at p (on its quote). Returns the byte after the closing quote
 * or NULL; *escaped tells whether it held a backslash. Long strings cost two memchr. */
static const char *js_str(const char *p, const char *e, int *escaped)
{
    *escaped = 0;
    p++;
    for (;;) {
        const char *q = memchr(p, '"', (size_t)(e - p));
        if (!q)
            return NULL;
        const char *b = memchr(p, '\\', (size_t)(q - p));
        if (!b)
            return q + 1;
        *escaped = 1;
        if (b + 1 >= e)
            return NULL;
        p = b + 2; /* the escaped character, maybe a quote, is skipped; \uXXXX is harmless */
    }
}

static const char *js_value(const char *p, const char *e, int depth);

/* Skips an object or array starting at p. */
static const char *js_container(const char *p, const char *e, int depth)
{
    char close = *p == '{' ? '}' : ']';
    int obj = *p == '{', esc;
    if (depth > INB_DEPTH)
        return NULL;
    p = js_ws(p + 1, e);
    if (p < e && *p == close)
        return p + 1;
    for (;;) {
        if (obj) {
            if (p >= e || *p != '"' || !(p = js_str(p, e, &esc)))
                return NULL;
            p = js_ws(p, e);
            if (p >= e || *p != ':')
                return NULL;
            p = js_ws(p + 1, e);
        }
        if (!(p = js_value(p, e, depth + 1)))
            return NULL;
        p = js_ws(p, e);
        if (p < e && *p == ',') {
            p = js_ws(p + 1, e);
            continue;
        }
        return p < e && *p == close ? p + 1 : NULL;
    }
}

static const char *js_value(const char *p, const char *e, int depth)
{
    int esc;
    if (p >= e)
        return NULL;
    switch (*p) {
    case '"':
        return js_str(p, e, &esc);
    case '{':
    case '[':
        return js_container(p, e, depth);
    case 't':
        return e - p >= 4 && memcmp(p, "true", 4) == 0 ? p + 4 : NULL;
    case 'f':
        return e - p >= 5 && memcmp(p, "false", 5) == 0 ? p + 5 : NULL;
    case 'n':
        return e - p >= 4 && memcmp(p, "null", 4) == 0 ? p + 4 : NULL;
    default: {
        const char *s = p;
        while (p < e && (strchr("0123456789+-.eE", *p) && *p))
            p++;
        return p > s ? p : NULL;
    }
    }
}

/* Scans the top-level object's keys. Returns 0, or -1 for anything it does not handle
 * (not an object, malformed, escaped id, deep nesting): jansson decides then. */
static int inb_scan(const char *text, size_t len, struct inb_scan *s)
{
    const char *e = text + len, *p = js_ws(text, e);
    int esc;
    memset(s, 0, sizeof(*s));
    if (p >= e || *p != '{')
        return -1;
    p = js_ws(p + 1, e);
    if (p < e && *p == '}')
        return js_ws(p + 1, e) == e ? 0 : -1;
    for (;;) {
        const char *k = p;
        if (p >= e || *p != '"' || !(p = js_str(p, e, &esc)) || esc)
            return -1;
        size_t klen = (size_t)(p - k) - 2;
        k++;
        p = js_ws(p, e);
        if (p >= e || *p != ':')
            return -1;
        const char *v = js_ws(p + 1, e);
        if (!(p = js_value(v, e, 1)))
            return -1;
        if (klen == 2 && memcmp(k, "id", 2) == 0) {
            s->id = v;
            s->id_len = (size_t)(p - v);
            if (*v == '"') {
                js_str(v, p, &esc);
                if (esc)
                    return -1; /* let jansson decode it */
                s->id_kind = 1;
                s->id++;
                s->id_len -= 2;
            } else {
                size_t i = *v == '-' ? 1 : 0;
                while (i < s->id_len && v[i] >= '0' && v[i] <= '9')
                    i++;
                if (i == s->id_len && s->id_len <= 18 && (v[0] != '0' || s->id_len == 1) &&
                    v[0] != '-')
                    s->id_kind = 2;
                else if (*v == '-' || (*v >= '0' && *v <= '9'))
                    return -1; /* negative, huge or real: jansson's rules apply */
                else
                    s->id_kind = 3;
            }
        } else if (klen == 6 && memcmp(k, "method", 6) == 0) {
            s->has_method = 1;
            s->method = NULL;
            if (*v == '"') {
                js_str(v, p, &esc);
                if (!esc) {
                    s->method = v + 1;
                    s->method_len = (size_t)(p - v) - 2;
                }
            }
            /* A method that is not "cancel" makes this a request, unless a later duplicate
             * "method" says "cancel" (the last one counts), which needs the raw bytes
             * "cancel" (an escaped form is not a plain method either): without them, the
             * rest (a run's params, its code) need not be walked. */
            if (!(s->method && s->method_len == 6 && memcmp(s->method, "cancel", 6) == 0) &&
                !memmem(p, (size_t)(e - p), "\"cancel\"", 8)) {
                s->request = 1;
                return 0;
            }
        } else if ((klen == 6 && memcmp(k, "result", 6) == 0) ||
                   (klen == 5 && memcmp(k, "error", 5) == 0)) {
            s->has_result = 1;
        }
        p = js_ws(p, e);
        if (p < e && *p == ',') {
            p = js_ws(p + 1, e);
            continue;
        }
        if (p < e && *p == '}')
            return js_ws(p + 1, e) == e ? 0 : -1;
        return -1;
    }
}

/* Fills a cancel's run id and reason from its params (borrowed). */
static void inb_cancel_params(struct inb_msg *m, json_t *params)
{
    const char *run_id = json_string_value(json_object_get(params, "run_id"));
    const char *reason = json_string_value(json_object_get(params, "reason"));
    m->reason = reason && strcmp(reason, "timeout") == 0 ? "timeout" : "cancelled";
    if (run_id) {
        m->run_id = xstrdup(run_id);
        m->kind = INB_CANCEL;
    } else {
        m->kind = INB_DROP;
    }
}

/* The old, complete way: parse the whole message. */
static void inb_classify_jansson(struct inb_msg *m)
{
    json_error_t err;
    json_t *msg = json_loadb(m->text, m->len, 0, &err); /* owned */
    m->kind = INB_REQUEST;
    if (json_is_object(msg)) {
        json_t *method = json_object_get(msg, "method"); /* borrowed */
        json_t *id = json_object_get(msg, "id");         /* borrowed */
        if (!method && id &&
            (json_object_get(msg, "result") != NULL || json_object_get(msg, "error") != NULL)) {
            char key[32];
            const char *k = json_string_value(id);
            if (!k && json_is_integer(id)) {
                snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT, json_integer_value(id));
                k = key;
            }
            m->kind = k ? INB_REPLY : INB_DROP;
            if (k)
                m->id = xstrdup(k);
        } else if (json_is_string(method) && strcmp(json_string_value(method), "cancel") == 0) {
            inb_cancel_params(m, json_object_get(msg, "params"));
        }
    }
    json_decref(msg);
}

/* The head of an answer to a call as the gateway writes it around the result's bytes
 * ({"jsonrpc":"2.0","id":"<id>","result":...}, calls.c): its id (no escape), so a result of
 * many MB is not walked here; the caller parses it whole anyway, and says when it is not a
 * result it can read. NULL: not that head. */
static char *inb_reply_head(const char *t, size_t len)
{
    static const char head[] = CTL_REPLY_HEAD "\"", mid[] = "\"" CTL_REPLY_MID;
    size_t h = sizeof(head) - 1, md = sizeof(mid) - 1;
    if (len < h + md + 2 || memcmp(t, head, h) != 0 || t[len - 1] != '}')
        return NULL;
    const char *id = t + h, *e = t + len, *q = id;
    while (q < e && q - id < 64 && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20)
        q++;
    if (q == id || (size_t)(e - q) < md + 1 || memcmp(q, mid, md) != 0)
        return NULL;
    return xstrndup(id, (size_t)(q - id));
}

struct inb_msg *inb_classify(char *text, size_t len)
{
    struct inb_msg *m = xcalloc(1, sizeof(*m));
    struct inb_scan s;
    m->text = text;
    m->len = len;
    if (len > INB_HEAD_ONLY && (m->id = inb_reply_head(text, len))) {
        m->kind = INB_REPLY;
    } else if (inb_scan(text, len, &s) < 0) {
        inb_classify_jansson(m);
    } else if (s.request) {
        m->kind = INB_REQUEST;
    } else if (!s.has_method && s.id_kind && s.has_result) {
        m->kind = s.id_kind == 3 ? INB_DROP : INB_REPLY;
        if (m->kind == INB_REPLY)
            m->id = xstrndup(s.id, s.id_len);
    } else if (s.method && s.method_len == 6 && memcmp(s.method, "cancel", 6) == 0) {
        inb_classify_jansson(m); /* small: read params properly */
    } else {
        m->kind = INB_REQUEST;
    }
    if (m->kind == INB_DROP)
        log_warn("worker", "gateway sent a reply or cancel without a usable id: %.300s", text);
    return m;
}

void inb_msg_free(struct inb_msg *m)
{
    if (!m)
        return;
    free(m->text);
    free(m->id);
    free(m->run_id);
    free(m);
}

/* ---- replies ------------------------------------------------------------------------- */

static unsigned inb_hash(const char *s)
{
    unsigned h = 5381;
    while (*s)
        h = h * 33u + (unsigned char)*s++;
    return h % INB_BUCKETS;
}

/* Returns the link pointing at the entry for id, or the bucket's terminating NULL link. */
static struct inb_reply **inb_reply_find(const char *id)
{
    struct inb_reply **p = &inb.replies[inb_hash(id)];
    while (*p && strcmp((*p)->id, id) != 0)
        p = &(*p)->next;
    return p;
}

static void inb_reply_unlink_free(struct inb_reply **link)
{
    struct inb_reply *r = *link;
    *link = r->next;
    free(r->id);
    free(r->text);
    free(r);
}

static void inb_store_reply(struct inb_msg *m)
{
    struct inb_reply **link = inb_reply_find(m->id);
    if (*link && (*link)->forgotten) {
        inb_reply_unlink_free(link); /* nobody wants it: drop both */
    } else if (*link) {
        log_warn("worker", "duplicate reply for id %s from the gateway: ignored", m->id);
    } else {
        struct inb_reply *r = xcalloc(1, sizeof(*r));
        r->id = m->id;
        r->text = m->text;
        r->len = m->len;
        m->id = m->text = NULL;
        *link = r;
    }
    inb_msg_free(m);
}

int inb_take_reply(const char *id, char **text, size_t *len)
{
    struct inb_reply **link = inb_reply_find(id);
    if (!*link || !(*link)->text)
        return 0;
    *text = (*link)->text;
    *len = (*link)->len;
    (*link)->text = NULL;
    inb_reply_unlink_free(link);
    return 1;
}

void inb_forget(const char *id, int closed)
{
    struct inb_reply **link = inb_reply_find(id);
    if (*link && (*link)->text) {
        inb_reply_unlink_free(link);
    } else if (!*link && !closed) {
        struct inb_reply *r = xcalloc(1, sizeof(*r));
        r->id = xstrdup(id);
        r->forgotten = 1;
        *link = r;
    }
}

/* ---- requests ------------------------------------------------------------------------ */

int inb_take_request(char **text, size_t *len)
{
    struct inb_msg *m = inb.req_head;
    if (!m)
        return 0;
    inb.req_head = m->next;
    if (!inb.req_head)
        inb.req_tail = &inb.req_head;
    *text = m->text;
    *len = m->len;
    m->text = NULL;
    inb_msg_free(m);
    return 1;
}

/* ---- interrupts ---------------------------------------------------------------------- */

/* Records reason for the current run. Returns 1 if the main thread must be told: at most
 * once per run, since a second exception would land inside the runner's own cleanup. */
static int inb_arm(const char *reason)
{
    if (inb.interrupted)
        return 0;
    free(inb.reason);
    inb.reason = xstrdup(reason);
    inb.interrupted = 1;
    return 1;
}

/* Interrupts the current run if it is run_id (NULL: whichever run is current). A cancel
 * for a run that is not current is remembered: that run may be about to start. */
static int inb_interrupt(const char *run_id, const char *reason)
{
    if (inb.current_run && (!run_id || strcmp(run_id, inb.current_run) == 0))
        return inb_arm(reason);
    if (run_id) {
        unsigned i = inb.early_next++ % INB_EARLY;
        free(inb.early[i].run_id);
        inb.early[i].run_id = xstrdup(run_id);
        inb.early[i].reason = reason;
        log_debug("worker", "cancel for run %s: not current, remembered", run_id);
    }
    return 0;
}

int inb_store(struct inb_msg *m)
{
    int signal = 0;
    switch (m->kind) {
    case INB_REPLY:
        inb_store_reply(m);
        return 0;
    case INB_CANCEL:
        signal = inb_interrupt(m->run_id, m->reason);
        inb_msg_free(m);
        return signal;
    case INB_REQUEST:
        m->next = NULL;
        if (!inb.req_tail)
            inb.req_tail = &inb.req_head;
        *inb.req_tail = m;
        inb.req_tail = &m->next;
        return 0;
    default:
        inb_msg_free(m);
        return 0;
    }
}

int inb_set_current_run(const char *run_id)
{
    int signal = 0;
    free(inb.current_run);
    inb.current_run = run_id ? xstrdup(run_id) : NULL;
    free(inb.reason);
    inb.reason = NULL;
    inb.interrupted = 0;
    /* Cancelled before it started: interrupt it now. The runtime's handler keeps the
     * reason as an "early interrupt" and raises once agent code begins. */
    for (int i = 0; run_id && i < INB_EARLY; i++) {
        if (inb.early[i].run_id && strcmp(inb.early[i].run_id, run_id) == 0) {
            signal = inb_arm(inb.early[i].reason);
            free(inb.early[i].run_id);
            inb.early[i].run_id = NULL;
            break;
        }
    }
    return signal;
}

int inb_lost(void)
{
    return inb_interrupt(NULL, "cancelled");
}

char *inb_take_reason(void)
{
    char *r = inb.reason;
    inb.reason = NULL;
    return r;
}

void inb_clear(void)
{
    char *text;
    size_t len;
    while (inb_take_request(&text, &len))
        free(text);
    for (int i = 0; i < INB_BUCKETS; i++)
        while (inb.replies[i])
            inb_reply_unlink_free(&inb.replies[i]);
    free(inb.current_run);
    free(inb.reason);
    inb.current_run = inb.reason = NULL;
    inb.interrupted = 0;
    for (int i = 0; i < INB_EARLY; i++) {
        free(inb.early[i].run_id);
        inb.early[i].run_id = NULL;
    }
}
