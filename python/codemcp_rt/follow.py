"""Where the validator's shape checks start: names that hold an SDK result or a part of
it, followed from ``x = fn(...)`` into loop variables, comprehension variables and
re-bindings (``for e in r['entities']``, ``[.. for e in r['x']]``, ``items = r['x']``,
``y = r.result()``), plus the helpers that turn expressions into access paths.

Split from validator.py (which owns the walk and the facts these read). Conservative
like the rest: a name bound more than once, a comprehension variable shadowed inside
itself, a path through a key the program writes or a list it grows ends the following.
Stdlib only (plus shapes).
"""

from __future__ import annotations

import ast
from typing import Any

try:
    from . import shapes as _shapes
except ImportError:  # loaded as a top-level module
    import shapes as _shapes  # type: ignore[no-redef]

MISSING = object()


def literal_key(node: ast.AST) -> Any:
    """The constant a subscript uses (str, int, negative int), else MISSING."""
    if type(node) is ast.Constant and type(node.value) in (str, int):
        return node.value
    if (
        type(node) is ast.UnaryOp
        and type(node.op) is ast.USub
        and type(node.operand) is ast.Constant
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return MISSING


def within(f: Any, scope: int, home: int) -> bool:
    """True if code in ``scope`` sees names bound in ``home``."""
    while scope != -1:
        if scope == home:
            return True
        scope = f.scope_parent[scope]
    return False


class Bound:
    """A name known to hold (part of) an SDK result: where it is valid and its shape."""

    __slots__ = ("fn", "shape", "label", "home", "after", "comp")

    def __init__(self, fn: str, shape: Any, label: str, home: int, after: tuple[int, int], comp: bool) -> None:
        self.fn = fn
        self.shape = shape
        self.label = label  # how messages name the value: result, result['entities'][…]
        self.home = home  # the scope the binding is seen in
        self.after = after  # loads before this position are not of this binding
        self.comp = comp  # a comprehension variable: position does not matter, scope does

    def sees(self, f: Any, node: ast.AST, scope: int) -> bool:
        if not within(f, scope, self.home):
            return False
        return self.comp or (node.lineno, node.col_offset) > self.after


def derive(f: Any, bound: dict[str, Bound], written: frozenset, arrays_grow: bool) -> None:
    """Follows values from bound names into loop variables, comprehension variables and
    re-bindings (for e in r['entities'], [.. for e in r['x']], items = r['x'],
    y = r.result()). A few passes, so chains (for o in e['observations']) resolve."""
    comp_names: dict[str, list[int]] = {}
    for kind, name, _, _, scope in f.derived:
        if kind == "comp":
            comp_names.setdefault(name, []).append(scope)
    for _ in range(4):
        changed = False
        for kind, name, expr, node, scope in f.derived:
            if name in bound:
                continue
            if kind == "comp":
                # One comprehension variable of this name in this scope and none nested in it.
                if sum(1 for sc in comp_names[name] if within(f, sc, scope)) != 1:
                    continue
            elif len(f.binds.get(name, ())) != 1 or scope in f.class_scopes:
                continue
            path = path_of(expr)
            if path is None:
                continue
            root, steps = path
            src = bound.get(root)
            if src is None or not src.sees(f, expr, scope):
                continue
            sub = _shapes.follow(src.shape, steps, written=written, arrays_grow=arrays_grow)
            if sub is None:
                continue
            label = src.label + _shapes.path_text(steps)
            if kind != "alias":
                if sub.get("k") != "array" or arrays_grow or not isinstance(sub.get("items"), dict):
                    continue
                sub = sub["items"]
                label += "[…]"
            if sub.get("k") not in ("object", "array", "leaf"):
                continue
            end = expr if kind != "alias" else node
            bound[name] = Bound(src.fn, sub, label, scope, (end.end_lineno, end.end_col_offset), kind == "comp")
            changed = True
        if not changed:
            return


def path_of(expr: ast.AST) -> tuple[str, list[tuple[str, Any, int]]] | None:
    """``x["k"][0].name`` / ``x.result()`` -> ("x", steps) as shapes.check_path takes
    them; None for anything that is not a plain read path from a bare name."""
    steps: list[tuple[str, Any, int]] = []
    cur = expr
    for _ in range(64):
        t = type(cur)
        if t is ast.Name:
            steps.reverse()
            return cur.id, steps  # type: ignore[attr-defined]
        if t is ast.Subscript:
            sl = cur.slice  # type: ignore[attr-defined]
            if type(sl) is ast.Slice:
                steps.append(("slice", None, cur.lineno))
            else:
                key = literal_key(sl)
                if key is MISSING:
                    return None
                steps.append(("key", key, cur.lineno))
            cur = cur.value  # type: ignore[attr-defined]
        elif t is ast.Attribute:
            steps.append(("attr", cur.attr, cur.lineno))  # type: ignore[attr-defined]
            cur = cur.value  # type: ignore[attr-defined]
        elif t is ast.Call:
            func = cur.func  # type: ignore[attr-defined]
            if type(func) is not ast.Attribute or func.attr != "result" or cur.args or cur.keywords:  # type: ignore[attr-defined]
                return None
            cur = func.value
        else:
            return None
    return None
