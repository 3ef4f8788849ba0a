"""The validator's checks of SDK results against their learned shapes (shape_problems): each
field read the shape rules out (``r['entities'][0]['nmae']``, followed by follow.py through
loops, comprehensions and helpers), and results used as the wrong type where no field is read:

    json.loads(filesystem_read_text_file(path=p))   the result is {content: str}, already
                                                    parsed: json.loads(r['content'])
    total = total + everything_get_sum(a=1, b=2)    the result is text: parse the number

Split from validator.py, which owns the walk (the facts read here); the names bound to
results are follow.py's Bound. Conservative like the rest: only a result whose learned shape is certain, and for
arithmetic only a number on the other side (a numeric constant, or a name every binding
of which is a number or arithmetic) with an operator text never supports. Stdlib only.
"""

from __future__ import annotations

import ast
from typing import Any, Callable

try:
    from . import follow as _follow
    from . import shapes as _shapes
except ImportError:  # loaded as a top-level module
    import follow as _follow  # type: ignore[no-redef]
    import shapes as _shapes  # type: ignore[no-redef]

__all__ = ["shape_problems", "problems", "called_values"]

_NUMERIC_OPS = (ast.Add, ast.Sub, ast.Div, ast.FloorDiv, ast.Pow)  # text supports none with a number
# Calls whose result is a new container: storing into it cannot change a tool's result.
_FRESH_CALLS = frozenset(
    {"dict", "list", "set", "frozenset", "tuple", "sorted", "defaultdict", "Counter", "OrderedDict", "deque"}
)
_FRESH_NODES = (
    ast.Dict,
    ast.List,
    ast.Set,
    ast.Tuple,
    ast.ListComp,
    ast.DictComp,
    ast.SetComp,
    ast.GeneratorExp,
    ast.Constant,
    ast.JoinedStr,
)


def _is_fresh(f: Any, base: ast.AST | None) -> bool:
    """True if ``base`` is a name that only ever holds containers the program built
    itself, so storing into it cannot change a tool's result."""
    if type(base) is not ast.Name:
        return False
    values = f.binds.get(base.id)
    if not values:
        return False
    for v in values:
        if v == "aug" or isinstance(v, _FRESH_NODES):
            continue
        if type(v) is ast.BinOp:  # a + b builds a new object
            continue
        if type(v) is ast.Call and type(v.func) is ast.Name and v.func.id in _FRESH_CALLS and v.func.id not in f.binds:
            continue
        return False
    return True


def _all_fresh(f: Any, bases: list[ast.AST | None]) -> bool:
    """_is_fresh for every base; each name is judged once (`out.append(x)` 500 times is
    one name)."""
    done: set[str] = set()
    for base in bases:
        if type(base) is ast.Call and type(base.func) is ast.Attribute and base.func.attr == "setdefault" \
                and len(base.args) == 2 and isinstance(base.args[1], _FRESH_NODES):
            base = base.func.value  # d.setdefault(k, []).append(x): a list the program made, in d
        if type(base) is not ast.Name:
            return False
        if base.id not in done:
            if not _is_fresh(f, base):
                return False
            done.add(base.id)
    return True


