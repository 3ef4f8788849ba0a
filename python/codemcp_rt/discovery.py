"""search_tools() and describe(): find and read any SDK function from inside a program.

The execute_python description lists only what fits its budget; every function of the
catalog is callable anyway. A run gets two helpers bound to the SDK snapshot it started
with (the gateway ships each new catalog with `load_sdk`, so they read the live catalog):

    search_tools(query, limit=10, server=None) -> [{"name", "signature", "summary", "server"}]
                            query: a task in words, or a list of phrasings of it
    describe(name) -> str   a function: signature, server/tool, docs with argument docs and
                            the learned result shape; a server (or a name prefix): its
                            functions, one compact line each

Ranking lives in codemcp_rt.search (BM25F over weighted fields, Porter stems, a synonym
table for the verbs and nouns of APIs, prefix and typo matching, values in the query
counted little); it is measured by bench/catalog.mjs. Several phrasings of one task are
ranked each and fused by rank (rank()); with CODEMCP_SEMANTIC_SEARCH=1 and the sentence
encoder installed, the catalog's sentence vectors (codemcp_rt.semantic) join the fusion once
computed in the background.

The index is built once per SDK snapshot (a few ms per 1,000 functions) on first use.
codemcp_rt.search itself is imported on first use too: its module body compiles the thesaurus
and the reading rules (~20 ms of CPU, half of the runtime's import), which a program that
never searches does not need. The prototype imports it and indexes its snapshot once it is
idle (warm_index), after it answered `ready`, so sessions forked later share both.
Stdlib only; never raises for odd input (a non-string query is an honest TypeError).
"""

from __future__ import annotations

import os
import re
import sys
import weakref
from typing import TYPE_CHECKING, Any

from codemcp_rt.searchwords import words

if TYPE_CHECKING:
    from codemcp_rt.search import Index

# -- the snapshot's catalog ---------------------------------------------------------------

_index_for: tuple[Any, Index | None] = (None, None)
_vectors_for: tuple[Any, Any] = (None, None)
_MAX_PHRASINGS = 8
_AGREE = 0.1  # what another phrasing's rank adds to a document's best one


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
        from codemcp_rt.search import Index
        names, info = _info(snap)
        _index_for = (snap, Index(names, info))
    return _index_for[1]  # type: ignore[return-value]


def warm_index() -> int:
    """In the prototype, once it is ready and idle: imports codemcp_rt.search and indexes the
    loaded snapshot, so sessions forked from then on share both. The snapshot's version."""
    from codemcp_rt import sdk
    snap = sdk.current()
    index(snap)
    return snap.version if isinstance(snap.version, int) else 0


def semantic_enabled() -> bool:
    """CODEMCP_SEMANTIC_SEARCH, a boolean setting of the gateway (src/config/settings.def), passed
    to the worker as written: read with the words the gateway's settings.c accepts as true."""
    return os.environ.get("CODEMCP_SEMANTIC_SEARCH", "0").lower() in ("1", "true", "yes", "on")


def warm() -> None:
    """In the prototype, before it forks session workers: maps the sentence encoder's model
    so every worker shares its pages, and logs when semantic search is on but cannot run."""
    if not semantic_enabled():
        return
    from codemcp_rt import encoder
    enc = encoder.load()
    if enc is not None:
        enc.encode(["warm up"])  # numpy's and BLAS's first-use allocations, shared by every worker
    else:
        print("codemcp: search_tools ranks by words only (CODEMCP_SEMANTIC_SEARCH=1): %s" % encoder.why(),
              file=sys.stderr)


def ranking_status(snap: Any) -> str:
    """How search_tools ranks this snapshot now (describe() shows it)."""
    if not semantic_enabled():
        return "by words (BM25F, stems, synonyms)"
    return vectors(snap).status()


def vectors(snap: Any) -> Any:
    """The snapshot's sentence vectors (codemcp_rt.semantic.Vectors, computing in the
    background from the first call), or None when semantic search is off."""
    global _vectors_for
    if not semantic_enabled():
        return None
    if _vectors_for[0] is not snap:
        from codemcp_rt import semantic
        idx = index(snap)
        _vectors_for = (snap, semantic.Vectors(idx.names, idx.info))
    return _vectors_for[1]


def rank(idx: Index, queries: list[str], limit: int, server: str | None = None, vecs: Any = None) -> list[int]:
    """Documents for one task in one or several phrasings, best first: each phrasing's lexical
    ranking, fused by rank (a document scores its best 1/sqrt(1 + rank) over the phrasings,
    plus _AGREE times the others', so agreement breaks ties but a document that is only
    middling for every phrasing never beats one that is first for some), then with the
    sentence vectors when ``vecs`` has them (codemcp_rt.semantic.fuse)."""
    ready = vecs is not None and vecs.ready()
    depth = max(limit, 40) if ready or len(queries) > 1 else limit
    lists = [idx.search(q, depth, server) for q in queries]
    if len(lists) == 1:
        lexical = lists[0]
    else:
        per: dict[int, list[float]] = {}
        for docs in lists:
            for r, d in enumerate(docs):
                per.setdefault(d, []).append((1.0 / (1 + r)) ** 0.5)
        score = {d: max(v) + _AGREE * (sum(v) - max(v)) for d, v in per.items()}
        lexical = sorted(score, key=lambda d: (-score[d], len(idx.names[d])))
    if not ready:
        return lexical[:limit]
    from codemcp_rt import semantic
    allowed = None if server is None else (lambda d: idx.info[idx.names[d]].get("server") == server)
    return semantic.fuse(lexical, vecs.zscores(queries), limit, allowed)


