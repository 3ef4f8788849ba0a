/* test_sse — the text/event-stream parser (src/wire/sse.c) against the WHATWG rules, and chunk
 * boundary fuzzing: every stream is also fed split at every byte offset (and pairs of
 * offsets, and byte by byte) and must yield exactly the events of the whole-buffer feed.
 * One output line per case; non-zero exit status when any case failed. */
#include "check.h"
#include "sse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Events are recorded as "type|data|last_id" records separated by '\n' (data escapes '\n'
 * as "\\n" so records stay one line), followed by the final "retry=N". */
struct rec {
    struct buf out;
    struct sse_parser *p;
};

static void on_event(void *ud, const char *type, const char *data, size_t len)
{
    struct rec *r = ud;
    buf_appends(&r->out, type);
    buf_appends(&r->out, "|");
    for (size_t i = 0; i < len; i++) {
        if (data[i] == '\n')
            buf_appends(&r->out, "\\n");
        else if (data[i] == '\r')
            buf_appends(&r->out, "\\r");
        else
            buf_append(&r->out, &data[i], 1);
    }
    /* The id committed for this event is visible to the callback. */
    buf_printf(&r->out, "|%s\n", r->p->last_id ? r->p->last_id : "-");
}

static void finish(struct rec *r)
{
    buf_printf(&r->out, "last=%s retry=%ld dropped=%lu", r->p->last_id ? r->p->last_id : "-",
               r->p->retry_ms, r->p->dropped);
}

/* Parses s (n bytes) split at the given offsets (ascending, may be empty). Caller frees. */
static char *parse_split(const char *s, size_t n, const size_t *cuts, size_t ncuts, size_t cap)
{
    struct sse_parser p;
    sse_init(&p, cap);
    struct rec r = {.p = &p};
    size_t at = 0;
    for (size_t k = 0; k <= ncuts; k++) {
        size_t end = k < ncuts ? cuts[k] : n;
        sse_feed(&p, s + at, end - at, on_event, &r);
        at = end;
    }
    finish(&r);
    sse_free(&p);
    return buf_steal(&r.out);
}

static char *parse(const char *s, size_t cap)
{
    return parse_split(s, strlen(s), NULL, 0, cap);
}

static void expect_events(int line, const char *stream, size_t cap, const char *want)
{
    char *got = parse(stream, cap);
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "  line %d:\n    got:  %s\n    want: %s\n", line, got, want);
        case_failed = 1;
    }
    free(got);
}
#define EXPECT_EVENTS(stream, want) expect_events(__LINE__, stream, 0, want)

/* ---- the rules ------------------------------------------------------------------------ */

static void t_basic(void)
{
    EXPECT_EVENTS("data: hello\n\n", "message|hello|-\nlast=- retry=-1 dropped=0");
    EXPECT_EVENTS("event: ping\ndata: x\n\n", "ping|x|-\nlast=- retry=-1 dropped=0");
    /* The event type resets after each dispatch. */
    EXPECT_EVENTS("event: a\ndata: 1\n\ndata: 2\n\n",
                  "a|1|-\nmessage|2|-\nlast=- retry=-1 dropped=0");
    /* No blank line yet: nothing is dispatched (and never at end of stream). */
    EXPECT_EVENTS("data: pending\n", "last=- retry=-1 dropped=0");
    EXPECT_EVENTS("id: 7\ndata: pending", "last=- retry=-1 dropped=0");
}

static void t_multiline_data(void)
{
    EXPECT_EVENTS("data: a\ndata: b\ndata:\ndata: c\n\n",
                  "message|a\\nb\\n\\nc|-\nlast=- retry=-1 dropped=0");
    /* "data" without a colon is a data line with an empty value. */
    EXPECT_EVENTS("data\n\n", "message||-\nlast=- retry=-1 dropped=0");
    EXPECT_EVENTS("data\ndata\n\n", "message|\\n|-\nlast=- retry=-1 dropped=0");
    /* Only one leading space is stripped; colons in the value are kept. */
    EXPECT_EVENTS("data:  two\n\n", "message| two|-\nlast=- retry=-1 dropped=0");
    EXPECT_EVENTS("data:no-space\n\n", "message|no-space|-\nlast=- retry=-1 dropped=0");
    EXPECT_EVENTS("data: {\"a\":\"b:c\"}\n\n",
                  "message|{\"a\":\"b:c\"}|-\nlast=- retry=-1 dropped=0");
    /* Field names are case-sensitive; unknown fields are ignored. */
    EXPECT_EVENTS("Data: no\nfoo: bar\ndata: yes\n\n", "message|yes|-\nlast=- retry=-1 dropped=0");
}

static void t_comments(void)
{
    EXPECT_EVENTS(": keep-alive\n\n", "last=- retry=-1 dropped=0");
    EXPECT_EVENTS(":\ndata: a\n: between\ndata: b\n\n",
                  "message|a\\nb|-\nlast=- retry=-1 dropped=0");
}

