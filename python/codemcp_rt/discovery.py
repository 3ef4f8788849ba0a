"""search_tools() and describe(): find and read any SDK function from inside a program.

The execute_python description lists only what fits its budget; every function of the
catalog is callable anyway. A run gets two helpers bound to the SDK snapshot it started
with (the gateway ships each new catalog with `load_sdk`, so they read the live catalog):

    search_tools(query, limit=10, server=None) -> [{"name", "signature", "summary", "server"}]
    describe(name) -> str   a function: signature, server/tool, docs with argument docs and
                            the learned result shape; a server (or a name prefix): its
                            functions, one compact line each

Ranking (measured on tests/data/catalog/queries.json, see bench/catalog.mjs): BM25-style
scores over weighted fields (the tool's own name words count most, then the summary, the
server name, the parameters and the full description), with words split on snake_case,
camelCase, kebab-case and digits, a light English stemmer, a synonym table for the verbs
and nouns of APIs (issue/bug/ticket, create/new/add, delete/remove, list/all, repo/
repository, ...), prefix matching for partial words and one-edit fuzzy matching for typos.
A function whose name has words the query does not mention is ranked a little lower, so
"create an issue" prefers issues_create to issues_create_comment.

The index is built once per SDK snapshot (a few ms per 1,000 functions) on first use.
Stdlib only; never raises for odd input (a non-string query is an honest TypeError).
"""

from __future__ import annotations

import bisect
import math
import re
from typing import Any

# -- words -----------------------------------------------------------------------------

# A word: an acronym ("HTTP" in HTTPServer), a capitalised or lowercase run, or digits; so
# snake_case, camelCase, kebab-case and "v2" all split.
_TOKEN = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_STEMS: dict[str, str] = {}

_STOP = frozenset(
    "a an the of for to in on with and or by from is are be this that it its as at "
    "can you your we our please want would like need some any there their them into onto "
    "how do does what which who whose about using use via".split()
)