_GROUP_ABOVE = 60  # describe(server) lists a bigger server by groups of names
_GROUP_WORD = re.compile(r"[A-Za-z][a-z0-9]*|[0-9]+")


def _group_prefix(fn: str, tool: str) -> str:
    """The function's name up to the end of its tool name's first word ("github_actions_")."""
    m = _GROUP_WORD.match(tool)
    if not m or not fn.endswith(tool):
        return fn
    return fn[: len(fn) - len(tool) + m.end()]


def _groups(what: str, fns: list[str], idx: Index, status: str) -> str:
    groups: dict[str, list[str]] = {}
    for fn in fns:
        groups.setdefault(_group_prefix(fn, str(idx.info[fn].get("tool") or fn)), []).append(fn)
    lines = ["%s: %d functions in %d groups by name; describe(\"<group>\") lists a group, search_tools(task) "
             "finds by task (it ranks %s)" % (what, len(fns), len(groups), status)]
    for prefix, members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        if len(members) == 1:
            lines.append("  %s  # %s" % (members[0], idx.info[members[0]]["summary"][:70]))
            continue
        sample = ", ".join(m[len(prefix):].lstrip("_") or m for m in members[:4])
        lines.append("  %s* (%d): %s%s" % (prefix, len(members), sample, ", …" if len(members) > 4 else ""))
    return "\n".join(lines) + "\n"


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


class SearchResults(list):  # type: ignore[type-arg]
    """search_tools()'s list of results; ``connecting`` names the servers still making their
    first connection, whose functions could not be searched yet."""

    def __init__(self, items: list[dict[str, str]], connecting: list[str]) -> None:
        super().__init__(items)
        self.connecting = connecting


def bind(snap: Any, unavailable: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """search_tools, describe and help for one run over ``snap`` (an sdk.Sdk)."""
    missing = [u for u in (unavailable or []) if isinstance(u, dict) and isinstance(u.get("server"), str)]
    connecting = [u["server"] for u in missing if u.get("state") == "connecting"]
    noted: list[Any] = [None]  # a weak reference to the run whose stderr has the note

    def note_connecting(server: str | None) -> list[str]:
        """Servers still connecting that a search (of ``server``, or of all) cannot see; says
        so once per run on stderr, which comes back with the run's result."""
        names = [c for c in connecting if server is None or c == server]
        if names:
            from codemcp_rt import runstate
            run = runstate.current()
            seen = noted[0]() if noted[0] is not None else None
            if run is None or seen is not run:
                noted[0] = weakref.ref(run) if run is not None else None
                print("search_tools/describe: %s still connecting, so %s not searched yet; call %s "
                      "functions anyway (a run that names one waits for it) or search again later."
                      % (", ".join(names), "its functions are" if len(names) == 1 else "their functions are",
                         "its" if len(names) == 1 else "their"), file=sys.stderr)
        return names

    def search_tools(query: str | list[str], limit: int = 10, server: str | None = None) -> list[dict[str, str]]:
        """Find SDK functions for a task in plain words, best first.

        ``query`` is the task, or a list of phrasings of it (["archive the ticket",
        "transition issue to done"]): use the API's own words too when you know them.
        Returns [{"name", "signature", "summary", "server"}] (at most ``limit``); ``server``
        keeps one server's functions. Every function found can be called directly. Servers
        still connecting are not searched: the result's ``.connecting`` lists them (and the
        run's stderr says so)."""
        if isinstance(query, (list, tuple)):
            queries = list(query)
            if not queries or len(queries) > _MAX_PHRASINGS or not all(isinstance(q, str) for q in queries):
                raise TypeError("search_tools(query): a list of query phrasings must hold 1 to %d strings"
                                % _MAX_PHRASINGS)
        elif isinstance(query, str):
            queries = [query]
        else:
            raise TypeError("search_tools(query): query must be a string or a list of strings, not %s"
                            % type(query).__name__)
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError("search_tools(limit=...) must be an int")
        limit = max(0, min(limit, 200))
        idx = index(snap)
        out = []
        for doc in rank(idx, queries, limit, server, vectors(snap)):
            fn = idx.names[doc]
            it = idx.info[fn]
            out.append({"name": fn, "signature": it["signature"], "summary": it["summary"], "server": it["server"]})
        return SearchResults(out, note_connecting(server))

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
        if len(fns) > _GROUP_ABOVE:
            return _groups(what, fns, idx, ranking_status(snap))
        if not fns:
            fns = [fn for fn in idx.names if fn.startswith(name)] if len(name) >= 2 else []
            what = "functions starting with %r" % name
        if fns:
            lines = ["%s: %d function%s (describe(name) for the full docs; search_tools ranks %s)"
                     % (what, len(fns), "" if len(fns) == 1 else "s", ranking_status(snap))]
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
        if hits.connecting:
            hint += "; still connecting (not searched yet): " + ", ".join(hits.connecting)
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


def __getattr__(name: str) -> Any:
    """discovery.Index (bench/catalog_rank.py) without importing codemcp_rt.search eagerly."""
    if name == "Index":
        from codemcp_rt.search import Index
        return Index
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


__all__ = ["bind", "index", "warm_index", "words", "Index"]
