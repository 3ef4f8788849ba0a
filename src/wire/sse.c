/* sse — incremental text/event-stream parser. See sse.h for the rules it implements.
 *
 * The stream is scanned for line ends; a line that lies wholly inside one chunk is parsed
 * in place, only a line split across chunks is copied into `line`. A CR at the end of a
 * chunk sets `after_cr` so that an LF opening the next chunk is not read as a second
 * (blank) line. Pure code: safe to use from any thread, one parser per stream. */
#include "sse.h"

#include <stdlib.h>
#include <string.h>

#define KEEP_BUFFER_BYTES ((size_t)1 << 20) /* buffers above this are released after use */

static const unsigned char bom_bytes[3] = {0xEF, 0xBB, 0xBF};

void sse_init(struct sse_parser *p, size_t max_event)
{
    memset(p, 0, sizeof(*p));
    p->max_event = max_event ? max_event : (size_t)-1;
    p->retry_ms = -1;
}

void sse_free(struct sse_parser *p)
{
    buf_free(&p->line);
    buf_free(&p->data);
    buf_free(&p->type);
    free(p->id_buf);
    free(p->last_id);
    p->id_buf = p->last_id = NULL;
}

static void shrink(struct buf *b)
{
    if (b->cap > KEEP_BUFFER_BYTES)
        buf_free(b);
    else
        buf_reset(b);
}

static void dispatch(struct sse_parser *p, sse_event_fn fn, void *ud)
{
    /* The last event id is committed at every blank line, dispatched or not. */
    free(p->last_id);
    p->last_id = p->id_buf ? xstrdup(p->id_buf) : NULL;
    if (p->oversize) {
        p->oversize = 0;
        p->dropped++;
    } else if (p->data.len > 0) {
        p->data.data[--p->data.len] = '\0'; /* every data line appended a '\n' */
        if (fn)
            fn(ud, p->type.len ? p->type.data : "message", p->data.data, p->data.len);
    }
    shrink(&p->data);
    buf_reset(&p->type);
}

static int is_field(const char *name, size_t n, const char *want)
{
    return strlen(want) == n && memcmp(name, want, n) == 0;
}

static void set_retry(struct sse_parser *p, const char *v, size_t n)
{
    if (n == 0)
        return;
    long ms = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return; /* only ASCII digits count; anything else ignores the field */
        if (ms <= SSE_RETRY_MAX_MS)
            ms = ms * 10 + (v[i] - '0');
    }
    p->retry_ms = ms > SSE_RETRY_MAX_MS ? SSE_RETRY_MAX_MS : ms;
}

/* One complete, non-empty line of a stored (not oversize) event. */
static void field(struct sse_parser *p, const char *s, size_t n)
{
    if (s[0] == ':')
        return; /* comment */
    const char *colon = memchr(s, ':', n);
    size_t name_len = colon ? (size_t)(colon - s) : n;
    const char *v = colon ? colon + 1 : s + n;
    size_t vn = colon ? n - name_len - 1 : 0;
    if (vn > 0 && v[0] == ' ') {
        v++;
        vn--;
    }
    if (is_field(s, name_len, "data")) {
        buf_append(&p->data, v, vn);
        buf_append(&p->data, "\n", 1);
    } else if (is_field(s, name_len, "event")) {
        buf_reset(&p->type);
        buf_append(&p->type, v, vn);
    } else if (is_field(s, name_len, "id")) {
        if (memchr(v, '\0', vn))
            return;
        free(p->id_buf);
        p->id_buf = vn ? xstrndup(v, vn) : NULL;
    } else if (is_field(s, name_len, "retry")) {
        set_retry(p, v, vn);
    }
    /* Unknown field names are ignored. */
}

/* Adds bytes to the current line, or only counts them once the event is oversize. */
static void line_add(struct sse_parser *p, const char *s, size_t n)
{
    p->line_bytes += n;
    if (p->oversize || n == 0)
        return;
    if (p->line.len + p->data.len + n > p->max_event) {
        p->oversize = 1;
        shrink(&p->line);
        shrink(&p->data);
        return;
    }
    buf_append(&p->line, s, n);
}

/* The current line ends after `n` more bytes at s (which are not stored yet). */
static void line_end(struct sse_parser *p, const char *s, size_t n, sse_event_fn fn, void *ud)
{
    if (p->line_bytes + n == 0) {
        dispatch(p, fn, ud);
        return;
    }
    if (p->line_bytes == 0 && !p->oversize && p->data.len + n <= p->max_event) {
        field(p, s, n); /* the whole line is inside this chunk: parse it in place */
    } else {
        line_add(p, s, n);
        if (!p->oversize)
            field(p, p->line.data, p->line.len);
        shrink(&p->line);
    }
    p->line_bytes = 0;
    if (!p->oversize && p->data.len > p->max_event) {
        p->oversize = 1;
        shrink(&p->data);
    }
}

/* Handles the stream's first bytes: a complete leading BOM is skipped; a partial match that
 * turns out not to be a BOM is given back as ordinary line bytes. Returns bytes consumed. */
static size_t skip_bom(struct sse_parser *p, const char *chunk, size_t len)
{
    size_t i = 0;
    while (p->bom < 3 && i < len) {
        if ((unsigned char)chunk[i] != bom_bytes[p->bom]) {
            /* Held bytes are a prefix of the BOM: no line breaks among them. */
            line_add(p, (const char *)bom_bytes, p->bom);
            p->bom = 3;
            return i;
        }
        p->bom++;
        i++;
    }
    return i;
}

void sse_feed(struct sse_parser *p, const char *chunk, size_t len, sse_event_fn fn, void *ud)
{
    size_t i = p->bom < 3 ? skip_bom(p, chunk, len) : 0;
    while (i < len) {
        if (p->after_cr) {
            p->after_cr = 0;
            if (chunk[i] == '\n') {
                i++;
                continue;
            }
        }
        size_t j = i;
        while (j < len && chunk[j] != '\n' && chunk[j] != '\r')
            j++;
        if (j == len) {
            line_add(p, chunk + i, len - i);
            return;
        }
        line_end(p, chunk + i, j - i, fn, ud);
        p->after_cr = chunk[j] == '\r';
        i = j + 1;
    }
}
