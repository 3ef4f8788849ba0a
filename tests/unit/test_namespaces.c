/* test_namespaces — the namespace table (src/run/namespaces.c): handles (form, uniqueness),
 * implicit and fresh namespaces, continuation across sessions of one principal, foreign
 * handles answered like unknown ones, the idle TTL and its tombstones, room per principal,
 * and the rule workers.c asks before ending a home's worker. No loop is run: idleness is
 * checked lazily when a handle is resolved. */
#include "check.h"
#include "loop.h"
#include "namespaces.h"
#include "settings.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t emptied[16];
static size_t n_emptied;

static void on_home_empty(uint64_t home)
{
    if (n_emptied < 16)
        emptied[n_emptied++] = home;
}

static int well_formed(const char *h)
{
    if (strncmp(h, "ns_", 3) != 0 || strlen(h) != 3 + NS_HANDLE_CHARS)
        return 0;
    for (const char *c = h + 3; *c; c++)
        if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", *c))
            return 0;
    return 1;
}

/* Resolves and runs once (start + end) in the namespace; returns its ref. */
static struct ns_ref use(uint64_t session, uint64_t home, const char *handle)
{
    struct ns_ref r;
    char err[400];
    const char *note;
    int fresh;
    memset(&r, 0, sizeof(r));
    if (ns_resolve(session, home, handle, &r, err, sizeof(err)) == 0 &&
        ns_run_start(r.nid, &note, &fresh, err, sizeof(err)) == 0)
        ns_run_end(r.nid);
    return r;
}

static int resolve_err(uint64_t session, const char *handle, char *err, size_t n)
{
    struct ns_ref r;
    return ns_resolve(session, session, handle, &r, err, n);
}

