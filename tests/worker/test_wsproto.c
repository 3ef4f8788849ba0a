/* test_wsproto — unit tests of the worker's WebSocket pieces (src/common/wsproto.c) and of
 * the inbox (src/worker/inbox.c): handshake, frame encoding, the stream reader fed in
 * awkward pieces, message classification (fast scan against jansson) and the interrupt
 * bookkeeping. No sockets, no Python. */
#include "../unit/check.h"

#include "inbox.h"
#include "log.h"
#include "util.h"
#include "wsproto.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* ---- handshake ------------------------------------------------------------------------ */

static void test_handshake(void)
{
    /* RFC 6455 section 1.3's example. */
    const char *key = "dGhlIHNhbXBsZSBub25jZQ==";
    const char *ok = "HTTP/1.1 101 Switching Protocols\r\n"
                     "Upgrade: WebSocket\r\n"
                     "Connection: keep-alive, Upgrade\r\n"
                     "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
                     "sec-websocket-protocol: codemcp-control\r\n"
                     "\r\n";
    const char *why = NULL;
    CHECK(wsp_head_len(ok, strlen(ok)) == strlen(ok), "head length found");
    CHECK(wsp_head_len(ok, strlen(ok) - 1) == 0, "incomplete head");
    CHECK(wsp_check_response(ok, strlen(ok), key, "codemcp-control", &why) == 0,
          "RFC example accepted (%s)", why ? why : "");

    struct {
        const char *text, *what;
    } bad[] = {
        {"HTTP/1.1 200 OK\r\n\r\n", "status 200"},
        {"HTTP/1.1 101 x\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
         "no Upgrade header"},
        {"HTTP/1.1 101 x\r\nUpgrade: websocket\r\nConnection: close\r\n"
         "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
         "Connection without upgrade"},
        {"HTTP/1.1 101 x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo_\r\n\r\n",
         "wrong accept"},
        {"HTTP/1.1 101 x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
         "Sec-WebSocket-Protocol: other\r\n\r\n",
         "other subprotocol"},
        {"HTTP/1.1 101 x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
         "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
         "unrequested extension"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why = NULL;
        CHECK(wsp_check_response(bad[i].text, strlen(bad[i].text), key, "codemcp-control", &why) <
                      0 &&
                  why,
              "refused: %s (%s)", bad[i].what, why ? why : "no reason");
    }

    char req[512], k[WSP_KEY_LEN + 1];
    uint64_t rng = 42;
    wsp_make_key(k, &rng);
    CHECK(strlen(k) == WSP_KEY_LEN && k[22] == '=' && k[23] == '=', "key is base64 of 16 bytes");
    int n = wsp_request(req, sizeof(req), "localhost", "/control", "codemcp-control", k);
    CHECK(n > 0 && strstr(req, "GET /control HTTP/1.1\r\n") == req &&
              strstr(req, "Sec-WebSocket-Protocol: codemcp-control\r\n") &&
              strstr(req, "Sec-WebSocket-Version: 13\r\n") && strstr(req, k) &&
              memcmp(req + n - 4, "\r\n\r\n", 4) == 0,
          "upgrade request");
    CHECK(wsp_request(req, 40, "localhost", "/control", "codemcp-control", k) == -1,
          "request too long for the buffer");
}

/* ---- frames --------------------------------------------------------------------------- */

/* Builds an unmasked server frame into out; returns its length. */
static size_t server_frame(unsigned char *out, int fin, int opcode, const char *payload, size_t len)
{
    size_t h = 0;
    out[h++] = (unsigned char)((fin ? 0x80 : 0) | opcode);
    if (len < 126) {
        out[h++] = (unsigned char)len;
    } else if (len <= 0xFFFF) {
        out[h++] = 126;
        out[h++] = (unsigned char)(len >> 8);
        out[h++] = (unsigned char)len;
    } else {
        out[h++] = 127;
        for (int i = 7; i >= 0; i--)
            out[h++] = (unsigned char)((uint64_t)len >> (8 * i));
    }
    memcpy(out + h, payload, len);
    return h + len;
}

static void test_encode(void)
{
    size_t sizes[] = {0, 1, 7, 125, 126, 1000, 65535, 65536, 200000};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t len = sizes[s];
        char *payload = xmalloc(len + 1);
        for (size_t i = 0; i < len; i++)
            payload[i] = (char)('a' + i % 26);
        size_t hl = wsp_header_len(len);
        unsigned char *out = xmalloc(hl + len);
        uint32_t mask = 0xA1B2C3D4u;
        wsp_encode(out, WSP_OP_TEXT, payload, len, mask);
        /* Decode as a server would: length, then unmask. */
        uint64_t plen = out[1] & 0x7F;
        size_t off = 2;
        if (plen == 126) {
            plen = (uint64_t)out[2] << 8 | out[3];
            off = 4;
        } else if (plen == 127) {
            plen = 0;
            for (int i = 0; i < 8; i++)
                plen = plen << 8 | out[2 + i];
            off = 10;
        }
        const unsigned char *m = out + off;
        int same = 1;
        for (size_t i = 0; i < len; i++)
            if ((out[off + 4 + i] ^ m[i % 4]) != (unsigned char)payload[i])
                same = 0;
        CHECK(out[0] == 0x81 && (out[1] & 0x80) && plen == len && off + 4 == hl && same,
              "encode %zu bytes: FIN+text, masked, length form, payload round trip", len);
        /* The unmasked header the gateway frames its messages with parses as a server frame. */
        unsigned char sh[10];
        struct wsp_frame f;
        const char *why = NULL;
        size_t shl = wsp_put_header(sh, WSP_OP_TEXT, len, 0);
        CHECK(shl == hl - 4 && wsp_parse_header(sh, shl, &f, &why) == 1 && f.fin &&
                  f.opcode == WSP_OP_TEXT && f.header_len == shl && f.payload_len == len,
              "server header for %zu bytes: unmasked, parses back (%s)", len, why ? why : "ok");
        free(payload);
        free(out);
    }
}

