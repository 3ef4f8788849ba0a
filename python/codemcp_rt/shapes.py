"""Result shapes of SDK functions, and the field checks the pre-flight validator makes.

The gateway learns the key structure of every tool's results (seeded from the tool's
outputSchema, then the union over real calls) and ships it with `set_shapes`. This
module keeps the current table and answers one question for the validator: following
a literal access path such as ``result['items'][0]['numbr']`` from a tool's result,
is there a step that names a field which cannot exist?

Wire form of a shape (anything else reads as "unknown" and is never flagged):
    {"k": "object", "fields": {name: shape, ...}}   optional "open": true = extra keys allowed
    {"k": "array", "items": shape}
    {"k": "leaf"}                                   str, number, bool, null
    {"k": "any"}                                    unknown

Stdlib only, no imports from the rest of codemcp_rt: the validator must load alone.
Conservative by construction: a step the checker does not fully understand ends the
walk without a finding.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Iterable

ANY: dict[str, Any] = {"k": "any"}

# An object that has a field name like this is a map keyed by data (ids, dates, paths),
# not a record: its keys vary between calls, so a missing one proves nothing.
_RECORD_KEY = re.compile(r"[A-Za-z_$@][A-Za-z0-9_$@\-]*\Z")
# A record with this many fields is also more likely a map than a fixed structure.
_MAX_RECORD_FIELDS = 200
# How many fields to list when no close match exists.
_LIST_FIELDS = 12

# Attribute names that never read a field: dict methods win over keys in Pending's
# attribute access (see pending.py), "result"/"done" are Pending's own API, and names
# starting with "_" are refused by Pending.
_NOT_FIELDS = frozenset(dir(dict)) | {"result", "done", "send", "throw"}

_current: dict[str, dict[str, Any]] = {}

# What the runner's own helpers return (discovery.py's search_tools, describe): followed like a tool's result.
_TEXT = {"k": "leaf", "t": "str"}
RUNTIME_SHAPES: dict[str, dict[str, Any]] = {
    "search_tools": {"k": "array", "items": {"k": "object", "fields": {
        "name": _TEXT, "signature": _TEXT, "summary": _TEXT, "server": _TEXT}}},
    "describe": _TEXT,
}


# -- the table ------------------------------------------------------------------------


def set_shapes(table: Any) -> int:
    """Replace the current table with ``table`` ({sdk function name: shape}), as sent by
    the gateway's `set_shapes`. Entries that are not well-formed are dropped (never an
    error: shapes are advisory). Returns the number of shapes kept."""
    global _current
    fresh: dict[str, dict[str, Any]] = {}
    if isinstance(table, dict):
        for name, shape in table.items():
            if isinstance(name, str) and well_formed(shape):
                fresh[name] = shape
    _current = fresh  # one assignment: a validation in progress keeps the old table
    return len(fresh)


def current() -> dict[str, dict[str, Any]]:
    """The table set by the last set_shapes() (empty before the first one)."""
    return _current


def well_formed(shape: Any, depth: int = 0) -> bool:
    """True if ``shape`` follows the wire form (unknown kinds are allowed: they read as
    "any"). Bounded depth, so a hostile or looping table cannot hang the worker."""
    if depth > 64 or not isinstance(shape, dict):
        return False
    k = shape.get("k")
    if k == "object":
        fields = shape.get("fields")
        if not isinstance(fields, dict):
            return False
        return all(isinstance(n, str) and well_formed(s, depth + 1) for n, s in fields.items())
    if k == "array":
        return well_formed(shape.get("items", ANY), depth + 1)
    return isinstance(k, str)


# -- walking an access path -----------------------------------------------------------

# Steps of an access path, as the validator hands them over:
#   ("key", "name" | int, line)   x["name"] or x[0] / x[-1]
#   ("attr", "name", line)        x.name, not called
#   ("slice", None, line)         x[1:3]
#   ("stop", None, line)          anything else (a call, a computed index, a store ...)


def check_path(
    fn: str,
    shape: Any,
    steps: Iterable[tuple[str, Any, int]],
    *,
    written: frozenset | set = frozenset(),
    mentioned: frozenset | set = frozenset(),
    arrays_grow: bool = False,
    start: str = "result",
    functions: Iterable[str] = (),
) -> str | None:
    """Follow ``steps`` from ``fn``'s result shape and return a problem line for the
    first field that cannot exist, or None.

    ``written`` holds keys (str or int) that the program itself stores somewhere
    (``d["k"] = v``, ``d.update(k=...)``, ``d.k = v``): such a key may exist even if the
    shape lacks it, and the value under it may have been replaced, so the walk stops
    there. ``arrays_grow`` says the program may append elements of any shape to a list it
    did not create itself: the walk then stops after an element index. ``mentioned``
    holds string constants the program uses elsewhere (``"k" in x``, ``x.get("k")``, a
    dict literal): a missing key that the program names there is treated as optional
    on purpose and not reported.
    """
    path = start
    cur = shape
    for op, key, line in steps:
        kind = cur.get("k") if isinstance(cur, dict) else None
        if op == "slice":
            if kind != "array":
                return None
            continue  # a slice of an array has the array's shape
        if op == "stop":
            return None
        if kind == "leaf":
            return _leaf_problem(fn, path, cur, op, key, line)
        if kind not in ("object", "array"):
            return None
        if op == "call":
            return _method_problem(fn, path, cur, key, line, functions)
        if key in written:
            return None
        if kind == "array":
            if op == "attr" and key == "length":
                return "%s: %s is a list; `.length` is JavaScript (line %d). Python writes `len(%s)`." % (
                    fn, path, line, "x")
            if op == "key" and type(key) is str:
                return (
                    "%s: %s is a list, so %s[%r] fails (line %d). Index it with a number (%s[0][%r]) "
                    "or loop over it (for item in ...: item[%r])." % (fn, path, path, key, line, path, key, key)
                )
            if op != "key" or type(key) is not int:
                return None  # list methods: not ours to judge
            cur = cur.get("items", ANY)
            if arrays_grow:
                return None
            path += "[%d]" % key
            continue
        # an object
        if type(key) is not str:
            return None
        if op == "attr" and (key in _NOT_FIELDS or key.startswith("_")):
            return None
        fields = cur.get("fields")
        if not isinstance(fields, dict):
            return None
        child = fields.get(key)
        if child is None:
            if key in mentioned or not _is_closed(cur, fields):
                return None
            return _missing(fn, path, key, line, fields)
        cur = child
        path += "[%r]" % key
    return None


_LEAF_TYPES = {"str": str, "int": int, "float": float, "bool": bool}
# What a result's value answers besides its own type's methods: Pending's API.
_PENDING_API = frozenset({"result", "done", "send", "throw", "poll", "wait", "of"})


def _method_problem(fn: str, path: str, cur: dict, method: str, line: int, functions: Iterable[str]) -> str | None:
    """``x.method(...)`` on a list or a dict of a result: a method neither type has."""
    if method.startswith("_") or method in _PENDING_API:
        return None
    pytype = list if cur.get("k") == "array" else dict
    if hasattr(pytype, method):
        return None
    what = "a list" if pytype is list else "a dict"
    msg = "%s: %s is %s, which has no method `.%s()` (line %d)." % (fn, path, what, method, line)
    tools = [f for f in functions if f.endswith("_" + method)]
    if tools:
        return msg + " SDK functions are not methods of a result: call `%s(...)` by its name." % tools[0]
    if pytype is dict and hasattr(str, method):
        texts = [n for n, v in (cur.get("fields") or {}).items() if isinstance(v, dict) and v.get("t") == "str"]
        if len(texts) == 1:
            return msg + " Its text is %s[%r]: call %s[%r].%s(...)." % (path, texts[0], path, texts[0], method)
    if pytype is list:
        if method == "push":
            return msg + " Python writes `.append(...)`."
        return msg + " Loop over it and call it on each item (for item in ...: item.%s())." % method
    return msg


def _leaf_problem(fn: str, path: str, cur: dict, op: str, key: Any, line: int) -> str | None:
    """A subscript or attribute read on a value known to be text or a number."""
    t = cur.get("t")
    pytype = _LEAF_TYPES.get(t) if isinstance(t, str) else None
    if pytype is None:
        return None  # None, Any or unknown: not ours to judge
    what = "text (str)" if pytype is str else "a %s" % t
    keys_of = cur.get("keys_of")
    if op == "key" and keys_of is not None and type(key) is str:
        lists = [k for k in keys_of]
        fix = " Loop over %s[%r] instead." % (path, lists[0]) if len(lists) == 1 else (
            " Loop over one of its lists instead: %s." % ", ".join("%s[%r]" % (path, k) for k in lists) if lists else
            " Loop over %s.items() for (key, value) pairs." % path)
        return "%s: looping over %s (a dict) gives its keys, which are text (str), so item[%r] fails (line %d).%s" % (
            fn, path, key, line, fix)
    if op == "key":
        if pytype is str and type(key) is int:
            return None  # a character
        return "%s: %s is %s, not a dict, so %s[%r] fails (line %d). Use the value itself%s." % (
            fn, path, what, path, key, line, " (e.g. parse it, or search it with `in`)" if pytype is str else "")
    if op in ("attr", "call"):
        if hasattr(pytype, key) or key in ("result", "done"):
            return None
        if cur.get("keys_of") is not None:
            return None  # a key of an object: only a subscript is certainly wrong
        if key == "length":
            return "%s: %s is %s; `.length` is JavaScript (line %d). Python writes `len(x)`." % (fn, path, what, line)
        return "%s: %s is %s and has no attribute `%s` (line %d). Use the value itself." % (fn, path, what, key, line)
    return None


def follow(
    shape: Any, steps: Iterable[tuple[str, Any, int]], *, written: frozenset | set = frozenset(),
    arrays_grow: bool = False,
) -> dict[str, Any] | None:
    """The shape at the end of ``steps`` from ``shape``, or None when a step is not
    certain (a key the program writes, an unknown field, a growing list ...)."""
    cur = shape
    for op, key, _ in steps:
        kind = cur.get("k") if isinstance(cur, dict) else None
        if op == "slice":
            if kind != "array":
                return None
            continue
        if op == "stop" or kind not in ("object", "array") or key in written:
            return None
        if kind == "array":
            if op != "key" or type(key) is not int or arrays_grow:
                return None
            cur = cur.get("items", ANY)
            continue
        if type(key) is not str or (op == "attr" and (key in _NOT_FIELDS or key.startswith("_"))):
            return None
        fields = cur.get("fields")
        cur = fields.get(key) if isinstance(fields, dict) else None
        if cur is None:
            return None
    return cur if isinstance(cur, dict) else None


def path_text(steps: Iterable[tuple[str, Any, int]]) -> str:
    """``[ 'k'][0]`` for the steps of a path (how messages show it)."""
    out = []
    for op, key, _ in steps:
        if op == "slice":
            out.append("[:]")
        elif op == "key":
            out.append("[%d]" % key if type(key) is int else "[%r]" % key)
        elif op == "attr":
            out.append("[%r]" % key)
    return "".join(out)


def _is_closed(shape: dict[str, Any], fields: dict[str, Any]) -> bool:
    """True when a missing key in this object really means the key cannot exist."""
    if shape.get("open") or not fields or len(fields) > _MAX_RECORD_FIELDS:
        return False
    return all(type(name) is str and _RECORD_KEY.match(name) for name in fields)


def _missing(fn: str, path: str, key: str, line: int, fields: dict[str, Any]) -> str:
    names = sorted(fields)
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
    if not close:  # case slips ("Number" for "number") score low on ratio alone
        lowered = {n.lower(): n for n in names}
        close = [lowered[key.lower()]] if key.lower() in lowered else []
    msg = "%s: %s has no field `%s` (line %d)." % (fn, path, key, line)
    if close:
        return msg + " Did you mean `%s`?" % close[0]
    shown = ", ".join(names[:_LIST_FIELDS])
    if len(names) > _LIST_FIELDS:
        shown += ", … (%d more)" % (len(names) - _LIST_FIELDS)
    return msg + " Fields: %s." % shown


def fields_of(shape: Any) -> list[str]:
    """The sorted field names of an object shape ([] for anything else)."""
    if isinstance(shape, dict) and shape.get("k") == "object" and isinstance(shape.get("fields"), dict):
        return sorted(shape["fields"])
    return []