int main(void)
{
    struct settings s;
    settings_load(&s);
    s.namespace_idle_ms = 300;
    s.max_namespaces = 3;
    if (lp_init() < 0)
        return 1;
    ns_init(&s, on_home_empty);
    ns_set_principal(1, "alice");
    ns_set_principal(2, "alice");
    ns_set_principal(3, "bob");
    char err[400], err2[400];

    /* Handles: the form, distinct per namespace, not the session id. */
    struct ns_ref a1 = use(1, 1, NULL);
    struct ns_ref b3 = use(3, 3, NULL);
    CHECK(well_formed(a1.handle), "a handle is ns_ + %d base64url characters (%s)", NS_HANDLE_CHARS,
          a1.handle);
    CHECK(strcmp(a1.handle, b3.handle) != 0 && a1.nid != b3.nid, "handles and ids differ");
    CHECK(a1.home == 1 && b3.home == 3, "a session is its own home");

    /* Implicit: the same namespace again without a handle; with its handle, too. */
    struct ns_ref again = use(1, 1, NULL);
    CHECK(again.nid == a1.nid && strcmp(again.handle, a1.handle) == 0,
          "no handle in a session: its implicit namespace");
    struct ns_ref by_handle = use(1, 1, a1.handle);
    CHECK(by_handle.nid == a1.nid, "the handle names the same namespace");

    /* Another session of the same principal: its own implicit namespace, and alice's handle
     * routes to session 1's home. */
    struct ns_ref a2 = use(2, 2, NULL);
    CHECK(a2.nid != a1.nid && a2.home == 2, "another session: another implicit namespace");
    struct ns_ref cross = use(2, 2, a1.handle);
    CHECK(cross.nid == a1.nid && cross.home == 1,
          "a handle from another session of the principal runs in the home holding it");

    /* Foreign: like unknown, word for word. */
    CHECK(resolve_err(3, a1.handle, err, sizeof(err)) < 0, "bob cannot use alice's handle");
    char made_up[NS_HANDLE_SIZE];
    snprintf(made_up, sizeof(made_up), "ns_%032d", 0);
    CHECK(resolve_err(3, made_up, err2, sizeof(err2)) < 0, "a made-up handle is refused");
    CHECK(strcmp(err, err2) == 0 && strncmp(err, "unknown namespace handle", 24) == 0,
          "foreign and unknown get the same message: %s", err);
    CHECK(resolve_err(1, "ns_tooshort", err, sizeof(err)) < 0 &&
              strncmp(err, "malformed namespace handle", 26) == 0,
          "malformed: %s", err);
    CHECK(resolve_err(1, "xx_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", err, sizeof(err)) < 0 &&
              strncmp(err, "malformed", 9) == 0,
          "a wrong prefix is malformed");

    /* Session-less: the principal's home, a fresh namespace per request without a handle. */
    uint64_t ha = ns_principal_home("alice"), hb = ns_principal_home("bob");
    CHECK(ha == ns_principal_home("alice") && ha != hb && (ha >> 63) && (hb >> 63),
          "principal homes are stable, distinct and never a session id");
    ns_set_principal(10, "alice");
    struct ns_ref f1 = use(10, ha, NULL), f2 = use(10, ha, NULL);
    CHECK(f1.nid != f2.nid && f1.home == ha && f2.home == ha,
          "session-less requests without a handle get fresh namespaces in the principal's home");
    ns_forget(10); /* the request's session ends; its namespaces live on in the home */
    ns_set_principal(11, "alice");
    struct ns_ref f1b = use(11, ha, f1.handle);
    CHECK(f1b.nid == f1.nid && f1b.home == ha, "a later request continues with the handle");
    ns_forget(11);
    CHECK(use(20, ha, f1.handle).nid == f1.nid,
          "a session never named is its home's principal's (the transport set only the home)");
    CHECK(use(21, hb, f1.handle).nid == 0, "... and bob's home cannot reach alice's handle");

    /* Room: at most 3 with variables. alice has a1, a2, f1, f2 ... the room rule ran for each
     * new one: only alice's own least recently used went; bob's b3 stays. */
    CHECK(ns_count() <= 3, "at most CODEMCP_MAX_NAMESPACES hold variables (%zu)", ns_count());
    CHECK(resolve_err(3, NULL, err, sizeof(err)) == 0, "bob's implicit namespace survived");
    struct ns_ref b3b = use(3, 3, NULL);
    CHECK(b3b.nid == b3.nid, "bob's variables were never taken for alice's room");
    CHECK(ns_take_drops(1) == NULL,
          "a home left empty has no drops to hand over (its worker is ended instead)");
    CHECK(resolve_err(1, a1.handle, err, sizeof(err)) < 0 &&
              strstr(err, "was discarded to make room") && strstr(err, "variables were discarded"),
          "a handle dropped for room says so: %s", err);
    int home1_told = 0;
    for (size_t i = 0; i < n_emptied; i++)
        home1_told |= emptied[i] == 1;
    CHECK(home1_told, "a home left without namespaces is reported (its worker can go)");

    /* Idle TTL: busy never expires, idle does (lazily, at the next resolve). */
    struct ns_ref busy;
    const char *note;
    int fresh;
    CHECK(ns_resolve(2, 2, NULL, &busy, err, sizeof(err)) == 0 &&
              ns_run_start(busy.nid, &note, &fresh, err, sizeof(err)) == 0,
          "a run starts in a2");
    usleep(400 * 1000);
    CHECK(resolve_err(2, busy.handle, err, sizeof(err)) == 0, "a running namespace never expires");
    ns_run_end(busy.nid);
    json_t *d = ns_take_drops(ha); /* f2 went for a2's new namespace; ha still holds f1 */
    CHECK(json_array_size(d) == 1 && json_is_string(json_array_get(d, 0)) &&
              json_string_value(json_array_get(d, 0))[0] == 'n',
          "a namespace dropped in a living home is handed to its next run as \"n<id>\"");
    json_decref(d);
    CHECK(ns_take_drops(ha) == NULL, "drops are handed over once");
    CHECK(resolve_err(3, b3.handle, err, sizeof(err)) < 0 &&
              strncmp(err, "namespace expired after ", 24) == 0 &&
              strstr(err, " idle; its variables were discarded"),
          "an idle handle: %s", err);
    struct ns_ref b3c;
    CHECK(ns_resolve(3, 3, NULL, &b3c, err, sizeof(err)) == 0 && b3c.nid != b3.nid &&
              ns_run_start(b3c.nid, &note, &fresh, err, sizeof(err)) == 0 && fresh &&
              strstr(note, "this session's variables were discarded after"),
          "the implicit namespace starts over, with a note for the NameError: %s", note);
    ns_run_end(b3c.nid);

    /* Which home's worker may go: a principal holding more workers than the waiting one's
     * first, then the same principal's, another's only past the TTL, never a running one or one
     * that may not go yet. */
    struct ns_holder cand[2] = {{3, 1}, {2, 1}}; /* bob's (recent), alice's */
    CHECK(ns_pick_home_victim(1, cand, 2) == 1, "for alice: her own idle home first");
    struct ns_holder only_bob[1] = {{3, 1}};
    CHECK(ns_pick_home_victim(1, only_bob, 1) == 0,
          "for alice: bob holds every worker, so his idle home gives way (fair share)");
    only_bob[0].may_go = 0;
    CHECK(ns_pick_home_victim(1, only_bob, 1) == -1, "a holder that may not go yet stays");
    struct ns_holder even[2] = {{3, 1}, {2, 0}}; /* bob's idle, alice's busy */
    CHECK(ns_pick_home_victim(1, even, 2) == -1,
          "for alice: one worker each, so bob's recently used home is not taken");
    CHECK(ns_pick_home_victim(3, even, 2) == 0, "bob may give way to himself");
    ns_set_principal(4, "bob");
    struct ns_holder bob_more[3] = {{3, 1}, {2, 1}, {4, 1}}; /* bob 2, alice 1 */
    int v = ns_pick_home_victim(1, bob_more, 3);
    CHECK(v == 0 || v == 2, "for alice: bob holds more, one of his goes before her own (%d)", v);
    usleep(400 * 1000);
    CHECK(ns_pick_home_victim(1, even, 2) == 0, "bob's home past the idle TTL may go");
    struct ns_ref run3;
    ns_resolve(3, 3, NULL, &run3, err, sizeof(err));
    ns_run_start(run3.nid, &note, &fresh, err, sizeof(err));
    only_bob[0].may_go = 1;
    CHECK(ns_pick_home_victim(3, even, 2) == -1 && ns_pick_home_victim(1, only_bob, 1) == -1,
          "a home with a run in flight never goes");
    ns_run_end(run3.nid);

    /* A home's worker ended / a session closed: tombstones that say so. */
    struct ns_ref s2 = use(2, 2, NULL);
    ns_home_lost(2);
    CHECK(resolve_err(2, s2.handle, err, sizeof(err)) < 0 &&
              strstr(err, "was lost when its Python worker was ended"),
          "home lost: %s", err);
    struct ns_ref s3 = use(3, 3, NULL);
    ns_forget(3);
    ns_set_principal(4, "bob");
    CHECK(resolve_err(4, s3.handle, err, sizeof(err)) < 0 &&
              strstr(err, "ended with the MCP session that held it"),
          "session closed: %s", err);

    /* A principal's share: with 2 per principal and 8 in all, alice's third namespace takes
     * her own least recently used one, and bob still finds room. */
    ns_free_all();
    s.max_namespaces = 8;
    s.max_namespaces_per_principal = 2;
    ns_init(&s, on_home_empty);
    ns_set_principal(30, "alice");
    ns_set_principal(31, "bob");
    uint64_t hp = ns_principal_home("alice");
    struct ns_ref p1 = use(30, hp, NULL), p2 = use(30, hp, NULL), p3 = use(30, hp, NULL);
    CHECK(p1.nid && p2.nid && p3.nid && ns_count() == 2,
          "a principal holds at most its share (%zu live)", ns_count());
    CHECK(resolve_err(30, p1.handle, err, sizeof(err)) < 0 && strstr(err, "to make room"),
          "her least recently used one went: %s", err);
    CHECK(resolve_err(30, p2.handle, err, sizeof(err)) == 0, "the others stay");
    CHECK(use(31, 31, NULL).nid != 0 && ns_count() == 3, "bob finds room");
    struct ns_ref q1, q2, q3;
    ns_resolve(30, hp, p2.handle, &q1, err, sizeof(err));
    ns_resolve(30, hp, p3.handle, &q2, err, sizeof(err));
    ns_run_start(q1.nid, &note, &fresh, err, sizeof(err));
    ns_run_start(q2.nid, &note, &fresh, err, sizeof(err));
    ns_resolve(30, hp, NULL, &q3, err, sizeof(err));
    CHECK(ns_run_start(q3.nid, &note, &fresh, err, sizeof(err)) < 0 &&
              strstr(err, "CODEMCP_MAX_NAMESPACES_PER_PRINCIPAL"),
          "her share all running: refused, not taken from bob: %s", err);

    /* Many dropped namespaces: the tombstones are a ring of 4096 (the oldest forgotten), kept
     * out of the table, so a client that never passes its handle back does not slow every
     * request down; the newest still say what happened. */
    ns_run_end(q1.nid);
    ns_run_end(q2.nid);
    struct ns_ref first = use(30, hp, NULL), last = first;
    for (int i = 0; i < 4200; i++)
        last = use(30, hp, NULL);
    CHECK(last.nid && ns_count() == 3, "still two of hers and bob's (%zu live)", ns_count());
    CHECK(resolve_err(30, first.handle, err, sizeof(err)) < 0 &&
              strstr(err, "unknown namespace handle"),
          "the oldest tombstone is forgotten: %s", err);
    struct ns_ref l[3]; /* a few ms apart, so least recently used is unambiguous */
    for (int i = 0; i < 3; i++) {
        usleep(3000);
        l[i] = use(30, hp, NULL);
    }
    CHECK(resolve_err(30, l[1].handle, err, sizeof(err)) == 0 &&
              resolve_err(30, l[2].handle, err, sizeof(err)) == 0,
          "her newest two stay: %s", err);
    CHECK(resolve_err(30, l[0].handle, err, sizeof(err)) < 0 && strstr(err, "to make room"),
          "a recent drop still says why: %s", err);

    ns_free_all();
    lp_destroy();
    return CHECK_DONE();
}
