/* namespaces — see namespaces.h. Owns the table of namespaces (with their handles and
 * tombstones), the principal of each session and home, and the eviction policy; it never
 * talks to a worker itself (runs.c carries the drops, the home_empty callback ends a worker)
 * and never blocks. Linear scans over small arrays: the table holds the namespaces that may
 * run (at most CODEMCP_MAX_NAMESPACES with variables, plus new ones and, per session, one
 * dropped implicit namespace whose note its successor carries); what a dropped handle says is
 * in a separate ring of MAX_GONE tombstones, read only when a handle is not in the table. (With
 * tombstones in the table, every request of a client that never passes its handle back paid
 * for scans of ~4,000 entries: 17 % of the gateway's CPU per 2026 execute_python.) A handle is
 * found by its tag (SipHash-2-4 under a random per-process key: comparing tags tells an
 * observer nothing that helps to guess a handle), then compared in constant time. */
#include "namespaces.h"
#include "log.h"
#include "settings.h"
#include "loop.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define SWEEP_MS   10000
#define PRINCIPAL  64
#define MAX_GONE   4096 /* tombstones kept, oldest forgotten first */
#define HOME_BIT   (UINT64_C(1) << 63)
#define HANDLE_RAW 24 /* random bytes per handle: 192 bits */

enum ns_state { NS_NEW, NS_LIVE, NS_GONE };

struct ns { /* the fields every scan reads first, the texts after */
    uint64_t nid;
    uint64_t home;
    uint64_t tag;        /* of the handle, for lookup (handle_tag) */
    enum ns_state state; /* NEW: no run yet; LIVE: holds variables; GONE: a dropped implicit one */
    int implicit;        /* the implicit namespace of its home session (no handle given) */
    int busy;            /* runs in flight */
    int64_t last_used;   /* end of the last run (or start of the current one) */
    char handle[NS_HANDLE_SIZE];
    char principal[PRINCIPAL];
    char note[220]; /* implicit namespaces: why the variables went, for the next run */
    char why[200];  /* GONE: what happened, for a run naming the handle */
};

/* What a dropped namespace's handle says afterwards. */
struct tomb {
    uint64_t tag, nid;
    char handle[NS_HANDLE_SIZE];
    char principal[PRINCIPAL];
    char why[200];
};

struct sess {
    uint64_t id;
    char principal[PRINCIPAL];
};

struct drop {
    uint64_t home, nid;
};

static struct ns *tab;
static size_t n_tab, cap_tab;
static struct sess *sess;
static size_t n_sess, cap_sess;
static char (*homes)[PRINCIPAL]; /* principal homes: index + 1 | HOME_BIT */
static size_t n_homes, cap_homes;
static struct drop *drops;
static size_t n_drops, cap_drops;
static struct tomb *tombs; /* a ring of MAX_GONE, the oldest overwritten */
static size_t n_tombs, next_tomb;
static uint64_t next_nid = 1;
static long max_live = 256;
static long max_per_principal = 64;
static int64_t idle_ms = 30L * 60 * 1000;
static void (*home_empty_cb)(uint64_t);
static struct lp_timer sweep_timer;
static int sweeping;

#define GROW(arr, n, cap, first)                                                                   \
    do {                                                                                           \
        if ((n) == (cap)) {                                                                        \
            (cap) = (cap) ? (cap)*2 : (first);                                                     \
            (arr) = xrealloc((arr), (cap) * sizeof(*(arr)));                                       \
        }                                                                                          \
    } while (0)

/* ---- principals and homes ----------------------------------------------------------------- */

/* Copies a principal name, cut to PRINCIPAL - 1 bytes (snprintf "%s" did the same, slower:
 * these run on every 2026 request). */
