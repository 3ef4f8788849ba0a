/* http_quota — see http_quota.h. Counts only: the sessions themselves stay in their
 * transport's list. Principals are few (one per bearer token, or per peer address without
 * auth), so a small array searched in order is enough; an entry goes when its count is 0. */
#include "http_quota.h"
#include "http_int.h"
#include "jsonrpc.h"
#include "log.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

#define MODULE "http"

struct count {
    char principal[64];
    long n;
};

static struct count *counts;
static size_t n_counts, cap_counts;
static long total, max_total, max_per_principal;
static long (*retry_after_s)(const char *principal);

void hq_init(long max_sessions, long max_sessions_per_principal,
             long (*retry_after)(const char *principal))
{
    max_total = max_sessions;
    max_per_principal = max_sessions_per_principal;
    retry_after_s = retry_after;
}

static struct count *find(const char *principal)
{
    for (size_t i = 0; i < n_counts; i++)
        if (strcmp(counts[i].principal, principal) == 0)
            return &counts[i];
    return NULL;
}

static long of(const char *principal)
{
    struct count *c = find(principal);
    return c ? c->n : 0;
}

void hq_opened(const char *principal)
{
    struct count *c = find(principal);
    if (!c) {
        if (n_counts == cap_counts) {
            cap_counts = cap_counts ? 2 * cap_counts : 8;
            counts = xrealloc(counts, cap_counts * sizeof(*counts));
        }
        c = &counts[n_counts++];
        snprintf(c->principal, sizeof(c->principal), "%s", principal);
        c->n = 0;
    }
    c->n++;
    total++;
}

void hq_closed(const char *principal)
{
    struct count *c = find(principal);
    if (!c)
        return;
    total--;
    if (--c->n == 0)
        *c = counts[--n_counts];
}

int hq_refused(struct hconn *c)
{
    char text[300];
    if (of(c->principal) >= max_per_principal) {
        snprintf(c->retry_after, sizeof(c->retry_after), "%ld",
                 retry_after_s ? retry_after_s(c->principal) : 1L);
        c->extra_name = "retry-after:";
        c->extra_value = c->retry_after;
        log_warn(MODULE, "%s has %ld sessions (CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL): 429",
                 c->principal, max_per_principal);
        snprintf(text, sizeof(text),
                 "Too Many Requests: %s already has %ld sessions "
                 "(CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL); end unused ones with DELETE or "
                 "retry later",
                 c->principal, max_per_principal);
        http__reply_error(c, 429, RPC_SERVER_ERROR, text);
        return 1;
    }
    if (total >= max_total) {
        http__reply_error(
            c, 503, RPC_SERVER_ERROR,
            "too many sessions (CODEMCP_HTTP_MAX_SESSIONS); end unused ones with DELETE");
        return 1;
    }
    return 0;
}
