/* http_quota — the session limits both HTTP transports share: sessions one principal may hold
 * (CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL) and sessions in all (CODEMCP_HTTP_MAX_SESSIONS),
 * Streamable HTTP (serve_http.c) and HTTP+SSE (serve_sse_legacy.c) together. A transport asks
 * hq_refused before it opens a session; http_stream.c's http__session_open and
 * http__session_close, which both transports use, count it. */
#ifndef CODEMCP_HTTP_QUOTA_H
#define CODEMCP_HTTP_QUOTA_H

struct hconn;

/* retry_after(principal): the seconds a refused client should wait (Retry-After); may be NULL. */
void hq_init(long max_sessions, long max_sessions_per_principal,
             long (*retry_after)(const char *principal));
/* 1 after answering c with 429 (its principal is at its limit) or 503 (all sessions are
 * taken), else 0: c may open a session. */
int hq_refused(struct hconn *c);
void hq_opened(const char *principal);
void hq_closed(const char *principal);

#endif