def _stem(w: str) -> str:
    """A light stemmer: plurals, -ing, -ed, a final -e (create/creating/created -> creat)."""
    if len(w) <= 3 or w.isdigit():
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith(("ches", "shes", "xes", "zes")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if w.endswith("ing") and len(w) > 5:
        w = w[:-3]
        if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "ls":  # running -> run
            w = w[:-1]
    elif w.endswith("ed") and len(w) > 4:
        w = w[:-2]
        if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "ls":  # starred -> star
            w = w[:-1]
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


def words(text: str) -> list[str]:
    """Lowercase words of ``text``: snake/camel/kebab case and digit runs split, stop words
    dropped, stemmed."""
    out = []
    stems = _STEMS
    for raw in _TOKEN.findall(text):
        w = raw.lower()
        if w in _STOP:
            continue
        st = stems.get(w)
        if st is None:
            st = _stem(w)
            if len(stems) < 200000:
                stems[w] = st
        out.append(st)
    return out


# Field weights (measured: see the module docstring).
_W_NAME = 3.0
_W_SUMMARY = 1.6
_W_SERVER = 0.8
_W_PARAM = 0.35
_W_DOC = 0.1
_DOC_CHARS = 1200  # how much of a long description is indexed
_K1 = 1.2
_SYN_WEIGHT = 0.85
_SYN_SIDE = 0.45
_PREFIX_WEIGHT = 0.55
_FUZZY_WEIGHT = 0.5
_IMPLICIT_WEIGHT = 0.5
_MAX_QUERY_CHARS = 2000
_MAX_QUERY_WORDS = 32
_Q_BASE = 0.5  # a document matching few of the query's words keeps this share
_N_BASE = 0.4  # a function whose name words the query does not mention keeps this share

# Phrases that are one thing in an API.
_PHRASE_MAP = {"pull request": "pull", "pull requests": "pull", "merge request": "pull",
               "merge requests": "pull", "code snippet": "gist", "rate limit": "rate limit",
               "knowledge graph": "graph", "sign in": "login", "log in": "login", "set up": "create",
               "kick off": "dispatch", "thumbs up": "add reaction", "thumbs down": "add reaction"}
_PHRASES = re.compile("|".join(sorted((re.escape(k) for k in _PHRASE_MAP), key=len, reverse=True)), re.I)


# Groups of words that mean the same thing in an API; every member finds the others.
_SYNONYM_GROUPS = [
    "issue bug ticket defect problem",
    "create new add make open file post submit start register generate leave publish share put",
    "delete remove drop destroy erase rm del discard purge unset",
    "list all show enumerate every browse index whole entire",
    "get fetch retrieve read show view look see info detail display obtain dump export",
    "update edit change modify set patch alter adjust replace close",
    "repo repository codebase",
    "authenticated me my mine myself own i",
    "request ask",
    "rate quota throttle",
    "pull pr",
    "org organization organisation company",
    "user person people member account someone profile colleague developer somebody",
    "star favorite favourite bookmark like stargazer",
    "search find query lookup look locate",
    "comment reply remark discuss discussion",
    "label tag",
    "workflow action ci pipeline",
    "run execute trigger dispatch rerun",
    "secret credential password",
    "file document content",
    "directory folder dir",
    "merge combine",
    "release version",
    "gist snippet paste",
    "follow follower",
    "watch subscribe subscription watcher",
    "team group squad",
    "notification alert inbox",
    "key ssh gpg",
    "webhook hook",
    "move rename mv",
    "entity node",
    "fork copy",
    "invite invitation",
    "block ban",
    "collaborator contributor",
    "artifact build output",
    "log logs output",
    "commit revision",
    "assignee assign",
    "reaction emoji react",
    "milestone deadline",
    "archive zip tarball download",
    "environment env",
    "sum add total",
    "echo repeat",
    "cancel stop abort",
    "approve accept",
    "reject deny decline",
    "lock freeze",
    "unlock unfreeze",
    "vulnerability security advisory",
    "dependabot dependency",
    "codespace devcontainer",
    "package registry",
    "deployment deploy",
    "check test status",
    "observation fact",
    "relation relationship link",
    "graph knowledge",
]

# Words that say what to do; a query with none of them asks for a listing.
_VERBS = frozenset(_stem(w) for g in _SYNONYM_GROUPS[:6] + ["merge fork star follow watch run cancel approve "
                                                            "reject lock unlock move rename block invite "
                                                            "search download upload render mark check"]
                   for w in g.split())

# word -> {synonym: weight}. The first word of a group is its canonical term: a member
# means it strongly (_SYN_WEIGHT), two members mean each other weakly (_SYN_SIDE): "file"
# means "create" more than it means "add".
_SYN: dict[str, dict[str, float]] = {}
for _group in _SYNONYM_GROUPS:
    _stems = [_stem(w) for w in _group.split()]
    for _i, _s in enumerate(_stems):
        _m = _SYN.setdefault(_s, {})
        for _j, _x in enumerate(_stems):
            if _x == _s:
                continue
            _wt = _SYN_WEIGHT if (_i == 0 or _j == 0) else _SYN_SIDE
            if _m.get(_x, 0.0) < _wt:
                _m[_x] = _wt

def _deletes(w: str) -> list[str]:
    return [w[:i] + w[i + 1:] for i in range(len(w))]


class Index:
    """The search index of one SDK snapshot."""

    def __init__(self, names: list[str], info: dict[str, dict[str, Any]]) -> None:
        self.names = names
        self.info = info
        self.postings: dict[str, dict[int, float]] = {}
        self.name_words: list[frozenset[str]] = []
        for i, fn in enumerate(names):
            it = info[fn]
            tf: dict[str, float] = {}
            tool_words = words(str(it.get("tool") or fn))
            self.name_words.append(frozenset(tool_words))
            for field, weight in (
                (tool_words, _W_NAME),
                (words(str(it.get("summary") or "")), _W_SUMMARY),
                (words(str(it.get("server") or "")), _W_SERVER),
                (words(" ".join(it.get("params") or ())), _W_PARAM),
                (words(str(it.get("doc") or "")[:_DOC_CHARS]), _W_DOC),
            ):
                seen: dict[str, int] = {}
                for w in field:
                    seen[w] = seen.get(w, 0) + 1
                for w, c in seen.items():
                    # repeated words in one field saturate quickly
                    tf[w] = tf.get(w, 0.0) + weight * (1.0 + math.log(c))
            for w, v in tf.items():
                self.postings.setdefault(w, {})[i] = v
        n = max(1, len(names))
        self.idf = {w: math.log(1.0 + (n - len(p) + 0.5) / (len(p) + 0.5)) for w, p in self.postings.items()}
        self.vocab = sorted(self.postings)
        self._del_index: dict[str, list[str]] | None = None  # built on the first typo

    @property
    def del_index(self) -> dict[str, list[str]]:
        if self._del_index is None:
            d_index: dict[str, list[str]] = {}
            for w in self.vocab:
                if len(w) >= 4:
                    for d in _deletes(w):
                        d_index.setdefault(d, []).append(w)
            self._del_index = d_index
        return self._del_index

    def _expand(self, w: str) -> dict[str, float]:
        """Index words a query word stands for, with their weights."""
        out: dict[str, float] = {}
        if w in self.postings:
            out[w] = 1.0
        for s, wt in _SYN.get(w, {}).items():
            if s in self.postings and out.get(s, 0.0) < wt:
                out[s] = wt
        if len(w) >= 3:  # partial words: "repo" finds "repository", "notif" "notification"
            i = bisect.bisect_left(self.vocab, w)
            k = 0
            while i < len(self.vocab) and self.vocab[i].startswith(w) and k < 24:
                v = self.vocab[i]
                if v != w and v not in out:
                    out[v] = _PREFIX_WEIGHT
                i += 1
                k += 1
        if not out and len(w) >= 4:  # one typo: a deletion on either side
            cands: set[str] = set(self.del_index.get(w, ()))
            for d in _deletes(w):
                if d in self.postings:
                    cands.add(d)
                cands.update(self.del_index.get(d, ()))
            for v in cands:
                out[v] = _FUZZY_WEIGHT
                for s, wt in _SYN.get(v, {}).items():
                    if s in self.postings and s not in out:
                        out[s] = _FUZZY_WEIGHT * wt
        return out

    def search(self, query: str, limit: int, server: str | None = None) -> list[int]:
        query = query[:_MAX_QUERY_CHARS]  # a task is a sentence; bound the work on anything else
        qwords = list(dict.fromkeys(words(_PHRASES.sub(lambda m: _PHRASE_MAP[m.group(0).lower()], query))))
        qwords = qwords[:_MAX_QUERY_WORDS]
        if not qwords:
            return []
        # Each query word stands for a few index words (itself, synonyms, longer words it
        # starts, typo neighbours); a document scores the best of them per query word.
        exps = [self._expand(w) for w in qwords]
        # A synonym or a longer word never counts for more than the word the user typed
        # (a rare synonym would otherwise outweigh it: "pull" -> "pr" in fork_pr_workflows).
        caps = [self.idf.get(w) for w in qwords]
        if not any(w in _VERBS for w in qwords):  # "teams in the org": a listing is meant
            exps.append({t: _IMPLICIT_WEIGHT for t in ("list", "get") if t in self.postings})
            caps.append(None)
            qwords = qwords + ["list"]
        allq: set[str] = set(qwords)
        for e in exps:
            allq.update(e)
        scores: dict[int, float] = {}
        matched: dict[int, int] = {}
        for exp, cap in zip(exps, caps):
            best: dict[int, float] = {}
            for term, weight in exp.items():
                idf = self.idf[term]
                if weight < 1.0 and cap is not None and idf > cap:
                    idf = cap
                idf *= weight
                for doc, tf in self.postings[term].items():
                    sc = idf * tf * (_K1 + 1.0) / (tf + _K1)
                    if sc > best.get(doc, 0.0):
                        best[doc] = sc
            for doc, sc in best.items():
                scores[doc] = scores.get(doc, 0.0) + sc
                matched[doc] = matched.get(doc, 0) + 1
        if server is not None:
            scores = {d: v for d, v in scores.items() if self.info[self.names[d]].get("server") == server}
        nq = len(qwords)
        ranked = []
        for doc, sc in scores.items():
            nw = self.name_words[doc]
            name_cover = len(nw & allq) / len(nw) if nw else 0.0
            sc *= (_Q_BASE + (1.0 - _Q_BASE) * matched[doc] / nq) * (_N_BASE + (1.0 - _N_BASE) * name_cover)
            ranked.append((-sc, len(self.names[doc]), doc))
        ranked.sort()
        return [doc for _, _, doc in ranked[:limit]]


# -- the snapshot's catalog ---------------------------------------------------------------

_index_for: tuple[Any, Index | None] = (None, None)


def _info(snap: Any) -> tuple[list[str], dict[str, dict[str, Any]]]:
    catalog = getattr(snap, "catalog", None) or {}
    names = list(snap.functions)
    info: dict[str, dict[str, Any]] = {}
    for fn in names:
        meta = snap.meta.get(fn) if isinstance(snap.meta.get(fn), dict) else {}
        entry = catalog.get(fn)
        sig, summary = (entry[0], entry[1]) if isinstance(entry, (list, tuple)) and len(entry) >= 2 else (fn + "(...)", "")
        func = snap.functions[fn]
        doc = getattr(func, "__doc__", None) or ""
        code = getattr(func, "__code__", None)
        params = list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]) if code else []
        info[fn] = {"server": meta.get("server", ""), "tool": meta.get("tool", fn), "signature": str(sig),
                    "summary": str(summary), "doc": doc, "params": params, "mutation": bool(meta.get("mutation"))}
    return names, info