static void test_parse_header(void)
{
    struct wsp_frame f;
    const char *why = NULL;
    unsigned char b[16];

    b[0] = 0x81;
    b[1] = 5;
    CHECK(wsp_parse_header(b, 1, &f, &why) == 0, "one byte: need more");
    CHECK(wsp_parse_header(b, 2, &f, &why) == 1 && f.fin && f.opcode == 1 && f.header_len == 2 &&
              f.payload_len == 5,
          "small text header");
    b[1] = 127;
    CHECK(wsp_parse_header(b, 9, &f, &why) == 0, "64-bit length incomplete");
    memset(b + 2, 0, 8);
    b[7] = 0x01; /* 2^16 */
    CHECK(wsp_parse_header(b, 10, &f, &why) == 1 && f.payload_len == 65536, "64-bit length");
    b[2] = 0x80;
    CHECK(wsp_parse_header(b, 10, &f, &why) == -1, "length with the top bit refused");

    struct {
        unsigned char b0, b1;
        const char *what;
    } bad[] = {
        {0xC1, 0x00, "RSV1 set"},
        {0x83, 0x00, "opcode 3"},
        {0x81, 0x81, "masked server frame"},
        {0x09, 0x00, "fragmented ping"},
        {0x89, 126, "ping over 125 bytes"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        b[0] = bad[i].b0;
        b[1] = bad[i].b1;
        b[2] = 0;
        b[3] = 200;
        why = NULL;
        CHECK(wsp_parse_header(b, 4, &f, &why) == -1 && why, "refused: %s", bad[i].what);
    }
}

/* ---- reader --------------------------------------------------------------------------- */

struct events {
    struct buf log; /* "T:<text>|", "B:<len>|", "P:<payload>|", "C|" */
    int count;
    int stop_on_close;
};

static int on_event(void *ud, int event, char *data, size_t len)
{
    struct events *e = ud;
    e->count++;
    switch (event) {
    case WSP_EV_TEXT:
        buf_printf(&e->log, "T:%.*s|", (int)len, data);
        if (data[len] != '\0')
            buf_appends(&e->log, "(not NUL-terminated)");
        free(data);
        return 0;
    case WSP_EV_BINARY:
        buf_printf(&e->log, "B:%zu|", len);
        return 0;
    case WSP_EV_PING:
        buf_printf(&e->log, "P:%.*s|", (int)len, data);
        return 0;
    case WSP_EV_PONG:
        buf_appends(&e->log, "O|");
        return 0;
    default:
        buf_appends(&e->log, "C|");
        return e->stop_on_close ? -1 : 0;
    }
}

/* Feeds stream[0..len) in pieces of at most `step` bytes. Returns feed's last result. */
static int feed(struct wsp_reader *r, const unsigned char *stream, size_t len, size_t step,
                struct events *e)
{
    size_t off = 0;
    while (off < len) {
        void *dst;
        size_t cap;
        wsp_reader_space(r, &dst, &cap);
        size_t n = len - off;
        if (n > step)
            n = step;
        if (n > cap)
            n = cap;
        memcpy(dst, stream + off, n);
        off += n;
        if (wsp_reader_feed(r, n, on_event, e) < 0)
            return -1;
    }
    return 0;
}

static void test_reader(void)
{
    unsigned char s[4096];
    size_t n = 0;
    n += server_frame(s + n, 1, WSP_OP_TEXT, "hello", 5);
    n += server_frame(s + n, 0, WSP_OP_TEXT, "frag", 4);
    n += server_frame(s + n, 1, WSP_OP_PING, "pp", 2); /* control frames may interleave */
    n += server_frame(s + n, 0, WSP_OP_CONT, "men", 3);
    n += server_frame(s + n, 1, WSP_OP_CONT, "ted", 3);
    n += server_frame(s + n, 1, WSP_OP_BINARY, "\x01\x02", 2);
    n += server_frame(s + n, 1, WSP_OP_TEXT, "", 0);
    n += server_frame(s + n, 1, WSP_OP_PONG, "", 0);
    char mid[300];
    memset(mid, 'x', sizeof(mid));
    n += server_frame(s + n, 1, WSP_OP_TEXT, mid, sizeof(mid)); /* 16-bit length */
    const char *want_prefix = "T:hello|P:pp|T:fragmented|B:2|T:|O|T:xxx";

    size_t steps[] = {1, 2, 3, 7, 64, 4096};
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        struct wsp_reader r;
        struct events e = {0};
        CHECK(wsp_reader_init(&r, 256, 1 << 20) == 0, "reader init");
        int rc = feed(&r, s, n, steps[i], &e);
        CHECK(rc == 0 && e.count == 7 && e.log.data &&
                  strncmp(e.log.data, want_prefix, strlen(want_prefix)) == 0 &&
                  e.log.len == strlen("T:hello|P:pp|T:fragmented|B:2|T:|O|T:|") + 300,
              "stream fed %zu byte(s) at a time: %.60s", steps[i], e.log.data ? e.log.data : "");
        wsp_reader_free(&r);
        buf_free(&e.log);
    }

    /* A large payload goes straight into the message buffer, whatever the split. */
    size_t big = 3u << 20;
    char *payload = xmalloc(big);
    for (size_t i = 0; i < big; i++)
        payload[i] = (char)('A' + i % 23);
    unsigned char *stream = xmalloc(big + 64);
    size_t sl = server_frame(stream, 1, WSP_OP_TEXT, payload, big);
    sl += server_frame(stream + sl, 1, WSP_OP_TEXT, "after", 5);
    {
        struct wsp_reader r;
        struct events e = {0};
        wsp_reader_init(&r, 65536, 64u << 20);
        int rc = feed(&r, stream, sl, 100000, &e);
        CHECK(rc == 0 && e.count == 2 && e.log.len == 2 + big + 1 + 8 &&
                  memcmp(e.log.data + 2, payload, big) == 0 &&
                  strcmp(e.log.data + 2 + big, "|T:after|") == 0,
              "3 MiB frame then a small one");
        wsp_reader_free(&r);
        buf_free(&e.log);
    }
    {
        struct wsp_reader r;
        struct events e = {0};
        wsp_reader_init(&r, 65536, 1u << 20);
        CHECK(feed(&r, stream, sl, 100000, &e) == -1 && r.error && strstr(r.error, "cap") != NULL &&
                  e.count == 0,
              "frame over the cap refused before it is read (%s)", r.error ? r.error : "");
        wsp_reader_free(&r);
        buf_free(&e.log);
    }
    free(payload);
    free(stream);

    /* Fragments adding up past the cap. */
    {
        struct wsp_reader r;
        struct events e = {0};
        char part[600];
        memset(part, 'y', sizeof(part));
        n = server_frame(s, 0, WSP_OP_TEXT, part, sizeof(part));
        n += server_frame(s + n, 1, WSP_OP_CONT, part, sizeof(part));
        wsp_reader_init(&r, 256, 1000);
        CHECK(feed(&r, s, n, 50, &e) == -1 && e.count == 0, "fragments over the cap refused");
        wsp_reader_free(&r);
        buf_free(&e.log);
    }

    struct {
        int fin1, op1, fin2, op2;
        const char *what;
    } bad[] = {
        {1, WSP_OP_CONT, 1, WSP_OP_TEXT, "continuation without a message"},
        {0, WSP_OP_TEXT, 1, WSP_OP_TEXT, "new message inside a fragmented one"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct wsp_reader r;
        struct events e = {0};
        n = server_frame(s, bad[i].fin1, bad[i].op1, "ab", 2);
        n += server_frame(s + n, bad[i].fin2, bad[i].op2, "cd", 2);
        wsp_reader_init(&r, 256, 1000);
        CHECK(feed(&r, s, n, 3, &e) == -1 && r.error, "refused: %s (%s)", bad[i].what,
              r.error ? r.error : "");
        wsp_reader_free(&r);
        buf_free(&e.log);
    }

    /* A close frame: the callback may stop the stream. */
    {
        struct wsp_reader r;
        struct events e = {.stop_on_close = 1};
        n = server_frame(s, 1, WSP_OP_TEXT, "last", 4);
        n += server_frame(s + n, 1, WSP_OP_CLOSE, "\x03\xe8", 2);
        n += server_frame(s + n, 1, WSP_OP_TEXT, "never", 5);
        wsp_reader_init(&r, 256, 1000);
        CHECK(feed(&r, s, n, 4096, &e) == -1 && e.log.data && strcmp(e.log.data, "T:last|C|") == 0,
              "close frame ends the stream after the messages before it");
        wsp_reader_free(&r);
        buf_free(&e.log);
    }
}

/* ---- inbox ---------------------------------------------------------------------------- */

static struct inb_msg *classify(const char *text)
{
    return inb_classify(xstrdup(text), strlen(text));
}

static void test_classify(void)
{
    struct {
        const char *text;
        int kind;
        const char *id;
    } cases[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":\"c7\",\"result\":{\"content\":[]}}", INB_REPLY, "c7"},
        {"{\"id\":12,\"error\":{\"code\":-32000,\"message\":\"x\"}}", INB_REPLY, "12"},
        {" {\"result\" : null , \"id\" : 0 } \n", INB_REPLY, "0"},
        {"{\"id\":\"a\\\"b\",\"result\":1}", INB_REPLY, "a\"b"}, /* escaped: jansson */
        {"{\"id\":-3,\"result\":1}", INB_REPLY, "-3"},
        {"{\"result\":{\"id\":\"inner\",\"s\":\"}{\\\"\"},\"id\":\"outer\"}", INB_REPLY, "outer"},
        {"{\"id\":null,\"result\":1}", INB_DROP, NULL},
        {"{\"id\":1.5,\"result\":1}", INB_DROP, NULL},
        {"{\"id\":\"x\",\"method\":\"run\",\"params\":{}}", INB_REQUEST, NULL},
        {"{\"id\":\"x\",\"method\":\"run\",\"result\":1}", INB_REQUEST, NULL},
        {"{\"method\":\"cancel\",\"params\":{\"run_id\":\"r1\",\"reason\":\"timeout\"}}",
         INB_CANCEL, NULL},
        {"{\"method\":\"cancel\",\"params\":{}}", INB_DROP, NULL},
        /* a method before the rest: a request unless a later duplicate says "cancel" */
        {"{\"method\":\"run\",\"method\":\"cancel\",\"params\":{\"run_id\":\"r2\"}}", INB_CANCEL,
         NULL},
        {"{\"method\":\"run\",\"params\":{\"run_id\":\"cancel\",\"code\":\"x\"}}", INB_REQUEST,
         NULL},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"run\",\"id\":4,\"params\":{\"code\":\"print("
         "\\\"cancel\\\")\"}}",
         INB_REQUEST, NULL},
        {"{\"method\":\"run\",\"id\":3,\"params\":{\"a\":[1,{\"b\":\"}\"}]}} trailing", INB_REQUEST,
         NULL},
        {"{\"id\":\"x\",\"result\":1", INB_REQUEST, NULL}, /* truncated: the runtime answers */
        {"{not json", INB_REQUEST, NULL},
        {"[1,2]", INB_REQUEST, NULL},
        {"{\"id\":\"x\",\"result\":1} trailing", INB_REQUEST, NULL},
        {"{}", INB_REQUEST, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct inb_msg *m = classify(cases[i].text);
        CHECK(m->kind == cases[i].kind &&
                  (!cases[i].id || (m->id && strcmp(m->id, cases[i].id) == 0)) &&
                  strcmp(m->text, cases[i].text) == 0,
              "classify %s -> kind %d id %s", cases[i].text, m->kind, m->id ? m->id : "-");
        inb_msg_free(m);
    }
    struct inb_msg *m = classify("{\"method\":\"cancel\",\"params\":{\"run_id\":\"r9\"}}");
    CHECK(m->kind == INB_CANCEL && strcmp(m->run_id, "r9") == 0 &&
              strcmp(m->reason, "cancelled") == 0,
          "cancel without a reason means cancelled");
    inb_msg_free(m);

    /* The scan agrees with jansson on a large generated reply. */
    struct buf big = {0};
    buf_appends(&big, "{\"jsonrpc\":\"2.0\",\"result\":{\"structuredContent\":{\"rows\":[");
    for (int i = 0; i < 20000; i++)
        buf_printf(&big, "%s{\"k\":%d,\"s\":\"v\\\"al\\\\ue %d\",\"n\":[1.5e3,true,null]}",
                   i ? "," : "", i, i);
    buf_appends(&big, "]}},\"id\":\"c-1234\"}");
    json_error_t err;
    json_t *j = json_loads(big.data, 0, &err);
    size_t big_len = big.len;
    m = inb_classify(buf_steal(&big), big_len);
    CHECK(j && m->kind == INB_REPLY && strcmp(m->id, "c-1234") == 0,
          "large reply with escapes: scan finds the trailing id");
    json_decref(j);
    inb_msg_free(m);
}