def shape_problems(
    f: Any, functions: dict[str, Callable], shapes: dict[str, dict]
) -> list[tuple[int, int, int, str]]:
    """(line, col, 0, message) per field read that the learned shapes rule out."""
    if not _all_fresh(f, f.key_writes):
        return []  # the program stores computed keys into data it did not build: any key may exist
    arrays_grow = not _all_fresh(f, f.grows)
    written = frozenset(f.written)
    bound: dict[Any, _follow.Bound] = {}  # name (or (name, scope) for a comprehension's) -> Bound
    roots = set()  # names a derived binding reads from (for e in x[...], y = x ...)
    for _, _, expr, _, _ in f.derived:
        path = _follow.path_of(expr)
        if path is not None:
            roots.add(path[0])
    for parts, call in f.dotted:  # json.loads(x) (problems below)
        if parts == ("json", "loads") and call.args and type(call.args[0]) is ast.Name:
            roots.add(call.args[0].id)
    for node, _ in f.arith:  # names used in arithmetic (problems below)
        for side in (node.target, node.value) if type(node) is ast.AugAssign else (node.left, node.right):
            if type(side) is ast.Name:
                roots.add(side.id)
    loads = f.loads
    for x, fn, stmt, home in f.candidates:
        if x not in loads and x not in roots:
            continue  # never read as x[...] or x.attr, nothing derived from it
        if (fn not in functions and fn not in _shapes.RUNTIME_SHAPES) or fn in f.binds or len(f.binds.get(x, ())) != 1 \
                or x in f.isinstance_of:
            continue
        shape = shapes.get(fn) or _shapes.RUNTIME_SHAPES.get(fn)
        if not isinstance(shape, dict) or shape.get("k") not in ("object", "array", "leaf"):
            continue
        if home in f.class_scopes:
            continue
        bound[x] = _follow.Bound(fn, shape, "result", home, (stmt.end_lineno, stmt.end_col_offset), False)
    if not bound:
        return problems(f, bound, functions, shapes, written, arrays_grow)
    if f.derived or f.defs:
        _follow.derive(f, bound, written, arrays_grow)
    out: list[tuple[int, int, int, str]] = []
    for key, b in bound.items():
        x = key if type(key) is str else key[0]
        for node, scope, guarded in f.loads.get(x, ()):
            if guarded or not b.sees(f, node, scope):
                continue
            steps = _steps(f, node)
            if not steps:
                continue
            msg = _shapes.check_path(
                b.fn, b.shape, steps, written=written, mentioned=f.mentioned, arrays_grow=arrays_grow, start=b.label,
                functions=functions,
            )
            if msg is not None:
                out.append((node.lineno, node.col_offset, 0, msg))
    out += problems(f, bound, functions, shapes, written, arrays_grow)
    out += called_values(f, bound)
    return out


def _steps(f: Any, node: ast.AST) -> list[tuple[str, Any, int]]:
    """The literal access path that starts at ``node`` (a Name), as shapes.check_path
    steps. Stops at the first step that is not a plain read."""
    steps: list[tuple[str, Any, int]] = []
    parent = f.parent
    cur = node
    while True:
        p = parent.get(id(cur))
        if p is None:  # cur is not read further (it may be called, passed, compared ...)
            return steps
        tp = type(p)
        line = p.lineno
        if tp is ast.Subscript:
            if type(p.ctx) is not ast.Load:
                return steps  # the last step is a store / del: not a read
            s = p.slice
            if type(s) is ast.Slice:
                steps.append(("slice", None, line))
            else:
                key = _follow.literal_key(s)
                if key is _follow.MISSING:
                    return steps
                steps.append(("key", key, line))
        else:  # Attribute
            if type(p.ctx) is not ast.Load:
                return steps
            call = f.call_of.get(id(p))
            if call is not None:
                if p.attr == "result" and not call.args and not call.keywords:
                    cur = call  # x.result() is x's value: keep following from the call
                    continue
                steps.append(("call", p.attr, line))  # a method call ends the path
                return steps
            steps.append(("attr", p.attr, line))
        cur = p


def problems(f: Any, bound: dict, functions: dict[str, Callable], shapes: dict[str, dict], written: frozenset,
             arrays_grow: bool) -> list[tuple[int, int, int, str]]:
    out: list[tuple[int, int, int, str]] = []
    if "json" in f.binds:
        for parts, call in f.dotted:
            if parts == ("json", "loads") and len(call.args) == 1:
                msg = _json_loads(f, bound, call, functions, shapes, written, arrays_grow)
                if msg:
                    out.append((call.lineno, call.col_offset, 0, msg))
    for node, scope in f.arith:
        msg = _arith(f, bound, node, scope)
        if msg:
            out.append((node.lineno, node.col_offset, 0, msg))
    return out


def _shape_of(f: Any, bound: dict, expr: ast.AST, scope: int | None, functions: dict, shapes: dict,
              written: frozenset, arrays_grow: bool) -> tuple[str, str, dict] | None:
    """(function, label, shape) of ``expr`` when it is an SDK call or a read path from a
    name bound to a result, else None."""
    fn = _sdk_call_name(expr, f, functions)
    if fn is not None:
        shape = shapes.get(fn)
        return (fn, "result", shape) if isinstance(shape, dict) else None
    path = _follow.path_of(expr)
    if path is None:
        return None
    root, steps = path
    b = _follow.source(f, bound, root, expr, scope) if scope is not None else _follow._only(bound, root)
    if b is None:
        return None
    sub = _shapes.follow(b.shape, steps, written=written, arrays_grow=arrays_grow)
    return (b.fn, b.label + _shapes.path_text(steps), sub) if sub is not None else None


