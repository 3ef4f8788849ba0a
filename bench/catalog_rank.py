"""bench/catalog_rank.py — search_tools ranking quality outside the gateway, for iterating.

    node bench/catalog_dump.mjs /tmp/cat.json        # the 1,260-function catalog, once
    /usr/bin/python3 bench/catalog_rank.py /tmp/cat.json [-v]

Builds discovery.Index over the dumped catalog and reports top-1/top-5 on the query sets:
tests/data/catalog/queries.json split into the half the first ranker was tuned on (even
positions) and the half it was not (odd positions), tests/data/catalog/tuning.json (more
tasks to tune on, written for this), and tests/data/catalog/heldout.json
and heldout2.json (both written before looking at the ranker; never used for tuning),
and heldout3.json (written by the second ranking pass before it read the ranker),
heldout4.json (written by the third pass before it read the ranker; the fourth pass saw only its
totals) and heldout5.json (written blind by a helper that read neither the ranker nor any other
set, during the fourth pass; no pass has looked at more than its totals: the honest figure).
heldout.json..heldout3.json were looked at by earlier tuning, so later passes tuned on them too;
since the sixth pass heldout4.json and heldout5.json are tuning sets as well (each reported in its
even and odd halves too: tune on the even halves, check on the odd ones). -v prints the misses of
every set but the odd halves (with --odd those too), with the rank of the first expected function
(">20" when it is not in the first 20). --tune is kept for old command lines (same output).

heldout6.json (written blind during the sixth pass, ranked once at its end) is a tuning set since the
seventh pass, split the same way; heldout7.json (written blind during the seventh pass, ranked once
at its end) is one too since the word-vector pass (branch glove), split the same way. heldout8.json
(written blind during that pass) is the set nobody tunes on: it is read and ranked only with --final
(and skipped when the file is absent), and its misses are never printed (not even with -v).

    /usr/bin/python3 bench/catalog_rank.py /tmp/cat.json --base /path/to/old/python

Over a dump of the other domains' APIs (`node bench/catalog_dump.mjs /tmp/oa.json --openapi`), it
ranks the sets of tests/data/discovery/ instead (README.md there: two blind sets, ranked only with
--final and whose misses are never printed, and a development set), their expectations named
`server:tool`.

ranks with this tree's python/ and with another one (e.g. `git archive <rev> python | tar -x`)
in the same run, side by side.
"""
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.environ.get("CODEMCP_RANK_PYTHON") or os.path.join(ROOT, "python"))
from codemcp_rt import discovery  # noqa: E402


def discovery_sets(cat):
    """The sets of tests/data/discovery whose servers the dump holds, expectations as names."""
    data = os.path.join(ROOT, "tests", "data", "discovery")
    by_tool = {"%s:%s" % (i.get("server"), i.get("tool")): n for n, i in cat["info"].items()}
    out = []
    for name in sorted(os.listdir(data)):
        if not name.endswith(".json") or name == "encoder-parity.json":
            continue
        qs = json.load(open(os.path.join(data, name)))
        if not all(e in by_tool for q in qs for e in q["expect"]):
            continue
        qs = [dict(q, expect=[by_tool[e] for e in q["expect"]]) for q in qs]
        out.append((name[:-5], qs, not name.startswith("blind")))
    return out


def discovery_visible(found, final):
    """The blind sets only with --final."""
    return [s for s in found if final or not s[0].startswith("blind")]


def sets(final=False, odd=False):
    """(label, queries, may its misses be printed?) for every query set."""
    data = os.path.join(ROOT, "tests", "data", "catalog")

    def load(name):
        return json.load(open(os.path.join(data, name)))
    old = load("queries.json")
    new4, new5, new6, new7 = (load("heldout%d.json" % k) for k in (4, 5, 6, 7))
    out = [("old tuning half", old[0::2], True), ("old held-out half", old[1::2], True),
           ("tuning set", load("tuning.json"), True),
           ("new held-out set", load("heldout.json"), True), ("second held-out set", load("heldout2.json"), True),
           ("third held-out set", load("heldout3.json"), True),
           ("heldout4", new4, False), ("heldout4 even", new4[0::2], True), ("heldout4 odd", new4[1::2], odd),
           ("heldout5", new5, False), ("heldout5 even", new5[0::2], True), ("heldout5 odd", new5[1::2], odd),
           ("heldout6", new6, False), ("heldout6 even", new6[0::2], True), ("heldout6 odd", new6[1::2], odd),
           ("heldout7", new7, False), ("heldout7 even", new7[0::2], True), ("heldout7 odd", new7[1::2], odd)]
    # the blind set: only when asked for explicitly, never its misses
    if final and os.path.exists(os.path.join(data, "heldout8.json")):
        out.append(("BLIND heldout8", load("heldout8.json"), False))
    return out