static int store(const char *text)
{
    return inb_store(classify(text));
}

static void test_inbox(void)
{
    char *text = NULL;
    size_t len = 0;

    store("{\"id\":\"a\",\"result\":1}");
    CHECK(inb_take_reply("b", &text, &len) == 0, "no reply for another id");
    CHECK(inb_take_reply("a", &text, &len) == 1 && strstr(text, "\"a\"") && len == strlen(text),
          "reply by id");
    free(text);
    CHECK(inb_take_reply("a", &text, &len) == 0, "a reply is taken once");

    inb_forget("late", 0);
    store("{\"id\":\"late\",\"result\":1}");
    CHECK(inb_take_reply("late", &text, &len) == 0, "a forgotten reply is dropped on arrival");
    store("{\"id\":\"late\",\"result\":2}");
    CHECK(inb_take_reply("late", &text, &len) == 1, "the id can be used again afterwards");
    free(text);

    store("{\"id\":1,\"method\":\"run\"}");
    store("{\"id\":2,\"method\":\"ping\"}");
    CHECK(inb_take_request(&text, &len) == 1 && strstr(text, "run"), "requests in order (1)");
    free(text);
    CHECK(inb_take_request(&text, &len) == 1 && strstr(text, "ping"), "requests in order (2)");
    free(text);
    CHECK(inb_take_request(&text, &len) == 0, "request queue empty");

    /* Interrupts: once per run, cancels for other runs remembered. */
    CHECK(inb_set_current_run("r1") == 0, "run r1 starts");
    CHECK(store("{\"method\":\"cancel\",\"params\":{\"run_id\":\"r2\"}}") == 0,
          "a cancel for another run does not interrupt");
    CHECK(inb_take_reason() == NULL, "no reason pending");
    CHECK(store("{\"method\":\"cancel\",\"params\":{\"run_id\":\"r1\",\"reason\":\"timeout\"}}") ==
              1,
          "a cancel for the current run interrupts");
    CHECK(store("{\"method\":\"cancel\",\"params\":{\"run_id\":\"r1\"}}") == 0,
          "a second cancel for it does not");
    char *reason = inb_take_reason();
    CHECK(reason && strcmp(reason, "timeout") == 0, "reason is timeout");
    free(reason);
    CHECK(inb_take_reason() == NULL, "reason cleared by reading it");
    CHECK(inb_set_current_run("r2") == 1, "r2 was cancelled before it started");
    reason = inb_take_reason();
    CHECK(reason && strcmp(reason, "cancelled") == 0, "early reason kept");
    free(reason);
    CHECK(inb_set_current_run(NULL) == 0 && inb_lost() == 0, "no run: nothing to interrupt");
    CHECK(inb_set_current_run("r3") == 0 && inb_lost() == 1, "connection lost interrupts");
    inb_clear();
}

int main(void)
{
    log_init(getenv("CODEMCP_LOG"));
    test_handshake();
    test_encode();
    test_parse_header();
    test_reader();
    test_classify();
    test_inbox();
    return CHECK_DONE();
}