static void t_empty_data_not_dispatched(void)
{
    /* No data line at all: not dispatched, but the id is committed and retry taken. */
    EXPECT_EVENTS("id: p\nretry: 500\n\n", "last=p retry=500 dropped=0");
    EXPECT_EVENTS("event: x\n\ndata: y\n\n", "message|y|-\nlast=- retry=-1 dropped=0");
    /* An MCP "priming" event ("data: " with an empty value) IS dispatched, with empty data:
     * the data buffer holds "\n" when the spec checks it for emptiness. Consumers skip it. */
    EXPECT_EVENTS("id: prime-1\nretry: 500\ndata: \n\n",
                  "message||prime-1\nlast=prime-1 retry=500 dropped=0");
}

static void t_ids(void)
{
    /* The id persists across events until changed; an empty id clears it. */
    EXPECT_EVENTS("id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n",
                  "message|a|1\nmessage|b|1\nmessage|c|-\nlast=- retry=-1 dropped=0");
    EXPECT_EVENTS("id: 1\ndata: a\n\nid:\ndata: c\n\n",
                  "message|a|1\nmessage|c|-\nlast=- retry=-1 dropped=0");
    /* The id of an incomplete event is not committed. */
    EXPECT_EVENTS("id: 1\ndata: a\n\nid: 2\ndata: b\n", "message|a|1\nlast=1 retry=-1 dropped=0");
    /* An id containing NUL is ignored. */
    static const char with_nul[] = "id: 5\ndata: a\n\nid: x\0y\ndata: b\n\n";
    char *got = parse_split(with_nul, sizeof(with_nul) - 1, NULL, 0, 0);
    EXPECT(strcmp(got, "message|a|5\nmessage|b|5\nlast=5 retry=-1 dropped=0") == 0);
    free(got);
}

static void t_retry(void)
{
    EXPECT_EVENTS("retry: 2500\n\n", "last=- retry=2500 dropped=0");
    EXPECT_EVENTS("retry:100\nretry: 12a\nretry: -5\nretry:  7\nretry:\n\n",
                  "last=- retry=100 dropped=0");
    EXPECT_EVENTS("retry: 99999999999999999999\n\n", "last=- retry=86400000 dropped=0");
    EXPECT_EVENTS("retry: 0\n\n", "last=- retry=0 dropped=0");
}

static void t_line_endings(void)
{
    const char *want = "message|a\\nb|-\nmessage|c|-\nlast=- retry=-1 dropped=0";
    EXPECT_EVENTS("data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n", want);
    EXPECT_EVENTS("data: a\rdata: b\r\rdata: c\r\r", want);
    EXPECT_EVENTS("data: a\ndata: b\r\n\rdata: c\n\r\n", want);
    /* "\n\r" is two line ends: a blank line follows the data line. */
    EXPECT_EVENTS("data: a\n\rdata: b\n\n", "message|a|-\nmessage|b|-\nlast=- retry=-1 dropped=0");
}

static void t_bom(void)
{
    EXPECT_EVENTS("\xEF\xBB\xBF"
                  "data: a\n\n",
                  "message|a|-\nlast=- retry=-1 dropped=0");
    /* Only one leading BOM is skipped: a second one starts an unknown field name. */
    EXPECT_EVENTS("\xEF\xBB\xBF\xEF\xBB\xBF"
                  "data: a\n\ndata: b\n\n",
                  "message|b|-\nlast=- retry=-1 dropped=0");
    /* A partial BOM is not a BOM: its bytes are part of the first line. */
    EXPECT_EVENTS("\xEF\xBB"
                  "data: a\n\ndata: b\n\n",
                  "message|b|-\nlast=- retry=-1 dropped=0");
    /* A BOM later in the stream is data. */
    char *got = parse("data: \xEF\xBB\xBFx\n\n", 0);
    EXPECT(strcmp(got, "message|\xEF\xBB\xBFx|-\nlast=- retry=-1 dropped=0") == 0);
    free(got);
}

static void t_size_cap(void)
{
    /* Events larger than the cap are dropped whole; the stream goes on. */
    expect_events(__LINE__, "data: 0123456789\n\ndata: ok\n\n", 8,
                  "message|ok|-\nlast=- retry=-1 dropped=1");
    expect_events(__LINE__, "data: 0123\ndata: 4567\ndata: 89\n\nid: 3\ndata: ok\n\n", 12,
                  "message|ok|3\nlast=3 retry=-1 dropped=1");
    /* A long comment line counts too, but a small event after it survives. */
    expect_events(__LINE__, ": xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n\ndata: ok\n\n", 16,
                  "message|ok|-\nlast=- retry=-1 dropped=1");
    /* Exactly at the cap is fine. */
    expect_events(__LINE__, "data:12345\n\n", 10, "message|12345|-\nlast=- retry=-1 dropped=0");
}

/* ---- chunk boundaries ----------------------------------------------------------------- */

static const char *const fuzz_streams[] = {
    "\xEF\xBB\xBF"
    "event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
    "id: prime\r\nretry: 1500\r\ndata: \r\n\r\n: comment\r\ndata: a\r\ndata: b\r\n\r\n",
    "data: x\rdata: y\r\rid: 9\rdata: z\r\r",
    "data: x\n\r\n\rdata: y\r\n\r\n\n\ndata\n\nid\n\n",
    ":only a comment\n\n\n\nevent: custom\ndata:  spaced\n\nretry: 12x\nretry: 40\n\n",
    "\xEF\xBB"
    "data: not-a-bom\n\ndata: after\r\n\r",
    "data: 0123456789abcdef\n\ndata: small\n\ndata: 0123456789abcdef0123\n\n",
};