def _sdk_call_name(expr: ast.AST, f: Any, functions: dict) -> str | None:
    if type(expr) is ast.Await:
        expr = expr.value
    if type(expr) is ast.Call and type(expr.func) is ast.Name and expr.func.id in functions \
            and expr.func.id not in f.binds:
        return expr.func.id
    return None


def _json_loads(f: Any, bound: dict, call: ast.Call, functions: dict, shapes: dict, written: frozenset,
                arrays_grow: bool) -> str | None:
    found = _shape_of(f, bound, call.args[0], None, functions, shapes, written, arrays_grow)
    if found is None:
        return None
    fn, label, shape = found
    k = shape.get("k")
    if k not in ("object", "array") or shape.get("keys_of") is not None:
        return None
    msg = "%s: json.loads(...) (line %d) needs text, but %s is already a %s (parsed JSON)." % (
        fn, call.lineno, label, "dict" if k == "object" else "list")
    fields = shape.get("fields") if k == "object" else None
    texts = [n for n, v in (fields or {}).items() if isinstance(v, dict) and v.get("k") == "leaf" and v.get("t") == "str"]
    if len(texts) == 1:
        return msg + " Parse its text field: json.loads(%s[%r])." % (label, texts[0])
    return msg + " Use it directly."


def _is_text(f: Any, bound: dict, expr: ast.AST, scope: int) -> Any:
    if type(expr) is not ast.Name:
        return None
    b = _follow.source(f, bound, expr.id, expr, scope)
    if b is None or not isinstance(b.shape, dict) or b.shape.get("k") != "leaf" or b.shape.get("t") != "str":
        return None
    return None if b.shape.get("keys_of") is not None else b


def _is_number(f: Any, expr: ast.AST) -> bool:
    """A numeric constant, or a name every binding of which is a number or arithmetic."""
    if type(expr) is ast.Constant:
        return type(expr.value) in (int, float)
    if type(expr) is not ast.Name:
        return False
    values = f.binds.get(expr.id)
    if not values:
        return False
    numeric = False
    for v in values:
        if type(v) is ast.Constant and type(v.value) in (int, float):
            numeric = True
        elif v == "aug" or type(v) is ast.BinOp:
            continue
        else:
            return False
    return numeric


def _arith(f: Any, bound: dict, node: ast.AST, scope: int) -> str | None:
    if type(node) is ast.AugAssign:
        left, right, op = node.target, node.value, node.op
    else:
        left, right, op = node.left, node.right, node.op  # type: ignore[attr-defined]
    if not isinstance(op, _NUMERIC_OPS):
        return None
    for text, other in ((left, right), (right, left)):
        b = _is_text(f, bound, text, scope)
        if b is None:
            continue
        if type(op) is ast.Add and not _is_number(f, other):
            continue  # text + text joins
        return ("%s: %s is text (str), not a number, so arithmetic with it fails (line %d). Parse the number out "
                "of the text first (e.g. float(re.findall(r'-?[\\d.]+', %s)[-1]))." % (b.fn, b.label, node.lineno,
                                                                                    text.id))  # type: ignore[attr-defined]
    return None


def called_values(f: Any, bound: dict) -> list[tuple[int, int, int, str]]:
    """``fn = hits[0]; fn(path=p)``: a name holding (part of) a result called as if it were
    a function."""
    out: list[tuple[int, int, int, str]] = []
    for form, calls in f.sites.items():
        b = _follow._only(bound, form[0])
        if b is None or not isinstance(b.shape, dict) or b.shape.get("k") not in ("object", "array", "leaf"):
            continue
        what = {"object": "a dict", "array": "a list"}.get(b.shape["k"], "a value")
        for call in calls:
            if not b.sees(f, call.func, b.home):  # (calls are not recorded with their scope)
                continue
            msg = "%s: %s is %s, not a function, so %s(...) fails (line %d)." % (
                b.fn, b.label, what, form[0], call.lineno)
            if b.fn == "search_tools":
                msg += (" search_tools() only describes functions: call the SDK function its ['name'] names "
                        "directly, by that name, as written in its ['signature'].")
            out.append((call.lineno, call.col_offset, 0, msg))
    return out

