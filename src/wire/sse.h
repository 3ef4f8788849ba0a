/* sse — an incremental parser for text/event-stream (Server-Sent Events), per the WHATWG
 * HTML specification's "event stream interpretation".
 *
 * Pure: no I/O, no threads, no global state. Bytes are fed in chunks of any size (a line
 * break, a CRLF pair or the leading BOM may be split across chunks); complete events are
 * handed to a callback as they finish. Used by the remote-upstream transport on the curl
 * thread, one parser per streaming response. Rules implemented:
 * - lines end with CRLF, LF or CR; one leading UTF-8 BOM is ignored;
 * - a line starting with ':' is a comment; "name: value" strips one space after the colon;
 *   a line without a colon is a field with an empty value; field names are case-sensitive;
 * - data lines are joined with '\n'; `event` sets the type (default "message"); `id` sets the
 *   last event id unless the value contains NUL; `retry` is honoured only when all digits;
 * - a blank line dispatches; an event without any data line is not dispatched, but its id
 *   still becomes the last event id. Note that "data: " (empty value) IS an event with empty
 *   data: MCP servers "prime" streams with such events, and consumers skip them;
 * - an incomplete event at the end of the stream is discarded (the caller simply stops);
 * - an event larger than max_event bytes is dropped whole and counted in `dropped`. */
#ifndef CODEMCP_SSE_H
#define CODEMCP_SSE_H

#include <stddef.h>

#include "util.h"

#define SSE_RETRY_MAX_MS 86400000L /* larger retry values are clamped to one day */

struct sse_parser {
    size_t max_event;  /* cap on one event's data plus its current line, in bytes */
    struct buf line;   /* the line being read (only while not oversize) */
    size_t line_bytes; /* bytes seen on the current line, stored or not */
    struct buf data;   /* the event's data buffer */
    struct buf type;   /* the event's type buffer */
    char *id_buf;      /* the "last event ID buffer": set by id:, NULL when empty */
    char *last_id;     /* committed at each blank line: what Last-Event-ID carries; NULL = none */
    long retry_ms;     /* the stream's reconnection time; -1 until a retry: field sets it */
    unsigned bom;      /* BOM bytes matched at the start; 3 once the start is decided */
    int after_cr;      /* the previous chunk ended with CR: a leading LF belongs to it */
    int oversize;      /* the current event outgrew max_event: skipped until its blank line */
    unsigned long dropped; /* events dropped for size */
};

/* One dispatched event. type is never NULL ("message" by default); data is NUL-terminated
 * and len excludes the NUL. Both are borrowed for the duration of the call. */
typedef void (*sse_event_fn)(void *ud, const char *type, const char *data, size_t len);

void sse_init(struct sse_parser *p, size_t max_event);
/* Feeds a chunk; calls fn for every event completed by it. O(len) plus copying of lines
 * split across chunks. */
void sse_feed(struct sse_parser *p, const char *chunk, size_t len, sse_event_fn fn, void *ud);
/* Releases the buffers; the parser must be sse_init()ed again before reuse. */
void sse_free(struct sse_parser *p);

#endif