def index(snap: Any) -> Index:
    """The (cached) index of an SDK snapshot."""
    global _index_for
    if _index_for[0] is not snap or _index_for[1] is None:
        names, info = _info(snap)
        _index_for = (snap, Index(names, info))
    return _index_for[1]  # type: ignore[return-value]


def _shape_text(shape: Any, depth: int = 0) -> str:
    if not isinstance(shape, dict) or depth > 3:
        return "Any"
    k = shape.get("k")
    if k == "object":
        fields = shape.get("fields") if isinstance(shape.get("fields"), dict) else {}
        items = ["%s: %s" % (name, _shape_text(v, depth + 1)) for name, v in list(fields.items())[:12]]
        if len(fields) > 12 or shape.get("open"):
            items.append("…")
        return "{" + ", ".join(items) + "}"
    if k == "array":
        return "[" + _shape_text(shape.get("items"), depth + 1) + "]"
    if k == "leaf":
        return str(shape.get("t") or "scalar")
    return "Any"


def bind(snap: Any, unavailable: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """search_tools, describe and help for one run over ``snap`` (an sdk.Sdk)."""
    missing = [u for u in (unavailable or []) if isinstance(u, dict) and isinstance(u.get("server"), str)]

    def search_tools(query: str, limit: int = 10, server: str | None = None) -> list[dict[str, str]]:
        """Find SDK functions for a task in plain words, best first.

        Returns [{"name", "signature", "summary", "server"}] (at most ``limit``); ``server``
        keeps one server's functions. Every function found can be called directly."""
        if not isinstance(query, str):
            raise TypeError("search_tools(query): query must be a string, not %s" % type(query).__name__)
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError("search_tools(limit=...) must be an int")
        limit = max(0, min(limit, 200))
        idx = index(snap)
        out = []
        for doc in idx.search(query, limit, server):
            fn = idx.names[doc]
            it = idx.info[fn]
            out.append({"name": fn, "signature": it["signature"], "summary": it["summary"], "server": it["server"]})
        return out

    def describe(name: Any) -> str:
        """Full documentation of one SDK function (signature, argument docs, learned result
        shape), or the functions of a server or name prefix, one line each."""
        if callable(name) and getattr(name, "__name__", None) in snap.functions:
            name = name.__name__
        if not isinstance(name, str):
            raise TypeError("describe(name): name must be a function name or a server name")
        idx = index(snap)
        it = idx.info.get(name)
        if it is not None:
            head = "%s\n%sserver %s, tool %s\n" % (it["signature"], "[write] " if it["mutation"] else "",
                                                    it["server"], it["tool"])
            text = head + ("\n" + it["doc"].strip() + "\n" if it["doc"].strip() else "\n(no description)\n")
            try:
                from codemcp_rt import sdk as _sdk
                shape = _sdk.shapes().get(name)
            except Exception:
                shape = None
            if shape:
                text += "\nReturns (learned): %s\n" % _shape_text(shape)[:600]
            return text
        fns = [fn for fn in idx.names if idx.info[fn]["server"] == name]
        what = "server %s" % name
        if not fns:
            fns = [fn for fn in idx.names if fn.startswith(name)] if len(name) >= 2 else []
            what = "functions starting with %r" % name
        if fns:
            lines = ["%s: %d function%s (describe(name) for the full docs)" % (what, len(fns), "" if len(fns) == 1 else "s")]
            for fn in fns:
                summary = idx.info[fn]["summary"]
                if len(summary) > 80:
                    summary = summary[:79] + "…"
                lines.append("  %s  # %s%s" % (idx.info[fn]["signature"], "[write] " if idx.info[fn]["mutation"] else "", summary))
            return "\n".join(lines) + "\n"
        for u in missing:
            if u["server"] == name or name.startswith(str(u.get("prefix") or "\0") + "_"):
                return "%s: server %s is %s%s; its functions appear when it connects.\n" % (
                    name, u["server"], u.get("state") or "not connected", (": " + u["error"]) if u.get("error") else "")
        hits = search_tools(name.replace("_", " "), 5)
        hint = ("; closest: " + ", ".join(h["name"] for h in hits)) if hits else ""
        return "%s: no such function or server%s\n" % (name, hint)

    def help(obj: Any = None) -> None:  # noqa: A001 - the builtin's name on purpose
        """help(fn) prints describe(fn) for SDK functions, Python's help otherwise."""
        name = getattr(obj, "__name__", obj if isinstance(obj, str) else None)
        if isinstance(name, str) and (name in snap.functions or name in {i["server"] for i in index(snap).info.values()}):
            print(describe(name), end="")
            return
        import pydoc
        pydoc.Helper(output=None).help(obj) if obj is not None else print("help(fn) describes an SDK function.")

    return {"search_tools": search_tools, "describe": describe, "help": help}


__all__ = ["bind", "index", "words", "Index"]