static void copy_principal(char *dst, const char *src)
{
    size_t n = strnlen(src, PRINCIPAL - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static const char *named_principal(uint64_t id)
{
    for (size_t i = 0; i < n_sess; i++)
        if (sess[i].id == id)
            return sess[i].principal;
    return NULL;
}

static const char *session_principal(uint64_t id)
{
    const char *p = named_principal(id);
    return p ? p : "local";
}

static const char *home_principal(uint64_t home)
{
    if (home & HOME_BIT) {
        uint64_t i = (home & ~HOME_BIT) - 1;
        return i < n_homes ? homes[i] : "local";
    }
    return session_principal(home);
}

/* Who is asking: the session's principal, else (never named) its home's. */
static const char *asker(uint64_t session_id, uint64_t home)
{
    const char *p = named_principal(session_id);
    return p ? p : home_principal(home);
}

const char *ns_asker(uint64_t session_id, uint64_t home)
{
    return asker(session_id, home);
}

void ns_set_principal(uint64_t session_id, const char *principal)
{
    const char *p = principal && *principal ? principal : "local";
    for (size_t i = 0; i < n_sess; i++)
        if (sess[i].id == session_id) {
            copy_principal(sess[i].principal, p);
            return;
        }
    GROW(sess, n_sess, cap_sess, 16);
    sess[n_sess].id = session_id;
    copy_principal(sess[n_sess].principal, p);
    n_sess++;
}

uint64_t ns_principal_home(const char *principal)
{
    char p[PRINCIPAL];
    copy_principal(p, principal && *principal ? principal : "local");
    for (size_t i = 0; i < n_homes; i++)
        if (strcmp(homes[i], p) == 0)
            return HOME_BIT | (uint64_t)(i + 1);
    GROW(homes, n_homes, cap_homes, 8);
    memcpy(homes[n_homes++], p, PRINCIPAL);
    return HOME_BIT | (uint64_t)n_homes;
}

/* ---- the table ----------------------------------------------------------------------------- */

static struct ns *find_nid(uint64_t nid)
{
    for (size_t i = 0; i < n_tab; i++)
        if (tab[i].nid == nid)
            return &tab[i];
    return NULL;
}

/* Fills out with NS_HANDLE_PREFIX + base64url of HANDLE_RAW bytes from the OS. 0 / -1. */
static int mint_handle(char *out)
{
    if (replica_id()) { /* routable by the balancer, checkable by every replica */
        memcpy(out, NS_HANDLE_PREFIX, strlen(NS_HANDLE_PREFIX));
        return replica_mint("ns", out + strlen(NS_HANDLE_PREFIX),
                            NS_HANDLE_SIZE - strlen(NS_HANDLE_PREFIX));
    }
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned char raw[HANDLE_RAW];
    size_t got = 0;
    while (got < sizeof(raw)) {
        ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            log_error("namespaces", "getrandom failed: %s", strerror(errno));
            return -1;
        }
        got += (size_t)n;
    }
    char *o = out + strlen(NS_HANDLE_PREFIX);
    memcpy(out, NS_HANDLE_PREFIX, strlen(NS_HANDLE_PREFIX));
    for (size_t i = 0; i < sizeof(raw); i += 3) {
        uint32_t v = (uint32_t)raw[i] << 16 | (uint32_t)raw[i + 1] << 8 | raw[i + 2];
        *o++ = b64[v >> 18 & 63];
        *o++ = b64[v >> 12 & 63];
        *o++ = b64[v >> 6 & 63];
        *o++ = b64[v & 63];
    }
    *o = '\0';
    explicit_bzero(raw, sizeof(raw));
    return 0;
}

/* SipHash-2-4 (Aumasson, Bernstein) of n bytes under a 128-bit key. */
#define SIP_ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIP_ROUND(v0, v1, v2, v3)                                                                  \
    do {                                                                                           \
        v0 += v1, v1 = SIP_ROTL(v1, 13), v1 ^= v0, v0 = SIP_ROTL(v0, 32);                          \
        v2 += v3, v3 = SIP_ROTL(v3, 16), v3 ^= v2;                                                 \
        v0 += v3, v3 = SIP_ROTL(v3, 21), v3 ^= v0;                                                 \
        v2 += v1, v1 = SIP_ROTL(v1, 17), v1 ^= v2, v2 = SIP_ROTL(v2, 32);                          \
    } while (0)

static uint64_t siphash24(const uint64_t k[2], const unsigned char *p, size_t n)
{
    uint64_t v0 = k[0] ^ UINT64_C(0x736f6d6570736575), v1 = k[1] ^ UINT64_C(0x646f72616e646f6d);
    uint64_t v2 = k[0] ^ UINT64_C(0x6c7967656e657261), v3 = k[1] ^ UINT64_C(0x7465646279746573);
    uint64_t b = (uint64_t)n << 56, m;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        m = 0;
        for (int j = 7; j >= 0; j--)
            m = m << 8 | p[i + (size_t)j];
        v3 ^= m;
        SIP_ROUND(v0, v1, v2, v3);
        SIP_ROUND(v0, v1, v2, v3);
        v0 ^= m;
    }
    for (size_t j = 0; i + j < n; j++)
        b |= (uint64_t)p[i + j] << (8 * j);
    v3 ^= b;
    SIP_ROUND(v0, v1, v2, v3);
    SIP_ROUND(v0, v1, v2, v3);
    v0 ^= b;
    v2 ^= 0xff;
    for (int r = 0; r < 4; r++)
        SIP_ROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

/* A handle's lookup tag: a keyed hash under a random per-process key, so that which tags
 * compare equal (or how fast) tells an observer nothing about any handle. (SHA-256 did the
 * same at ~6k instructions per lookup, 2 % of a 2026 execute_python; SipHash costs ~0.3k.)
 * The key is drawn once, at the first use; without randomness then it stays zero (tags
 * still work, they are only predictable). */
static uint64_t handle_tag(const char *h)
{
    static uint64_t key[2];
    static int keyed;
    if (!keyed) {
        keyed = 1;
        if (getrandom(key, sizeof(key), GRND_NONBLOCK) != (ssize_t)sizeof(key))
            key[0] = key[1] = 0;
    }
    return siphash24(key, (const unsigned char *)h, strlen(h));
}

static struct ns *new_ns(uint64_t home, const char *principal, int implicit)
{
    char handle[NS_HANDLE_SIZE];
    if (mint_handle(handle) < 0)
        return NULL;
    GROW(tab, n_tab, cap_tab, 32);
    struct ns *e = &tab[n_tab++];
    memset(e, 0, sizeof(*e));
    e->nid = next_nid++;
    e->home = home;
    memcpy(e->handle, handle, sizeof(handle));
    e->tag = handle_tag(handle);
    snprintf(e->principal, sizeof(e->principal), "%s", principal);
    e->state = NS_NEW;
    e->implicit = implicit;
    e->last_used = now_ms();
    return e;
}

static void remove_at(size_t i)
{
    explicit_bzero(tab[i].handle, sizeof(tab[i].handle));
    tab[i] = tab[--n_tab];
}

/* Remembers what e's handle says from now on (e is not changed). */
static void add_tomb(const struct ns *e, const char *why)
{
    if (!tombs && !(tombs = calloc(MAX_GONE, sizeof(*tombs))))
        abort();
    struct tomb *t = &tombs[next_tomb];
    t->tag = e->tag;
    t->nid = e->nid;
    memcpy(t->handle, e->handle, sizeof(t->handle));
    memcpy(t->principal, e->principal, sizeof(t->principal));
    snprintf(t->why, sizeof(t->why), "%s", why);
    next_tomb = (next_tomb + 1) % MAX_GONE;
    if (n_tombs < MAX_GONE)
        n_tombs++;
}

static const struct tomb *tomb_of_nid(uint64_t nid)
{
    for (size_t i = 0; i < n_tombs; i++)
        if (tombs[i].nid == nid)
            return &tombs[i];
    return NULL;
}

static int home_holds_any(uint64_t home)
{
    for (size_t i = 0; i < n_tab; i++)
        if (tab[i].home == home && tab[i].state != NS_GONE)
            return 1;
    return 0;
}

static void forget_drops(uint64_t home)
{
    for (size_t i = 0; i < n_drops;)
        if (drops[i].home == home)
            drops[i] = drops[--n_drops];
        else
            i++;
}

/* e's variables go. note: the implicit namespace's next-run note; why: a tombstone's story
 * ("expired after 31 min idle"). tell_home: report a home left empty (not when the home itself
 * is what went away). */
static void drop(struct ns *e, const char *why_log, const char *note, const char *why,
                 int tell_home)
{
    log_info("namespaces", "namespace n%llu of %s (home %llx): variables dropped (%s)",
             (unsigned long long)e->nid, e->principal, (unsigned long long)e->home, why_log);
    if (e->state == NS_LIVE) {
        GROW(drops, n_drops, cap_drops, 16);
        drops[n_drops++] = (struct drop){e->home, e->nid};
    }
    add_tomb(e, why);
    uint64_t home = e->home;
    if (e->implicit) { /* stays, GONE, so that its successor can tell the session why */
        e->state = NS_GONE;
        snprintf(e->note, sizeof(e->note), "%s", note);
        snprintf(e->why, sizeof(e->why), "%s", why);
    } else {
        remove_at((size_t)(e - tab)); /* moves an entry: e is not used past here */
    }
    if (tell_home && !home_holds_any(home)) {
        forget_drops(home); /* the worker goes with them */
        if (home_empty_cb)
            home_empty_cb(home);
    }
}

static void fmt_idle(char *out, size_t n, int64_t idle)
{
    if (idle >= 60000)
        snprintf(out, n, "%lld min", (long long)(idle / 60000));
    else if (idle >= 1000)
        snprintf(out, n, "%lld s", (long long)(idle / 1000));
    else
        snprintf(out, n, "%lld ms", (long long)idle);
}

/* tell_home: 0 when found idle while resolving a run (its home's worker stays: the run may
 * need it, and a worker ended then would still be going away when the run is queued; the
 * worker's own idle timer, CODEMCP_SESSION_IDLE_MS, ends it otherwise). */
static void drop_idle(struct ns *e, int64_t idle, int tell_home)
{
    char t[32], note[220], why[200];
    fmt_idle(t, sizeof(t), idle);
    snprintf(note, sizeof(note), "this session's variables were discarded after %s idle", t);
    snprintf(why, sizeof(why), "expired after %s idle", t);
    drop(e, "idle", note, why, tell_home);
}

static size_t live_count(void)
{
    size_t n = 0;
    for (size_t i = 0; i < n_tab; i++)
        n += tab[i].state == NS_LIVE;
    return n;
}

static int idle_past_ttl(const struct ns *e, int64_t now)
{
    return e->state != NS_GONE && !e->busy && now - e->last_used >= idle_ms;
}

static void sweep(void *ud)
{
    (void)ud;
    int64_t now = now_ms();
    for (size_t i = 0; i < n_tab;) {
        if (!idle_past_ttl(&tab[i], now)) {
            i++;
        } else if (tab[i].state == NS_NEW) { /* no variables: nothing to tell */
            if (tab[i].implicit)
                i++; /* keeps its note for the session's next run */
            else
                remove_at(i);
        } else {
            drop_idle(&tab[i], now - tab[i].last_used, 1);
            i = 0; /* the table may have moved; dropped entries are skipped */
        }
    }
    size_t kept = 0;
    for (size_t i = 0; i < n_tab; i++)
        kept += tab[i].state == NS_LIVE || (tab[i].state == NS_NEW && !tab[i].implicit);
    sweeping = kept > 0;
    if (sweeping)
        lp_timer_start(&sweep_timer, idle_ms < SWEEP_MS ? idle_ms : SWEEP_MS, sweep, NULL);
}

static void arm_sweep(void)
{
    if (!sweeping) {
        sweeping = 1;
        lp_timer_start(&sweep_timer, idle_ms < SWEEP_MS ? idle_ms : SWEEP_MS, sweep, NULL);
    }
}

void ns_init(const struct settings *s, void (*home_empty)(uint64_t home))
{
    home_empty_cb = home_empty;
    max_live = s->max_namespaces;
    if (max_live < 1)
        max_live = 1;
    max_per_principal = s->max_namespaces_per_principal;
    if (max_per_principal < 1)
        max_per_principal = 1;
    idle_ms = s->namespace_idle_ms;
    if (idle_ms < 100)
        idle_ms = 100;
}

/* ---- resolving a run's namespace --------------------------------------------------------- */

/* In a fleet: -1 with err filled when h is a real handle of another replica, or of this
 * one's previous run (its variables went with it); else 0. */
static int lost_replica(const char *h, char *err, size_t errlen)
{
    char who[REPLICA_ID_MAX + 1];
    size_t np = strlen(NS_HANDLE_PREFIX);
    if (!replica_id() || strncmp(h, NS_HANDLE_PREFIX, np) != 0)
        return 0;
    enum replica_verdict v = replica_check("ns", h + np, who);
    if (v == REPLICA_OTHER)
        snprintf(err, errlen,
                 "namespace lost: this handle belongs to replica %s of this fleet, which did not "
                 "get this request: it is gone (stopped, restarted or unreachable) and its "
                 "variables and any run in flight there are lost, or the request lacked the "
                 "Mcp-Param-Namespace header the load balancer routes on (a 2026 client sends it "
                 "once it has listed the tools). Leave `namespace` out to start a new one",
                 who);
    else if (v == REPLICA_EARLIER)
        snprintf(err, errlen,
                 "namespace lost: replica %s restarted since it issued this handle; its variables "
                 "are lost. Leave `namespace` out to start a new one",
                 who);
    return v == REPLICA_OTHER || v == REPLICA_EARLIER ? -1 : 0;
}

static int well_formed(const char *h)
{
    size_t np = strlen(NS_HANDLE_PREFIX);
    char who[REPLICA_ID_MAX + 1];
    if (replica_id() && strncmp(h, NS_HANDLE_PREFIX, np) == 0 &&
        replica_check("ns", h + np, who) == REPLICA_MINE)
        return 1;
    if (strncmp(h, NS_HANDLE_PREFIX, np) != 0 || strlen(h) != np + NS_HANDLE_CHARS)
        return 0;
    for (const char *c = h + np; *c; c++)
        if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_'))
            return 0;
    return 1;
}

/* The entry whose handle is h (same tag, then a constant-time comparison). */
static struct ns *find_handle(const char *h)
{
    static struct ns seen; /* a tombstone, seen as a GONE entry */
    uint64_t tag = handle_tag(h);
    struct ns *hit = NULL;
    for (size_t i = 0; i < n_tab; i++)
        if (tab[i].tag == tag && secure_streq(tab[i].handle, h))
            hit = &tab[i];
    if (hit)
        return hit;
    for (size_t i = 0; i < n_tombs; i++)
        if (tombs[i].tag == tag && secure_streq(tombs[i].handle, h)) {
            memset(&seen, 0, sizeof(seen));
            seen.tag = tag;
            seen.nid = tombs[i].nid;
            seen.state = NS_GONE;
            memcpy(seen.handle, tombs[i].handle, sizeof(seen.handle));
            memcpy(seen.principal, tombs[i].principal, sizeof(seen.principal));
            memcpy(seen.why, tombs[i].why, sizeof(seen.why));
            hit = &seen;
        }
    return hit;
}

static void fill(struct ns_ref *out, const struct ns *e)
{
    out->nid = e->nid;
    out->home = e->home;
    memcpy(out->handle, e->handle, sizeof(out->handle));
}

static struct ns *implicit_of(uint64_t home)
{
    for (size_t i = 0; i < n_tab; i++)
        if (tab[i].implicit && tab[i].home == home)
            return &tab[i];
    return NULL;
}

/* No handle: the session's implicit namespace when it is its own home (a new one, carrying
 * the old one's note, when that went), else a fresh namespace in the home. */
static int resolve_implicit(uint64_t session_id, uint64_t home, struct ns_ref *out, char *err,
                            size_t errlen)
{
    int64_t now = now_ms();
    int own = home == session_id;
    struct ns *e = own ? implicit_of(home) : NULL;
    if (e && e->state == NS_LIVE && idle_past_ttl(e, now)) {
        drop_idle(e, now - e->last_used, 0);
        e = implicit_of(home); /* the table may have moved */
    }
    if (e && e->state != NS_GONE) {
        fill(out, e);
        return 0;
    }
    char note[sizeof(e->note)] = "";
    if (e) { /* the implicit namespace went: its successor tells why (its tombstone stays) */
        snprintf(note, sizeof(note), "%s", e->note);
        remove_at((size_t)(e - tab));
    }
    struct ns *n = new_ns(home, asker(session_id, home), own);
    if (!n) {
        snprintf(err, errlen, "codemcp could not create a namespace (no randomness available)");
        return -1;
    }
    snprintf(n->note, sizeof(n->note), "%s", note);
    arm_sweep();
    fill(out, n);
    return 0;
}

int ns_resolve(uint64_t session_id, uint64_t home, const char *handle, struct ns_ref *out,
               char *err, size_t errlen)
{
    if (!handle)
        return resolve_implicit(session_id, home, out, err, errlen);
    const char *me = asker(session_id, home);
    if (lost_replica(handle, err, errlen) < 0)
        return -1;
    if (!well_formed(handle)) {
        snprintf(err, errlen,
                 "malformed namespace handle: `namespace` must be a handle an earlier "
                 "execute_python result returned (\"%s\" followed by %d letters, digits, - or _); "
                 "leave it out to start a new namespace",
                 NS_HANDLE_PREFIX, NS_HANDLE_CHARS);
        return -1;
    }
    struct ns *e = find_handle(handle);
    int foreign = e && strcmp(e->principal, me) != 0;
    if (foreign) {
        /* Answered exactly like a handle never issued: no oracle for other principals'. */
        log_warn("namespaces", "session %llu (%s) named a namespace of another principal",
                 (unsigned long long)session_id, me);
        e = NULL;
    }
    int64_t now = now_ms();
    if (e && e->state == NS_LIVE && idle_past_ttl(e, now)) {
        drop_idle(e, now - e->last_used, 0);
        e = find_handle(handle); /* now its tombstone (or forgotten past MAX_GONE) */
    }
    if (!e) {
        if (!foreign) /* logged alike, so the log's cost tells nothing either */
            log_warn("namespaces", "session %llu (%s) named an unknown namespace handle",
                     (unsigned long long)session_id, me);
        snprintf(err, errlen,
                 "unknown namespace handle: no namespace of yours has it (it was never issued to "
                 "this principal, or it was forgotten long ago); leave `namespace` out to start "
                 "a new one");
        return -1;
    }
    if (e->state == NS_GONE) {
        snprintf(err, errlen,
                 "namespace %s; its variables were discarded. Leave `namespace` out to start a "
                 "new one",
                 e->why);
        return -1;
    }
    fill(out, e);
    return 0;
}

/* ---- runs ------------------------------------------------------------------------------------ */

/* The namespace to drop to make room for `who`, or NULL: the least recently used idle one of
 * the same principal, else (unless own_only) another principal's that is past the idle TTL. */
static struct ns *victim(const struct ns *who, int own_only)
{
    struct ns *same = NULL, *other = NULL;
    int64_t now = now_ms();
    for (size_t i = 0; i < n_tab; i++) {
        struct ns *e = &tab[i];
        if (e->state != NS_LIVE || e->busy || e == who)
            continue;
        if (strcmp(e->principal, who->principal) == 0) {
            if (!same || e->last_used < same->last_used)
                same = e;
        } else if (!own_only && now - e->last_used >= idle_ms &&
                   (!other || e->last_used < other->last_used)) {
            other = e;
        }
    }
    return same ? same : other;
}

static long live_of(const char *principal)
{
    long n = 0;
    for (size_t i = 0; i < n_tab; i++)
        n += tab[i].state == NS_LIVE && strcmp(tab[i].principal, principal) == 0;
    return n;
}

/* Room for namespace nid (about to hold variables): first under its principal's share
 * (CODEMCP_MAX_NAMESPACES_PER_PRINCIPAL, so one principal cannot fill the table for the
 * others), then under the total. 0, or -1 with err filled. */
static int make_room(uint64_t nid, char *err, size_t errlen)
{
    for (;;) {
        struct ns *e = find_nid(nid); /* the table may have moved */
        int share = live_of(e->principal) >= max_per_principal;
        if (!share && (long)live_count() < max_live)
            return 0;
        struct ns *v = victim(e, share);
        if (!v) {
            if (share)
                snprintf(err, errlen,
                         "this principal already has %ld namespaces with variables "
                         "(CODEMCP_MAX_NAMESPACES_PER_PRINCIPAL) and all of them are running: "
                         "retry when one has finished",
                         max_per_principal);
            else
                snprintf(err, errlen,
                         "codemcp keeps the variables of at most %ld namespaces "
                         "(CODEMCP_MAX_NAMESPACES) and none can be dropped now (they are in use "
                         "or belong to other principals and are not idle): end an unused session "
                         "or retry later",
                         max_live);
            log_warn("namespaces", "namespace n%llu (%s): refused, %zu namespaces kept",
                     (unsigned long long)nid, e->principal, live_count());
            return -1;
        }
        if (strcmp(v->principal, e->principal) == 0)
            drop(v, "room was needed",
                 "this session's variables were discarded to make room: its principal has more "
                 "namespaces with variables than CODEMCP_MAX_NAMESPACES(_PER_PRINCIPAL) allows "
                 "(least recently used first)",
                 "was discarded to make room (its principal had more namespaces than "
                 "CODEMCP_MAX_NAMESPACES(_PER_PRINCIPAL) allows; least recently used first)",
                 1);
        else
            drop(v, "room was needed, idle",
                 "this session's variables were discarded to make room after it had been idle "
                 "for CODEMCP_NAMESPACE_IDLE_MS",
                 "was discarded to make room after it had been idle for "
                 "CODEMCP_NAMESPACE_IDLE_MS",
                 1);
    }
}

int ns_run_start(uint64_t nid, const char **note, int *fresh, char *err, size_t errlen)
{
    static char note_buf[220];
    note_buf[0] = '\0';
    *note = note_buf;
    *fresh = 0;
    struct ns *e = find_nid(nid);
    if (!e || e->state == NS_GONE) {
        const struct tomb *t = e ? NULL : tomb_of_nid(nid);
        snprintf(err, errlen,
                 "this run's namespace was discarded while the run waited (%s); run it again "
                 "without `namespace`",
                 e   ? e->why
                 : t ? t->why
                     : "forgotten");
        return -1;
    }
    if (e->state == NS_NEW) {
        if (make_room(nid, err, errlen) < 0)
            return -1;
        e = find_nid(nid);
        e->state = NS_LIVE;
        *fresh = 1;
        snprintf(note_buf, sizeof(note_buf), "%s", e->note);
        e->note[0] = '\0';
    }
    e->busy++;
    e->last_used = now_ms();
    arm_sweep();
    return 0;
}

void ns_run_end(uint64_t nid)
{
    struct ns *e = find_nid(nid);
    if (!e)
        return;
    if (e->busy > 0)
        e->busy--;
    e->last_used = now_ms();
}

json_t *ns_take_drops(uint64_t home)
{
    json_t *a = NULL;
    for (size_t i = 0; i < n_drops;) {
        if (drops[i].home != home) {
            i++;
            continue;
        }
        char key[32];
        snprintf(key, sizeof(key), "n%llu", (unsigned long long)drops[i].nid);
        if (!a)
            a = json_array();
        json_array_append_new(a, json_string(key));
        drops[i] = drops[--n_drops];
    }
    return a;
}

/* Every namespace of home goes (the home itself went): tombstones telling `why`. Namespaces
 * that never ran are forgotten, except (keep_implicit) the home's implicit one, which keeps
 * the note for its first run. */
static void drop_home(uint64_t home, const char *why_log, const char *note, const char *why,
                      int keep_implicit)
{
    for (size_t i = 0; i < n_tab;) {
        struct ns *e = &tab[i];
        if (e->home != home || e->state == NS_GONE ||
            (e->state == NS_NEW && e->implicit && keep_implicit)) {
            i++;
        } else if (e->state == NS_NEW) {
            remove_at(i);
        } else {
            drop(e, why_log, note, why, 0);
            i = 0; /* the table may have moved; dropped entries are skipped */
        }
    }
    forget_drops(home);
}

void ns_forget(uint64_t session_id)
{
    drop_home(session_id, "its session closed", "",
              "ended with the MCP session that held it (a session's namespaces end with it)", 0);
    for (size_t i = 0; i < n_tab;) /* a dropped implicit one: its tombstone is enough now */
        if (tab[i].home == session_id)
            remove_at(i);
        else
            i++;
    for (size_t i = 0; i < n_sess; i++)
        if (sess[i].id == session_id) {
            sess[i] = sess[--n_sess];
            break;
        }
}

void ns_home_lost(uint64_t home)
{
    /* The implicit namespace's next answer carries workers.c's own notice: no second note. */
    drop_home(home, "its worker was ended", "",
              "was lost when its Python worker was ended (idle longer than "
              "CODEMCP_SESSION_IDLE_MS, or to make room for another session)",
              1);
}

/* How many of the holders belong to principal p. */
static size_t held_by(const char *p, const struct ns_holder *h, size_t n)
{
    size_t c = 0;
    for (size_t k = 0; k < n; k++)
        c += strcmp(home_principal(h[k].home), p) == 0;
    return c;
}

/* When home was last used (0: never), and whether one of its namespaces runs now. */
static int64_t home_last_used(uint64_t home, int *busy)
{
    int64_t last = 0;
    *busy = 0;
    for (size_t i = 0; i < n_tab; i++)
        if (tab[i].home == home && tab[i].state != NS_GONE) {
            *busy |= tab[i].busy > 0;
            if (tab[i].last_used > last)
                last = tab[i].last_used;
        }
    return last;
}

int ns_pick_home_victim(uint64_t for_home, const struct ns_holder *h, size_t n)
{
    char me[PRINCIPAL];
    copy_principal(me, home_principal(for_home));
    size_t mine = held_by(me, h, n), most = 0;
    int64_t now = now_ms();
    int fair = -1, same = -1, stale = -1;
    int64_t fair_t = 0, same_t = 0, stale_t = 0;
    for (size_t k = 0; k < n; k++) {
        int busy;
        int64_t last = home_last_used(h[k].home, &busy);
        if (!h[k].may_go || busy)
            continue;
        const char *p = home_principal(h[k].home);
        size_t theirs = held_by(p, h, n);
        if (strcmp(p, me) == 0) {
            if (same < 0 || last < same_t)
                same = (int)k, same_t = last;
        } else if (theirs > mine && (theirs > most || (theirs == most && last < fair_t))) {
            fair = (int)k, fair_t = last, most = theirs;
        } else if (now - last >= idle_ms && (stale < 0 || last < stale_t)) {
            stale = (int)k, stale_t = last;
        }
    }
    return fair >= 0 ? fair : same >= 0 ? same : stale;
}

size_t ns_count(void)
{
    return live_count();
}

void ns_free_all(void)
{
    if (sweeping)
        lp_timer_stop(&sweep_timer);
    sweeping = 0;
    for (size_t i = 0; i < n_tab; i++)
        explicit_bzero(tab[i].handle, sizeof(tab[i].handle));
    if (tombs)
        explicit_bzero(tombs, MAX_GONE * sizeof(*tombs));
    free(tombs);
    tombs = NULL;
    n_tombs = next_tomb = 0;
    free(tab);
    free(sess);
    free(homes);
    free(drops);
    tab = NULL;
    sess = NULL;
    homes = NULL;
    drops = NULL;
    n_tab = cap_tab = n_sess = cap_sess = n_homes = cap_homes = n_drops = cap_drops = 0;
}
