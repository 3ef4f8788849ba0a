"""wordnet_gen.py — generates codemcp_rt/wnsyn.py, the WordNet-derived related-word table
behind search_tools()' vocabulary expansion. Run once by hand; the output is committed.

    node bench/catalog_dump.mjs /tmp/cat.json      # the catalog whose words are kept
    /usr/bin/python3 python/wordnet_gen.py /tmp/cat.json [/usr/share/wordnet] > python/codemcp_rt/wnsyn.py

Source: Princeton WordNet 3.0 (Debian package wordnet-base), whose licence permits use,
copying and distribution with its copyright notice (reproduced in the generated file).

For every common English word (a WordNet lemma with at least one sense tagged in SemCor,
i.e. tagsense_cnt > 0, or a word of the catalog) the table lists the API words it is
related to through its most frequent senses (phrases too: kick_out, get_rid_of): the other lemmas of those synsets, their
derivationally related forms, and (tier 2) their direct hypernyms; an irregular form
(WordNet's *.exc) maps to its base form. Only targets that are
words of the catalog (tool names, summaries) are kept, which keeps the table small. Keys
and targets are Porter stems (codemcp_rt.stem), as the index stores them.
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from codemcp_rt.stem import stem  # noqa: E402

_TOKEN = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
SENSES = 3  # most frequent senses per part of speech taken for a word
GENERAL = 40  # hypernyms with more direct hyponyms than this are too general to relate words
POS = ("noun", "verb", "adj", "adv")


def api_words(cat):
    out = set()
    for fn in cat["names"]:
        it = cat["info"][fn]
        for text in (it.get("tool") or fn, it.get("summary") or ""):
            for raw in _TOKEN.findall(text):
                w = raw.lower()
                if len(w) >= 2 and not w.isdigit():
                    out.add(stem(w))
    return out


def load(wn):
    synsets = {}  # (pos letter, offset) -> (lemmas, pointers)
    for pos in POS:
        for line in open(os.path.join(wn, "data." + pos), encoding="latin-1"):
            if line.startswith("  "):
                continue
            f = line.split(" | ")[0].split()
            off, ss = f[0], f[2]
            n = int(f[3], 16)
            lemmas = [f[4 + 2 * i].lower() for i in range(n)]
            lemmas = [re.sub(r"\(.*\)$", "", x) for x in lemmas]
            k = 4 + 2 * n
            p = int(f[k])
            ptrs = []
            for i in range(p):
                sym, o, pp, st = f[k + 1 + 4 * i:k + 5 + 4 * i]
                ptrs.append((sym, ("a" if pp == "s" else pp, o), st))
            synsets[("a" if ss == "s" else ss, off)] = (lemmas, ptrs)
    index = {}  # lemma -> [(pos letter, offset)...] most frequent first, per pos
    common = set()
    for pos in POS:
        for line in open(os.path.join(wn, "index." + pos), encoding="latin-1"):
            if line.startswith("  "):
                continue
            f = line.split()
            lemma, pl, cnt, pc = f[0], f[1], int(f[2]), int(f[3])
            tagged = int(f[5 + pc])
            offs = f[6 + pc:6 + pc + cnt]
            if "_" in lemma and pos != "verb" and tagged == 0:
                continue  # of compounds, phrasal verbs and common noun phrases only
            index.setdefault(lemma, []).extend((pl, o) for o in offs[:SENSES])
            if tagged > 0:
                common.add(lemma)
    return synsets, index, common


def main():
    cat = json.load(open(sys.argv[1]))
    wn = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/wordnet"
    api = api_words(cat)
    synsets, index, common = load(wn)
    def hyponyms(sid):
        return sum(1 for sym, _, _ in synsets[sid][1] if sym in ("~", "~i"))

    table = {}
    for lemma, senses in index.items():
        parts = lemma.split("_")
        if len(parts) > 3 or not all(x.isalpha() for x in parts):
            continue
        key = "_".join(stem(x) for x in parts)
        if lemma not in common and key not in api and len(parts) == 1:
            continue
        rel = table.setdefault(key, {})
        for sid in senses:
            lemmas, ptrs = synsets[sid]
            near = set(lemmas)
            for sym, tgt, st in ptrs:
                if sym == "+" and tgt in synsets:  # derivationally related form
                    t = int(st[2:], 16)
                    tl = synsets[tgt][0]
                    near.add(tl[t - 1] if t else tl[0])
            far = set()
            for sym, tgt, st in ptrs:
                # a hypernym, unless it is one of the few very general ones ("move", "change":
                # more than GENERAL direct hyponyms), which relate everything to everything
                if sym in ("@", "@i") and tgt in synsets and hyponyms(tgt) <= GENERAL:
                    far.update(synsets[tgt][0])
            for tier, group in ((1, near), (2, far)):
                for x in group:
                    if "_" in x or not x.isalpha():
                        continue
                    s = stem(x)
                    if s != key and s in api and rel.get(s, 9) > tier:
                        rel[s] = tier
    # irregular forms (WordNet's *.exc: "broken break", "wrote write"): the base form
    for pos in POS:
        for line in open(os.path.join(wn, pos + ".exc"), encoding="latin-1"):
            f = line.split()
            if len(f) < 2 or not f[0].isalpha() or not f[1].isalpha():
                continue
            k, b = stem(f[0]), stem(f[1])
            if k != b and b in api and (f[1] in common or f[0] in common):
                table.setdefault(k, {})[b] = 0
    lines = []
    for key in sorted(table):
        rel = table[key]
        if not rel:
            continue
        cols = [",".join(sorted(s for s, t in rel.items() if t == tier)) for tier in (1, 2, 0)]
        lines.append(key + " " + "|".join(cols).rstrip("|"))
    lic = open("/usr/share/doc/wordnet-base/copyright", encoding="utf-8").read() if os.path.exists(
        "/usr/share/doc/wordnet-base/copyright") else ""
    m = re.search(r"This software and database.*?preserve same\.", lic, re.S)
    notice = m.group(0) if m else "WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved."
    out = sys.stdout
    out.write('"""wnsyn — related API words of common English words, derived from WordNet 3.0.\n\n')
    out.write("Generated by python/wordnet_gen.py (do not edit); read by codemcp_rt.search. One line per\n")
    out.write("Porter stem (a phrase: stems joined by '_'): 'key near,..|far,..|base' -- near: synonyms and\n")
    out.write("derivationally related forms of the key's most frequent senses; far: their direct\n")
    out.write("hypernyms; base: the base form of an irregular one (wrote -> write). Only catalog words.\n\n")
    out.write("WordNet licence (https://wordnet.princeton.edu/license-and-commercial-use):\n\n")
    for ln in notice.splitlines():
        t = ln.strip()
        out.write(("    " + t if t != "." else "") + "\n")
    out.write('"""\n\n')
    out.write("TABLE = \"\"\"\\\n")
    out.write("\n".join(lines))
    out.write('\n"""\n')


main()
