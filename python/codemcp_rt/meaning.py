"""The SDK function that means what a guessed name says: `memory_add_relations` ->
`memory_create_relations`, `filesystem_stat` -> `filesystem_get_file_info`.

Spelling alone points a guessed verb at the closest string, which is often the opposite
operation (`add_relations` is two letters from `delete_relations`). This asks the
discovery search (codemcp_rt.search through discovery.index, the entry point search_tools
uses) with the guess's words, restricted to its server, and keeps only answers that are
safe to suggest: a guess that reads is never pointed at a write, and a destructive tool
(delete, remove, ...) is only suggested for a guess that says so itself. Used by the
validator's unknown-function check and by the runtime's hints for names computed at run
time. Never raises: without the search (the validator loaded on its own) it answers None.
"""

from __future__ import annotations

import re
import types
from typing import Any, Callable

__all__ = ["suggest", "destructive", "reads"]

# Verbs that only read; a guess made of one of these never gets a write suggested.
_READ_VERBS = frozenset({
    "get", "read", "find", "search", "list", "show", "stat", "info", "fetch", "lookup", "look", "query",
    "open", "view", "load", "describe", "count", "exists", "check", "cat", "ls", "head", "tail", "grep",
    "retrieve", "browse", "inspect", "peek", "print", "scan",
})
# Verbs that destroy; a tool with one is only suggested for a guess that has one too.
_DESTRUCTIVE = frozenset({"delete", "remove", "rm", "drop", "destroy", "purge", "erase", "clear", "unlink",
                          "wipe", "truncate", "kill", "del"})

_cache: list[Any] = [None, None, None]  # functions, meta, the snapshot-like object for discovery


def _words(name: str) -> list[str]:
    """`memory_addRelations` -> ["memory", "add", "relations"]."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]


def destructive(name: str) -> bool:
    return any(w in _DESTRUCTIVE for w in _words(name))


def reads(name: str) -> bool:
    """True if the name's verb only reads."""
    ws = _words(name)
    return bool(ws) and any(w in _READ_VERBS for w in ws) and not any(w in _DESTRUCTIVE for w in ws)


def allowed(guess: str, fn: str, meta: dict[str, Any]) -> bool:
    """May ``fn`` be suggested for ``guess``? A destructive tool only for a destructive
    guess (and the other way round), never a write for a guess that reads."""
    if destructive(fn) != destructive(guess):
        return False  # a delete for a create, or a read for a delete: not the same meaning
    info = meta.get(fn) if isinstance(meta, dict) else None
    mutation = bool(info.get("mutation")) if isinstance(info, dict) else False
    return not (mutation and reads(guess))


def suggest(guess: str, server: str | None, functions: dict[str, Callable], meta: dict[str, dict],
            limit: int = 1) -> list[str]:
    """Up to ``limit`` SDK functions of ``server`` (None: any) that mean what ``guess``
    says, best first; [] when the search has nothing safe to offer."""
    try:
        from codemcp_rt import discovery
    except Exception:
        return []
    try:
        if _cache[0] is not functions or _cache[1] is not meta:
            _cache[:] = [functions, meta, types.SimpleNamespace(functions=functions, meta=meta, catalog={})]
        idx = discovery.index(_cache[2])
        words = _words(guess)
        prefix = _server_prefix(server)
        if prefix and words[: len(prefix)] == prefix:
            words = words[len(prefix):]
        if not words:
            return []
        out = []
        for doc in idx.search(" ".join(words), 5, server):
            fn = idx.names[doc]
            if fn != guess and fn in functions and allowed(guess, fn, meta):
                out.append(fn)
            if len(out) >= limit:
                break
        return out
    except Exception:
        return []  # a suggestion is a courtesy


def _server_prefix(server: str | None) -> list[str]:
    return _words(server) if server else []
