/* ns_lookup — the cost of finding a run's namespace (src/run/namespaces.c) in a full table:
 * CODEMCP_MAX_NAMESPACES live namespaces plus the most tombstones kept, resolved by handle
 * (what a client passing `namespace` pays) and implicitly (a session without a handle), side
 * by side. Run: build/bench/ns_lookup [rounds]. Prints microseconds per resolve and the ratio;
 * bench/results/namespaces.md keeps the figures. Not a test: it asserts nothing. */
#include "log.h"
#include "loop.h"
#include "namespaces.h"
#include "settings.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 5000;
    struct settings s;
    settings_load(&s);
    s.max_namespaces = 256;
    log_init("error");
    if (lp_init() < 0)
        return 1;
    ns_init(&s, NULL);
    ns_set_principal(1, "alice");
    uint64_t home = ns_principal_home("alice");
    struct ns_ref r, keep = {0};
    char err[400];
    const char *note;
    int fresh;
    /* Fresh namespaces churned through the room rule: 256 live, the rest tombstones. */
    for (int i = 0; i < 256 + 4096 + 10; i++) {
        if (ns_resolve(1, home, NULL, &r, err, sizeof(err)) < 0 ||
            ns_run_start(r.nid, &note, &fresh, err, sizeof(err)) < 0)
            return 1;
        ns_run_end(r.nid);
        keep = r;
    }
    json_decref(ns_take_drops(home));
    ns_resolve(1, 1, NULL, &r, err, sizeof(err));
    int64_t t0 = now_us();
    for (int i = 0; i < rounds; i++)
        ns_resolve(1, home, keep.handle, &r, err, sizeof(err));
    int64_t t1 = now_us();
    for (int i = 0; i < rounds; i++)
        ns_resolve(1, 1, NULL, &r, err, sizeof(err));
    int64_t t2 = now_us();
    double by_handle = (double)(t1 - t0) / rounds, implicit = (double)(t2 - t1) / rounds;
    printf("%zu live namespaces + tombstones: by handle %.2f us, implicit %.2f us, ratio %.2fx\n",
           ns_count(), by_handle, implicit, by_handle / implicit);
    ns_free_all();
    lp_destroy();
    return 0;
}
