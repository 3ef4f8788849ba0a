"""bench/rank_learn.py — learn search.py's weights by coordinate ascent, checked on held-out halves.

    /usr/bin/python3 bench/rank_learn.py /tmp/cat.json [--train even|odd] [--rounds N] [--only a,b]

The ranker's score is a product of factors (BM25F over weighted fields, then query-word and
name-word coverage, intent, polarity, scope, adjacent pairs) whose constants are module globals
of codemcp_rt.search. This script treats those constants as the ranker's feature weights and
fits them: every set of tests/data/catalog but the blind one (heldout8.json, never read here) is
split by position into an even and an odd half; coordinate ascent changes one weight at a time
(a few multiples of its current value, clipped to its range), keeps a change only when it gains
at least --min-gain on the training halves' objective (1 per task ranked first, 0.5 in the top 5,
0.1 in the top 10), and reports the other halves before and after — the figure that is not
fitted. Weights read only when the index is built (field weights, b, k1, text lengths) rebuild
it; the synonym and thesaurus weights recompile their tables. Prints the learned values as
Python to paste into search.py. Stdlib only; never writes a file.
"""
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
from codemcp_rt import search as S  # noqa: E402

DATA = os.path.join(ROOT, "tests", "data", "catalog")
FILES = ["queries.json", "tuning.json", "heldout.json", "heldout2.json", "heldout3.json",
         "heldout4.json", "heldout5.json", "heldout6.json", "heldout7.json"]  # never heldout8.json: it is blind

# (name, low, high, integer?) — a weight of search.py and its range
QUERY_WEIGHTS = [
    ("_INTENT", 0.3, 1.0), ("_OPPOSITE", 0.3, 1.0), ("_CLAUSE", 0.1, 1.0),
    ("_NUMBER_HINT", 0.0, 1.0), ("_PAIR", 0.0, 0.9), ("_PAIR_MIN", 0.3, 1.0), ("_POSSESSIVE_WEIGHT", 0.1, 1.0),
    ("_SELF_WEIGHT", 0.1, 1.0), ("_AGENT_WEIGHT", 0.1, 1.0), ("_WHO_WEIGHT", 0.1, 1.0), ("_WHERE_HINT", 0.0, 1.0),
    ("_PERSON_HINT", 0.0, 1.0), ("_NEG", 0.0, 1.0), ("_THES_KEPT", 0.1, 1.0),
    ("_VALUE_WEIGHT", 0.0, 1.0), ("_ASPECT_WEIGHT", 0.0, 1.0), ("_UNDO_WEIGHT", 0.1, 1.0),
    ("_QUESTION_VERB", 0.05, 1.0), ("_LATER_VERB", 0.2, 1.0), ("_FILE_HINT", 0.0, 1.0),
    ("_PREFIX_WEIGHT", 0.0, 1.0), ("_PREFIX_KNOWN", 0.0, 1.0), ("_FUZZY_WEIGHT", 0.0, 1.0),
    ("_IMPLICIT_WEIGHT", 0.0, 1.5), ("_SINGULAR_LIST", 0.0, 1.0), ("_PLURAL_GET", 0.0, 1.0),
    ("_PLURAL_HINT", 0.0, 1.0), ("_PLURAL_READ", 0.0, 1.0), ("_Q_BASE", 0.1, 0.99), ("_N_BASE", 0.01, 0.9),
    ("_COVER_FLOOR", 0.05, 1.0),
]
TABLE_WEIGHTS = [("_SYN_WEIGHT", 0.3, 1.0), ("_SYN_SIDE", 0.1, 1.0), ("_THES_WEIGHT", 0.2, 1.0),
                 ("_THES_PHRASE_WEIGHT", 0.2, 1.0)]
INDEX_WEIGHTS = [("_K1", 0.3, 5.0), ("_COVER_IDF_POW", 0.0, 2.0), ("_LEAD_CHARS", 0, 1500),
                 ("_BODY_CHARS", 400, 6000), ("_PAIR_LEAD", 0, 40)]
STEPS = (0.6, 0.8, 1.25, 1.6)


def field_params():
    out = []
    for k in S._FIELDS:
        out.append(("_FIELDS[%s].w" % k, 0.5 if k == "name" else 0.0, 10.0))  # names index every name word
        out.append(("_FIELDS[%s].b" % k, 0.0, 1.0))
    return out


def get(name):
    if name.startswith("_FIELDS["):
        k, part = name[8:].split("].")
        return S._FIELDS[k][0 if part == "w" else 1]
    return getattr(S, name)


def rebuild_tables():
    S._SYN.clear()
    for group in S._SYNONYM_GROUPS:
        weak = group.startswith("~")
        stems = [S.stem(w) for w in group.lstrip("~").split()]
        for i, s in enumerate(stems):
            m = S._SYN.setdefault(s, {})
            for j, x in enumerate(stems):
                if x == s:
                    continue
                wt = S._SYN_WEIGHT if (i == 0 or j == 0) and not weak else S._SYN_SIDE
                if m.get(x, 0.0) < wt:
                    m[x] = wt
    t = S._thesaurus.compile_table(S.stem, S._THES_WEIGHT, S._THES_PHRASE_WEIGHT,
                                   lambda w: "w" if w in S._WRITE_OPS else "r" if w in S._READ_OPS else "")
    S._THES, S._THES_PHRASES, S._THES_TERMS, S._THES_TOKS, S._THES_TOKEN, S._THES_VERB = (
        t, t.phrases, t.terms, t.toks, t.token, t.verb)


