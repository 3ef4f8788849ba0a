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

    __slots__ = ("fn", "shape", "label", "home", "after", "comp", "hidden")

    def __init__(self, fn: str, shape: Any, label: str, home: int, after: tuple[int, int], comp: bool,
                 hidden: frozenset = frozenset()) -> None:
        self.fn = fn
        self.shape = shape
        self.label = label  # how messages name the value: result, result['entities'][…]
        self.home = home  # the scope the binding is seen in
        self.after = after  # loads before this position are not of this binding
        self.comp = comp  # a comprehension variable: position does not matter, scope does
        self.hidden = hidden  # comprehension scopes inside home that bind the same name

    def sees(self, f: Any, node: ast.AST, scope: int) -> bool:
        if not within(f, scope, self.home):
            return False
        if self.hidden:
            s = scope
            while s != self.home:
                if s in self.hidden:
                    return False  # the comprehension's own variable of this name
                s = f.scope_parent[s]
        return self.comp or (node.lineno, node.col_offset) > self.after


def _grown(f: Any) -> frozenset:
    """Names of lists the program grows (append, extend, +=)."""
    return frozenset(b.id for b in f.grows if type(b) is ast.Name)


def source(f: Any, bound: dict, root: str, node: ast.AST, scope: int) -> Bound | None:
    """The Bound of ``root`` that a read of it at ``node`` in ``scope`` sees, or None.
    ``bound`` is keyed by name, and by (name, scope) for comprehension variables."""
    b = bound.get(root)
    if b is not None and b.sees(f, node, scope):
        return b
    for key, b in bound.items():
        if type(key) is tuple and key[0] == root and b.sees(f, node, scope):
            return b
    return None


def _only(bound: dict, name: str) -> Bound | None:
    """The one Bound of ``name`` (a plain or a comprehension binding), None if not one."""
    found = [b for key, b in bound.items() if key == name or (type(key) is tuple and key[0] == name)]
    return found[0] if len(found) == 1 else None


def filtered(value: ast.AST) -> ast.AST | None:
    """``[e for e in r['k'] if ...]`` (or a generator / list() / sorted() of one, each item
    kept whole) -> ``r['k']``, the expression whose items it keeps; else None."""
    if type(value) is ast.Call and type(value.func) is ast.Name and value.func.id in ("list", "sorted") \
            and len(value.args) == 1 and not value.keywords:
        value = value.args[0]
    if type(value) not in (ast.ListComp, ast.GeneratorExp) or len(value.generators) != 1:
        return None
    gen = value.generators[0]
    if gen.is_async or type(gen.target) is not ast.Name or type(value.elt) is not ast.Name:
        return None
    if value.elt.id != gen.target.id or type(gen.iter) not in (ast.Name, ast.Subscript, ast.Attribute, ast.Call):
        return None
    return gen.iter


def _hidden(f: Any, name: str, scope: int) -> frozenset | None:
    """The comprehension scopes inside ``scope`` that bind ``name`` (their own variable,
    not this binding's), or None when ``name`` is bound more than once otherwise."""
    comps = [sc for sc in f.comp_scopes.get(name, ()) if sc != scope]
    if len(f.binds.get(name, ())) - len(comps) != 1:
        return None
    return frozenset(comps)


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
            key = (name, scope) if kind == "comp" else name  # a comprehension's variable is its own
            if key in bound:
                continue
            if kind == "comp":
                # One comprehension variable of this name in this scope and none nested in it.
                if sum(1 for sc in comp_names[name] if within(f, sc, scope)) != 1:
                    continue
            elif scope in f.class_scopes or name in f.isinstance_of or name in _grown(f):
                continue  # a list the program also appends to may hold items of any shape
            path = path_of(expr)
            if path is None:
                continue
            root, steps = path
            src = source(f, bound, root, expr, scope)
            if src is None:
                continue
            sub = _shapes.follow(src.shape, steps, written=written, arrays_grow=arrays_grow)
            if sub is None:
                continue
            label = src.label + _shapes.path_text(steps)
            if kind != "alias" and sub.get("k") == "object" and isinstance(sub.get("fields"), dict):
                # Looping over a dict gives its keys (text): remember which lists it holds.
                lists = [k for k, v in sub["fields"].items() if isinstance(v, dict) and v.get("k") == "array"]
                sub = {"k": "leaf", "t": "str", "keys_of": lists}
            elif kind != "alias":
                if sub.get("k") != "array" or arrays_grow or not isinstance(sub.get("items"), dict):
                    continue
                sub = sub["items"]
                label += "[…]"
            if sub.get("k") not in ("object", "array", "leaf"):
                continue
            hidden = frozenset() if kind == "comp" else _hidden(f, name, scope)
            if hidden is None:
                continue
            end = expr if kind != "alias" else node
            bound[key] = Bound(src.fn, sub, label, scope, (end.end_lineno, end.end_col_offset), kind == "comp",
                               hidden)
            changed = True
        if _helper_params(f, bound):
            changed = True
        if not changed:
            return


def _helper_params(f: Any, bound: dict[str, Bound]) -> bool:
    """``def summary(entity): ...`` whose every call passes, for ``entity``, a name holding
    the same part of one SDK result (``[summary(e) for e in r['entities']]``): the parameter
    holds that part too. Only for functions used by plain calls and nothing else."""
    changed = False
    for fname, (fdef, fscope) in f.defs.items():
        if len(f.binds.get(fname, ())) != 1 or fdef.decorator_list:
            continue
        calls = [c for form, cs in f.sites.items() if form[0] == fname for c in cs]
        if not calls or f.name_loads.get(fname, 0) != len(calls):
            continue  # passed around, or never called: any value may arrive
        a = fdef.args
        if a.posonlyargs or a.vararg or a.kwarg:
            continue
        for i, arg in enumerate(a.args):
            pname = arg.arg
            if pname in bound or pname in f.isinstance_of:
                continue
            src = None
            for c in calls:
                if any(type(x) is ast.Starred for x in c.args) or any(k.arg is None for k in c.keywords):
                    src = None
                    break
                given = c.args[i] if i < len(c.args) else next((k.value for k in c.keywords if k.arg == pname), None)
                b = _only(bound, given.id) if type(given) is ast.Name else None
                if b is None or (src is not None and (b.shape is not src.shape or b.fn != src.fn)):
                    src = None
                    break
                src = b
            if src is None:
                continue
            hidden = _hidden(f, pname, fscope)
            if hidden is None:
                continue
            bound[pname] = Bound(src.fn, src.shape, src.label, fscope, (0, 0), True, hidden)
            changed = True
    return changed


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