static void t_split_every_offset(void)
{
    for (size_t s = 0; s < sizeof(fuzz_streams) / sizeof(fuzz_streams[0]); s++) {
        const char *str = fuzz_streams[s];
        size_t n = strlen(str);
        for (size_t cap = 0; cap <= 16; cap += 16) { /* unlimited, then a cap that bites */
            char *whole = parse_split(str, n, NULL, 0, cap);
            for (size_t k = 0; k <= n; k++) {
                char *got = parse_split(str, n, &k, 1, cap);
                if (strcmp(got, whole) != 0) {
                    fprintf(stderr,
                            "  stream %zu cap %zu split at %zu:\n    got:  %s\n    want: %s\n", s,
                            cap, k, got, whole);
                    case_failed = 1;
                }
                free(got);
            }
            for (size_t a = 0; a <= n; a++)
                for (size_t b = a; b <= n; b++) {
                    size_t cuts[2] = {a, b};
                    char *got = parse_split(str, n, cuts, 2, cap);
                    if (strcmp(got, whole) != 0) {
                        fprintf(stderr, "  stream %zu cap %zu split at %zu,%zu differs\n", s, cap,
                                a, b);
                        case_failed = 1;
                    }
                    free(got);
                }
            size_t *every = malloc((n + 1) * sizeof(*every));
            for (size_t k = 0; k < n; k++)
                every[k] = k + 1;
            char *got = parse_split(str, n, every, n ? n - 1 : 0, cap);
            if (strcmp(got, whole) != 0) {
                fprintf(stderr, "  stream %zu cap %zu byte by byte:\n    got:  %s\n    want: %s\n",
                        s, cap, got, whole);
                case_failed = 1;
            }
            free(got);
            free(every);
            free(whole);
        }
    }
}

/* The whole-buffer results of the fuzz streams are themselves pinned, so that a parser that
 * is consistently wrong across splits still fails. */
static void t_fuzz_streams_pinned(void)
{
    expect_events(__LINE__, fuzz_streams[0], 0,
                  "message|{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}|1\nlast=1 retry=-1 "
                  "dropped=0");
    expect_events(__LINE__, fuzz_streams[1], 0,
                  "message||prime\nmessage|a\\nb|prime\nlast=prime retry=1500 dropped=0");
    expect_events(__LINE__, fuzz_streams[2], 0,
                  "message|x\\ny|-\nmessage|z|9\nlast=9 retry=-1 dropped=0");
    expect_events(__LINE__, fuzz_streams[3], 0,
                  "message|x|-\nmessage|y|-\nmessage||-\nlast=- retry=-1 dropped=0");
    expect_events(__LINE__, fuzz_streams[4], 0, "custom| spaced|-\nlast=- retry=40 dropped=0");
    expect_events(__LINE__, fuzz_streams[5], 0, "message|after|-\nlast=- retry=-1 dropped=0");
    expect_events(__LINE__, fuzz_streams[6], 16, "message|small|-\nlast=- retry=-1 dropped=2");
}

/* A large event arriving in small chunks (the common case for big tool results). */
static void t_large_event_chunked(void)
{
    size_t n = 1 << 20;
    struct buf s = {0};
    buf_appends(&s, "id: big\ndata: ");
    for (size_t i = 0; i < n; i++)
        buf_append(&s, &"abcdefgh"[i % 8], 1);
    buf_appends(&s, "\n\n");
    struct sse_parser p;
    sse_init(&p, 2 << 20);
    struct rec r = {.p = &p};
    for (size_t at = 0; at < s.len; at += 1000)
        sse_feed(&p, s.data + at, s.len - at < 1000 ? s.len - at : 1000, on_event, &r);
    EXPECT(r.out.len == strlen("message|") + n + strlen("|big\n"));
    EXPECT(p.last_id && strcmp(p.last_id, "big") == 0);
    EXPECT(p.dropped == 0);
    buf_free(&r.out);
    sse_free(&p);
    buf_free(&s);
}

int main(void)
{
    check_case("basic events and types", t_basic);
    check_case("multi-line data, spaces, colons, field names", t_multiline_data);
    check_case("comments", t_comments);
    check_case("no data line: not dispatched, id committed", t_empty_data_not_dispatched);
    check_case("ids persist, clear, ignore NUL, incomplete events", t_ids);
    check_case("retry: digits only, clamped", t_retry);
    check_case("CRLF, CR and LF line ends", t_line_endings);
    check_case("leading BOM", t_bom);
    check_case("event size cap", t_size_cap);
    check_case("split at every offset, pairs of offsets, byte by byte", t_split_every_offset);
    check_case("fuzz streams pinned", t_fuzz_streams_pinned);
    check_case("1 MiB event in 1000-byte chunks", t_large_event_chunked);
    return CHECK_DONE();
}