def side_by_side(base):
    """This tree's ranker and `base`'s, each in its own interpreter, in one run."""
    def run(python):
        env = dict(os.environ, CODEMCP_RANK_PYTHON=python)
        final = ["--final"] if "--final" in sys.argv else []
        out = subprocess.run([sys.executable, os.path.abspath(__file__), sys.argv[1], "--json"] + final,
                             env=env, check=True, capture_output=True, text=True).stdout
        return json.loads(out)
    head, old = run(os.path.join(ROOT, "python")), run(os.path.abspath(base))
    print("%-19s %4s  %-15s  %-15s" % ("set", "n", "base top-1/5", "this top-1/5"))
    for (label, n, b1, b5), (_, _, h1, h5) in zip(old["sets"], head["sets"]):
        print("%-19s %4d  %5.1f / %5.1f    %5.1f / %5.1f" % (label, n, b1, b5, h1, h5))
    print("search p50: base %.3f ms, this %.3f ms" % (old["p50"], head["p50"]))


def ranked(idx, query, n, vecs):
    """search_tools' order (an older tree, given with --base, has only Index.search)."""
    if hasattr(discovery, "rank"):
        return discovery.rank(idx, [query], n, None, vecs)
    return idx.search(query, n)


def main():
    cat = json.load(open(sys.argv[1]))
    if "--base" in sys.argv:
        return side_by_side(sys.argv[sys.argv.index("--base") + 1])
    as_json = "--json" in sys.argv
    report = {"sets": []}
    verbose = "-v" in sys.argv
    final = "--final" in sys.argv
    t = time.perf_counter()
    idx = discovery.Index(cat["names"], cat["info"])
    build = (time.perf_counter() - t) * 1000
    vecs = None
    if "--semantic" in sys.argv:  # with the sentence vectors, cached beside the dump
        from codemcp_rt import semantic
        vecs = semantic.Vectors(cat["names"], cat["info"], cache_dir=os.path.dirname(os.path.abspath(sys.argv[1])),
                                background=False)
        if not vecs.ready():
            sys.exit("--semantic: " + vecs.status())
    lat = []
    found = discovery_sets(cat)
    for label, qs, show in discovery_visible(found, final) if found else sets(final, "--odd" in sys.argv):
        t1 = t5 = 0
        for q in qs:
            t = time.perf_counter()
            got = [idx.names[d] for d in ranked(idx, q["query"], 5, vecs)]
            lat.append((time.perf_counter() - t) * 1000)
            ok1 = bool(got) and got[0] in q["expect"]
            ok5 = any(g in q["expect"] for g in got)
            t1 += ok1
            t5 += ok5
            if verbose and show and not ok1:
                more = [idx.names[d] for d in ranked(idx, q["query"], 20, vecs)]
                rank = next((str(i + 1) for i, g in enumerate(more) if g in q["expect"]), ">20")
                print("  %-5s %s  [%s]\n        want %s (rank %s)\n        got  %s" % (
                    "top5" if ok5 else "MISS", q["query"], label, q["expect"], rank, got[:5]))
        report["sets"].append((label, len(qs), 100 * t1 / len(qs), 100 * t5 / len(qs)))
        if not as_json:
            print("%-19s n=%3d top-1 %5.1f %%  top-5 %5.1f %%" % report["sets"][-1])
    lat.sort()
    report["p50"] = lat[len(lat) // 2]
    if as_json:
        print(json.dumps(report))
        return
    print("build %.1f ms; search p50 %.3f ms, max %.3f ms (this process, first pass)" % (build, lat[len(lat) // 2], lat[-1]))


if __name__ == "__main__":
    main()
