"""The validator's check of habits from other languages and of async misuse, each reported
with the Python spelling to write instead:

    true / false / null / undefined   -> True / False / None
    JSON.parse(s) / JSON.stringify(x) -> json.loads(s) / json.dumps(x)
    console.log(x)                    -> print(x)
    fn(...).then(cb)                  -> the value itself (fn(...) is already its result)
    p.result                          -> p.result()
    asyncio.run(main()) in a program that awaits at top level -> await main()
    await gather(...)                 -> gather(...) (it returns the list) or asyncio.gather

Split from validator.py, which records what these need during its one walk (name reads,
awaits, `.result` reads, `.then` calls). Only names the program does not bind itself and
the runner does not define are judged, so a program with its own `true` or `console` is
left alone. Stdlib only.
"""

from __future__ import annotations

import ast
from typing import Any, Callable

__all__ = ["problems"]

# Bare JavaScript names and what Python writes.
_JS_VALUES = {"true": "True", "false": "False", "null": "None", "undefined": "None"}
# JavaScript objects used as namespaces: object -> {method: the Python spelling}.
_JS_OBJECTS = {
    "JSON": {"parse": "json.loads(...)", "stringify": "json.dumps(...)"},
    "console": {"log": "print(...)", "error": "print(...)", "warn": "print(...)", "info": "print(...)",
                "debug": "print(...)"},
    "Math": {"max": "max(...)", "min": "min(...)", "round": "round(...)", "floor": "math.floor(...)",
             "ceil": "math.ceil(...)", "abs": "abs(...)"},
    "Object": {"keys": "list(d.keys())", "values": "list(d.values())", "entries": "list(d.items())"},
}
_HELPERS = frozenset({"gather", "settle", "resolve"})  # the runner's helpers: plain functions


def problems(f: Any, tree: ast.Module, functions: dict[str, Callable], known: frozenset) -> list[tuple[int, int, int, str]]:
    out: list[tuple[int, int, int, str]] = []
    unbound = [n for n in list(_JS_VALUES) + list(_JS_OBJECTS)
               if f.name_loads.get(n) and n not in f.binds and n not in functions and n not in known]
    if unbound:
        out += _js_names(tree, frozenset(unbound))
    for call in f.thens:
        base = call.func.value  # type: ignore[attr-defined]
        if _sdk_call(base, f, functions) or (type(base) is ast.Name and base.id in functions):
            out.append((call.lineno, call.col_offset, 1,
                        "`.%s(...)` (line %d): an SDK call is not a JavaScript promise. Use its value directly "
                        "(`r = fn(...)`, then `r[...]`), or `fn(...).result()` / `await fn(...)` to wait for it."
                        % (call.func.attr, call.lineno)))  # type: ignore[attr-defined]
    pendings = {x for x, fn, _, _ in f.candidates if fn in functions and fn not in f.binds
                and len(f.binds.get(x, ())) == 1}  # x = fn(...), bound once: x is a Pending
    for node in f.uncalled:
        if id(node) in f.result_refs:
            continue
        base = node.value
        if _sdk_call(base, f, functions) or (type(base) is ast.Name and base.id in pendings):
            out.append((node.lineno, node.col_offset, 1,
                        "`.result` (line %d) is a method: write `.result()` to get the call's value." % node.lineno))
    out += _async_problems(f, functions)
    return out


def _sdk_call(node: ast.AST, f: Any, functions: dict[str, Callable]) -> bool:
    """``node`` is a call of an SDK function by its bare name (not one the program binds)."""
    return (type(node) is ast.Call and type(node.func) is ast.Name and node.func.id in functions
            and node.func.id not in f.binds)


def _js_names(tree: ast.Module, names: frozenset) -> list[tuple[int, int, int, str]]:
    """One problem per line that reads one of ``names`` (JS values and objects)."""
    out: list[tuple[int, int, int, str]] = []
    parent: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parent[id(child)] = node
        if type(node) is not ast.Name or node.id not in names or type(node.ctx) is not ast.Load:
            continue
        name, line = node.id, node.lineno
        if name in _JS_VALUES:
            msg = "`%s` (line %d) is JavaScript: Python writes `%s`." % (name, line, _JS_VALUES[name])
        else:
            p = parent.get(id(node))
            method = p.attr if type(p) is ast.Attribute else None
            spelled = _JS_OBJECTS[name].get(method or "")
            if spelled is None:
                continue  # an object we have no spelling for: leave it to the run
            msg = "`%s.%s` (line %d) is JavaScript: Python writes `%s`%s." % (
                name, method, line, spelled, " (import json first)" if name == "JSON" else "")
        out.append((line, node.col_offset, 1, msg))
    return out


def _async_problems(f: Any, functions: dict[str, Callable]) -> list[tuple[int, int, int, str]]:
    out: list[tuple[int, int, int, str]] = []
    top = [a for a, scope in f.awaits if scope == 0]
    if top and "asyncio" in f.binds:
        first = min(a.lineno for a in top)
        for parts, call in f.dotted:
            if parts == ("asyncio", "run") and call.args and not call.keywords:
                arg = ast.unparse(call.args[0])
                out.append((call.lineno, call.col_offset, 1,
                            "`asyncio.run(%s)` (line %d): this program already awaits at top level (line %d), so "
                            "an event loop is running and asyncio.run() fails. Write `await %s` instead."
                            % (arg, call.lineno, first, arg)))
    for a, _ in f.awaits:
        v = a.value
        if type(v) is ast.Call and type(v.func) is ast.Name and v.func.id in _HELPERS and v.func.id not in f.binds:
            out.append((a.lineno, a.col_offset, 1,
                        "`await %s(...)` (line %d): %s() is a plain function that waits and returns the list "
                        "itself, so it cannot be awaited. Drop the `await`, or write `await asyncio.gather(...)` "
                        "to get the values." % (v.func.id, a.lineno, v.func.id)))
    return out