def put(name, v):
    if name.startswith("_FIELDS["):
        k, part = name[8:].split("].")
        w, b = S._FIELDS[k]
        S._FIELDS[k] = (v, b) if part == "w" else (w, v)
    else:
        setattr(S, name, v)
    if name in {n for n, _, _ in TABLE_WEIGHTS}:
        rebuild_tables()


class Bench:
    def __init__(self, cat):
        self.cat = cat
        self.halves = {"even": [], "odd": []}
        for f in FILES:
            qs = json.load(open(os.path.join(DATA, f)))
            self.halves["even"] += [(f, q) for q in qs[0::2]]
            self.halves["odd"] += [(f, q) for q in qs[1::2]]
        self.build()

    def build(self):
        self.idx = S.Index(self.cat["names"], self.cat["info"])

    def ranks(self, half):
        out = []
        for _, q in self.halves[half]:
            got = [self.idx.names[d] for d in self.idx.search(q["query"], 10)]
            out.append(next((i + 1 for i, g in enumerate(got) if g in q["expect"]), 99))
        return out


def objective(ranks):
    return sum(1.0 if r == 1 else 0.5 if r <= 5 else 0.1 if r <= 10 else 0.0 for r in ranks)


def summary(ranks):
    n = len(ranks)
    return "top-1 %5.1f %%  top-5 %5.1f %%  (%d / %d of %d)" % (
        100 * sum(r == 1 for r in ranks) / n, 100 * sum(r <= 5 for r in ranks) / n,
        sum(r == 1 for r in ranks), sum(r <= 5 for r in ranks), n)


def main():
    argv = sys.argv[1:]
    cat = json.load(open(argv[0]))
    train = argv[argv.index("--train") + 1] if "--train" in argv else "even"
    test = "odd" if train == "even" else "even"
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 2
    min_gain = float(argv[argv.index("--min-gain") + 1]) if "--min-gain" in argv else 1.0
    params = [(n, lo, hi) for n, lo, hi in QUERY_WEIGHTS + TABLE_WEIGHTS]
    index_params = [(n, lo, hi) for n, lo, hi in INDEX_WEIGHTS] + field_params()
    if "--only" in argv:
        keep = set(argv[argv.index("--only") + 1].split(","))
        params = [p for p in params if p[0] in keep]
        index_params = [p for p in index_params if p[0] in keep]
    index_names = {p[0] for p in index_params}
    b = Bench(cat)
    start = {n: get(n) for n, _, _ in params + index_params}
    base_train, base_test = b.ranks(train), b.ranks(test)
    best = objective(base_train)
    print("train=%s  start: %s | test=%s %s" % (train, summary(base_train), test, summary(base_test)), flush=True)
    t0 = time.time()
    for rnd in range(rounds):
        changed = False
        for name, lo, hi in params + index_params:
            cur = get(name)
            isint = isinstance(cur, int) and not isinstance(cur, bool)
            cands = []
            for f in STEPS:
                v = cur * f if cur else (0.1 * f if hi <= 1.0 else 0.5 * f)
                v = min(hi, max(lo, v))
                v = int(round(v)) if isint else round(v, 4)
                if v != cur and v not in cands:
                    cands.append(v)
            if cur and lo == 0.0:
                cands.append(0 if isint else 0.0)
            got_best, got_v = best, cur
            for v in cands:
                put(name, v)
                if name in index_names:
                    b.build()
                o = objective(b.ranks(train))
                if o >= got_best + min_gain:
                    got_best, got_v = o, v
            put(name, got_v)
            if name in index_names:
                b.build()
            if got_v != cur:
                best = got_best
                changed = True
                print("  round %d  %-22s %s -> %s   train objective %.1f  (%.0f s)" % (
                    rnd + 1, name, cur, got_v, best, time.time() - t0), flush=True)
        if not changed:
            break
    end_train, end_test = b.ranks(train), b.ranks(test)
    print("train=%s  end:   %s | test=%s %s" % (train, summary(end_train), test, summary(end_test)))
    print("test per set (start -> end):")
    for f in FILES:
        idx = [i for i, (g, _) in enumerate(b.halves[test]) if g == f]
        print("  %-14s n=%3d  top-1 %3d -> %3d   top-5 %3d -> %3d" % (
            f, len(idx), sum(base_test[i] == 1 for i in idx), sum(end_test[i] == 1 for i in idx),
            sum(base_test[i] <= 5 for i in idx), sum(end_test[i] <= 5 for i in idx)))
    print("learned:")
    for n, _, _ in params + index_params:
        if get(n) != start[n]:
            print("  %s: %s -> %s" % (n, start[n], get(n)))


main()
