"""bench/catalog_rank.py — search_tools ranking quality outside the gateway, for iterating.

    node bench/catalog_dump.mjs /tmp/cat.json        # the 1,260-function catalog, once
    /usr/bin/python3 bench/catalog_rank.py /tmp/cat.json [-v]

Builds discovery.Index over the dumped catalog and reports top-1/top-5 on the query sets:
tests/data/catalog/queries.json split into the half the first ranker was tuned on (even
positions) and the half it was not (odd positions), tests/data/catalog/tuning.json (more
tasks to tune on, written for this), and tests/data/catalog/heldout.json
and heldout2.json (both written before looking at the ranker; never used for tuning),
and heldout3.json (written by the second ranking pass before it read the ranker),
and heldout4.json (written by the third pass before it read the ranker: the honest figure).
heldout.json..heldout3.json were looked at by earlier tuning, so the third pass tuned on them too;
only heldout4.json is honest. --tune shows the sets tuning may look at; -v prints their misses
(heldout4's misses are not printed: they are not for tuning).
"""
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
from codemcp_rt import discovery  # noqa: E402


def sets():
    data = os.path.join(ROOT, "tests", "data", "catalog")
    old = json.load(open(os.path.join(data, "queries.json")))
    new = json.load(open(os.path.join(data, "heldout.json")))
    new2 = json.load(open(os.path.join(data, "heldout2.json")))
    new3 = json.load(open(os.path.join(data, "heldout3.json")))
    new4 = json.load(open(os.path.join(data, "heldout4.json")))
    tuning = json.load(open(os.path.join(data, "tuning.json")))
    # (label, queries, may its misses be printed while tuning?)  heldout1-3: looked at before, now tuning sets
    return [("old tuning half", old[0::2], True), ("old held-out half", old[1::2], True),
            ("tuning set", tuning, True),
            ("new held-out set", new, True), ("second held-out set", new2, True),
            ("third held-out set", new3, True), ("fresh heldout4", new4, False)]


def main():
    cat = json.load(open(sys.argv[1]))
    verbose = "-v" in sys.argv
    tune = "--tune" in sys.argv  # the old sets only: nothing about the held-out sets is shown
    t = time.perf_counter()
    idx = discovery.Index(cat["names"], cat["info"])
    build = (time.perf_counter() - t) * 1000
    lat = []
    for label, qs, show in sets():
        if tune and not show:
            continue
        t1 = t5 = 0
        for q in qs:
            t = time.perf_counter()
            got = [idx.names[d] for d in idx.search(q["query"], 5)]
            lat.append((time.perf_counter() - t) * 1000)
            ok1 = bool(got) and got[0] in q["expect"]
            ok5 = any(g in q["expect"] for g in got)
            t1 += ok1
            t5 += ok5
            if verbose and show and not ok1:
                print("  %-5s %s\n        want %s\n        got  %s" % ("top5" if ok5 else "MISS", q["query"], q["expect"], got[:5]))
        print("%-18s n=%2d top-1 %5.1f %%  top-5 %5.1f %%" % (label, len(qs), 100 * t1 / len(qs), 100 * t5 / len(qs)))
    lat.sort()
    print("build %.1f ms; search p50 %.3f ms, max %.3f ms (this process, first pass)" % (build, lat[len(lat) // 2], lat[-1]))


main()
