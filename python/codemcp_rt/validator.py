"""Pre-flight validation of agent code, before anything runs.

The model's program is parsed once (``ast``) and checked against the SDK it will run
with: syntax, calls to SDK functions that do not exist or are disabled, unknown / missing
/ surplus arguments (read from ``inspect.signature`` of the very functions the program
will call, so the check never drifts from what the model was shown), writes that were
not authorized, and - with learned result shapes - literal field accesses that cannot
exist. Every problem names its line; the report says the code was not executed.

This is a courtesy, never the enforcement: the gateway re-checks every call. So the
validator is conservative by construction - it only flags what is certainly wrong.
Names the program binds anywhere (in any scope), builtins, imports, method calls,
calls through variables, ``*args``/``**kwargs`` spreads, decorators, and programs that
can create names at run time (``globals()``, ``exec``, ``eval``, ``sys.modules`` ...)
are left alone. Literal argument values are checked against the tool's input schema
(argcheck.py); JS-/import-style names (``mcp.everything.echo``) get the SDK name
(jsnames.py). Field checks follow ``x = fn(...)`` bindings that are never rebound, and from
them loop / comprehension variables and re-bindings (follow.py), and stop wherever the
program itself may add keys (stores, update/setdefault, appends to lists it did not
build), names the key elsewhere (``"k" in x``, ``x.get("k")``), or reads it under
``try: ... except KeyError``.

Cost: one ``ast.parse`` (the runner's, shared with the compiler) and one iterative
walk; call sites are checked once per form (callcheck.py), signatures cached per
function object. Stdlib only (plus the sibling ``callcheck``, ``argcheck``, ``follow``,
``jsnames`` and ``shapes`` modules): importable on its own.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any, Callable, Iterable

try:
    from . import callcheck as _callcheck
    from . import follow as _follow
    from . import habits as _habits
    from . import jsnames as _jsnames
    from . import policycheck as _policycheck
    from . import shapes as _shapes
    from . import shapeuse as _shapeuse
except ImportError:  # loaded as a top-level module (tools, embedding experiments)
    import callcheck as _callcheck  # type: ignore[no-redef]
    import follow as _follow  # type: ignore[no-redef]
    import habits as _habits  # type: ignore[no-redef]
    import jsnames as _jsnames  # type: ignore[no-redef]
    import policycheck as _policycheck  # type: ignore[no-redef]
    import shapes as _shapes  # type: ignore[no-redef]
    import shapeuse as _shapeuse  # type: ignore[no-redef]

__all__ = ["validate", "format_report", "syntax_problem", "HEADER", "RUNTIME_NAMES"]

HEADER = "Pre-flight validation failed (code was not executed). Fix these and resend:"

RUNTIME_NAMES = frozenset({"Content", "Pending", "ToolError", "RunInterrupted", "gather", "settle", "resolve", "result",
                           "search_tools", "describe", "help", "read_resource"})
"""Names the runner defines in the program's globals besides the SDK functions."""

STRICT = False
"""Tests set this: an internal error in the validator then raises instead of passing
the program through unvalidated (the production behaviour: never block a run on a bug
of ours)."""

# Operators of JavaScript that are a SyntaxError in Python, and the Python spelling.
_JS_OPERATORS = (("===", "=="), ("!==", "!="), ("&&", "and"), ("||", "or"), ("=>", "lambda x: ..."))
_MAX_REPORTED = 40  # lines in format_report; the rest is counted
_BUILTINS = frozenset(dir(builtins))
# Any of these lets a program create or replace names at run time.
_DYNAMIC_NAMES = frozenset({"globals", "locals", "vars", "exec", "eval", "compile", "__import__", "__builtins__"})
_DYNAMIC_MODULES = frozenset({"builtins", "importlib"})
_SCOPES = frozenset(
    {ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp}
)
_FUNCS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
# The node types _collect does something for besides Call/Attribute/Subscript/Assign (and
# the Name/Constant leaves): every other type only has its children walked.
_HANDLED = _FUNCS | {
    ast.AnnAssign, ast.AugAssign, ast.Try, ast.TryStar, ast.With, ast.AsyncWith, ast.arg, ast.Import,
    ast.ImportFrom, ast.Global, ast.Nonlocal, ast.ExceptHandler, ast.MatchAs, ast.MatchStar, ast.MatchMapping,
    ast.For, ast.AsyncFor, ast.comprehension, ast.Await, ast.BinOp,
}
# Values a derived binding may come from: x, x["k"], x.k, x.result() (see follow.path_of).
_PATH_NODES = (ast.Name, ast.Subscript, ast.Attribute, ast.Call)
_GUARDS = frozenset({"isinstance", "type", "hasattr"})  # a name tested so is not judged by its shape
_KEY_SETTERS = frozenset({"setattr", "setitem"})  # calls of these by name may store any key
_GROW_METHODS = frozenset({"append", "extend", "insert", "__iadd__"})
_KEY_METHODS = frozenset({"update", "setdefault", "__setitem__", "__ior__", "fromkeys"})

_MISSING = _follow.MISSING
_literal_key = _follow.literal_key


# -- the walk ----------------------------------------------------------------------------


class _Facts:
    """Everything one walk over the tree learns; the checks run on it afterwards."""

    def __init__(self) -> None:
        self.binds: dict[str, list[Any]] = {}  # name -> one entry per binding: value node, "aug" or None
        # name -> (node, scope, guarded) for each read of it as ``name[...]`` or ``name.attr``:
        # the only reads where a field path can start (see shapeuse._steps).
        self.loads: dict[str, list[tuple[ast.Name, int, bool]]] = {}
        self.sites: dict[tuple, list[ast.Call]] = {}  # calls of a bare name by form (callcheck)
        self.call_of: dict[int, ast.Call] = {}  # id(Attribute) -> the Call it is the func of
        self.parent: dict[int, ast.AST] = {}  # id(x) -> Subscript/Attribute whose value is x
        self.decorators: set[int] = set()  # id() of decorator expressions
        self.candidates: list[tuple[str, str, ast.stmt, int]] = []  # x = fn(...): (x, fn, stmt, scope)
        self.scope_parent: dict[int, int] = {0: -1}
        self.class_scopes: set[int] = set()
        self.dynamic = False
        self.star_import = False
        self.written: set[Any] = set()  # literal keys / attributes the program stores
        self.key_writes: list[ast.AST | None] = []  # bases of stores with a computed key
        self.grows: list[ast.AST | None] = []  # bases of list growth (append, += ...)
        self.mentioned: set[str] = set()  # string constants used other than as x["k"] reads
        # a.b(...) / a.b.c(...) calls whose base is a bare name: (dotted parts, call), for the
        # JS-style name check (`mcp.everything.echo(...)`).
        self.dotted: list[tuple[tuple[str, ...], ast.Call]] = []
        self.imports: list[ast.stmt] = []  # Import / ImportFrom statements
        # Derived bindings for the shape checks: (kind, name, source expr, node, scope), kind
        # "iter" (for x in <expr> / comprehension) or "alias" (x = <expr>).
        self.derived: list[tuple[str, str, ast.AST, ast.AST, int]] = []
        self.comp_scopes: dict[str, list[int]] = {}  # name -> comprehension scopes binding it
        # def f(a, b): (the FunctionDef, its scope) per function name, for helper parameters
        self.defs: dict[str, tuple[ast.AST, int]] = {}
        self.name_loads: dict[str, int] = {}  # reads of a function's name (calls and others)
        self.isinstance_of: set[str] = set()  # names the program tests with isinstance()
        # For habits.py: awaits (node, scope), `.result` read but not called, `x.then(...)`
        # calls, and arithmetic with a bare name on one side (BinOp / AugAssign).
        self.awaits: list[tuple[ast.Await, int]] = []
        self.uncalled: list[ast.Attribute] = []
        self.result_refs: set[int] = set()  # id() of `x.result` bound to a name or passed on
        self.thens: list[ast.Call] = []
        self.arith: list[tuple[ast.AST, int]] = []


def _bind(f: _Facts, name: str, value: Any = None) -> None:
    lst = f.binds.get(name)
    if lst is None:
        f.binds[name] = [value]
    else:
        lst.append(value)


def _load(f: _Facts, node: ast.Name, scope: int, guarded: bool) -> None:
    """Records ``node`` (a bare name read) as the start of a possible field path."""
    lst = f.loads.get(node.id)
    if lst is None:
        f.loads[node.id] = [(node, scope, guarded)]
    else:
        lst.append((node, scope, guarded))


def _sdk_call_name(value: ast.AST) -> str | None:
    """`fn(...)`, `fn(...).result()` or `await fn(...)` -> "fn" (a bare name), else None."""
    if type(value) is ast.Await:
        value = value.value
    if type(value) is ast.Call and type(value.func) is ast.Attribute:
        if value.func.attr != "result" or value.args or value.keywords:
            return None
        value = value.func.value
    if type(value) is ast.Call and type(value.func) is ast.Name:
        return value.func.id
    return None


def _call_site(f: _Facts, call: ast.Call, form: tuple) -> None:
    """Records ``call``, a call of a bare name, for the call checks (callcheck), under
    its form. Decorators are left out: they are not checked as calls."""
    if id(call) not in f.decorators:
        group = f.sites.get(form)
        if group is None:
            f.sites[form] = [call]
        else:
            group.append(call)


def _key_setter(f: _Facts, call: ast.Call, fid: str) -> None:
    """What a call of setattr / setitem (by name) may store."""
    if fid == "setattr":
        if len(call.args) >= 2:
            key = _literal_key(call.args[1])
            if key is _MISSING:
                f.key_writes.append(None)
            else:
                f.written.add(key)
    else:  # operator.setitem imported by name
        f.key_writes.append(None)


def _plain_form(f: _Facts, call: ast.Call, fid: str) -> tuple | None:
    """For ``fid(1, k="v", n=x)`` - every argument a literal constant or a plain name read,
    the usual SDK call - do what walking the call's children would do (names that make
    the program dynamic, string constants mentioned) and return the call's form (as
    callcheck.form_of): nothing below it needs the walk. Else None (what was done so far
    the walk repeats harmlessly). One pass over the arguments: this runs once per call
    site, and programs with hundreds of call sites are mostly this."""
    if fid in _DYNAMIC_NAMES:
        f.dynamic = True
    Constant, Name = ast.Constant, ast.Name
    args = call.args
    # The leaf test is written out for positional and keyword values alike: one loop over
    # both (values gathered into a list first) made validate() of a 500-call-site program
    # ~10 % slower on /usr/bin/python3 (best of 15: 0.81-0.84 vs 0.73-0.75 ms).
    for v in args:
        t = type(v)
        if t is Constant:
            if type(v.value) is str:
                f.mentioned.add(v.value)
        elif t is Name and type(v.ctx) is ast.Load:
            if v.id in _DYNAMIC_NAMES:
                f.dynamic = True
            f.name_loads[v.id] = f.name_loads.get(v.id, 0) + 1
        else:
            return None
    names = []
    for k in call.keywords:
        arg = k.arg
        if arg is None:
            return None
        names.append(arg)
        v = k.value
        t = type(v)
        if t is Constant:
            if type(v.value) is str:
                f.mentioned.add(v.value)
        elif t is Name and type(v.ctx) is ast.Load:
            if v.id in _DYNAMIC_NAMES:
                f.dynamic = True
            f.name_loads[v.id] = f.name_loads.get(v.id, 0) + 1
        else:
            return None
    return (fid, len(args), tuple(names), False)


def _collect(tree: ast.Module) -> _Facts:
    """One walk over ``tree`` (iterative, not in source order). Name and Constant nodes
    are handled where their parent is, never pushed: they are half of all nodes and
    only ever need a set or dict update."""
    f = _Facts()
    next_scope = 1
    # (node, scope id, guarded): guarded = inside a try body that catches KeyError & co.
    stack: list[tuple[ast.AST, int, bool]] = [(tree, 0, False)]
    pop, push = stack.pop, stack.append
    child_fields, AST = _CHILD_FIELDS, ast.AST
    assign_value: dict[int, Any] = {}  # id(Name target) -> the value bound to it
    read_keys: set[int] = set()  # id() of constants that are the key of a x["k"] read
    Name, Call, Attribute, Subscript, Assign = ast.Name, ast.Call, ast.Attribute, ast.Subscript, ast.Assign
    Load, Constant, dynamic_names, mentioned, binds = ast.Load, ast.Constant, _DYNAMIC_NAMES, f.mentioned, f.binds
    sites = f.sites
    name_loads = f.name_loads
    while stack:
        node, scope, guarded = pop()
        t = type(node)
        inner = scope
        if t is Call:
            func = node.func
            ft = type(func)
            if ft is Name:
                fid = func.id
                if fid in _GUARDS and node.args and type(node.args[0]) is Name:
                    f.isinstance_of.add(node.args[0].id)
                if fid in _KEY_SETTERS:
                    _key_setter(f, node, fid)
                else:
                    form = _plain_form(f, node, fid)
                    if form is not None:
                        _call_site(f, node, form)
                        name_loads[fid] = name_loads.get(fid, 0) + 1  # its children are not walked
                        continue
                _call_site(f, node, _callcheck.form_of(node, fid))
            elif ft is Attribute:
                f.call_of[id(func)] = node
                _method_call(f, node, func)
            for a in node.args:
                if type(a) is Attribute and a.attr == "result":
                    f.result_refs.add(id(a))  # callback(p.result): passed on, maybe called there
        elif t is Attribute:
            value = node.value
            f.parent[id(value)] = node
            if type(value) is Name and type(value.ctx) is Load:
                _load(f, value, scope, guarded)
            if type(node.ctx) is not Load:
                f.written.add(node.attr)
            elif node.attr == "result" and id(node) not in f.call_of:
                f.uncalled.append(node)  # p.result, not p.result()
            attr = node.attr
            if attr == "__dict__" or (attr == "modules" and type(value) is Name and value.id == "sys"):
                f.dynamic = True
        elif t is Subscript:
            value = node.value
            f.parent[id(value)] = node
            if type(value) is Name and type(value.ctx) is Load:
                _load(f, value, scope, guarded)
            if type(node.ctx) is Load:
                read_keys.add(id(node.slice))
            else:
                key = _literal_key(node.slice)
                if key is _MISSING:
                    f.key_writes.append(value)
                else:
                    f.written.add(key)
        elif t is Assign:
            value = node.value
            targets = node.targets
            if type(value) is Attribute and value.attr == "result":
                f.result_refs.add(id(value))  # f = p.result: a method kept to be called later
            if len(targets) == 1 and type(targets[0]) is Name:
                x = targets[0].id
                if type(value) is Call and type(value.func) is Name:
                    fid = value.func.id
                    f.candidates.append((x, fid, node, scope))
                    form = None if fid in _KEY_SETTERS else _plain_form(f, value, fid)
                    if form is not None:  # x = fn(1, k="v"): both children are done here
                        name_loads[fid] = name_loads.get(fid, 0) + 1
                        group = sites.get(form)  # (a value is never a decorator)
                        if group is None:
                            sites[form] = [value]
                        else:
                            group.append(value)
                        group = binds.get(x)
                        if group is None:
                            binds[x] = [value]
                        else:
                            group.append(value)
                        continue
                else:
                    fn = _sdk_call_name(value)
                    if fn is not None:
                        f.candidates.append((x, fn, node, scope))
                    elif type(value) in _PATH_NODES:
                        f.derived.append(("alias", x, value, node, scope))
                    else:
                        kept = _follow.filtered(value)
                        if kept is not None:  # x = [e for e in r['k'] if ...]: a part of r['k']
                            f.derived.append(("alias", x, kept, node, scope))
            for target in targets:
                if type(target) is Name:
                    assign_value[id(target)] = value
        elif t not in _HANDLED:
            pass  # Expr, BinOp, keyword, If, For ...: only their children matter
        elif t is ast.For or t is ast.AsyncFor or t is ast.comprehension:
            if type(node.target) is Name and type(node.iter) in _PATH_NODES:
                f.derived.append(("comp" if t is ast.comprehension else "iter", node.target.id, node.iter, node, scope))
            if t is ast.comprehension:
                for n in ast.walk(node.target):
                    if type(n) is Name:
                        f.comp_scopes.setdefault(n.id, []).append(scope)
        elif t is ast.Await:
            f.awaits.append((node, scope))
        elif t is ast.BinOp:
            if type(node.left) is Name or type(node.right) is Name:
                f.arith.append((node, scope))
        elif t is ast.AnnAssign:
            if type(node.target) is Name and node.value is not None:
                assign_value[id(node.target)] = node.value
                fn = _sdk_call_name(node.value)
                if fn is not None:
                    f.candidates.append((node.target.id, fn, node, scope))
        elif t is ast.AugAssign:
            target = node.target
            op = type(node.op)
            if type(target) is Name:
                assign_value[id(target)] = "aug"
                if type(node.value) is Name:
                    f.arith.append((node, scope))
            if _literal_key(node.value) is not _MISSING or type(node.value) is ast.JoinedStr:
                pass  # n += 1, s += "x", flags |= 4: no container changes
            elif op is ast.BitOr:  # d |= {...} adds keys in place
                f.key_writes.append(target)
            elif op is ast.Add:  # lst += [...] grows a list in place
                f.grows.append(target)
        elif t is ast.Try or t is ast.TryStar:
            body_guarded = guarded or any(_catches_lookup(h.type) for h in node.handlers)
            for child in node.body:
                push((child, scope, body_guarded))
            for part in (node.handlers, node.orelse, node.finalbody):
                for child in part:
                    push((child, scope, guarded))
            continue
        elif t is ast.With or t is ast.AsyncWith:
            if any(_suppresses_lookup(item.context_expr) for item in node.items):
                for item in node.items:
                    push((item, scope, guarded))
                for child in node.body:
                    push((child, scope, True))
                continue
        elif t in _FUNCS:
            _bind(f, node.name)
            if t is not ast.ClassDef:
                f.defs[node.name] = (node, next_scope)  # the scope _SCOPES gives it below
            for d in node.decorator_list:
                f.decorators.add(id(d))
            if t is ast.ClassDef:
                inner = next_scope
                next_scope += 1
                f.scope_parent[inner] = scope
                f.class_scopes.add(inner)
        elif t is ast.arg:
            _bind(f, node.arg)
        elif t is ast.Import or t is ast.ImportFrom:
            f.imports.append(node)
            if t is ast.ImportFrom and node.module and node.module.split(".")[0] in _DYNAMIC_MODULES:
                f.dynamic = True
            for alias in node.names:
                if alias.name == "*":
                    f.star_import = True
                    continue
                root = alias.name.split(".")[0]
                if t is ast.Import and root in _DYNAMIC_MODULES:
                    f.dynamic = True
                _bind(f, alias.asname or (root if t is ast.Import else alias.name))
        elif t is ast.Global or t is ast.Nonlocal:
            for name in node.names:
                _bind(f, name)
        elif t is ast.ExceptHandler:
            if node.name:
                _bind(f, node.name)
        elif t is ast.MatchAs or t is ast.MatchStar:
            if node.name:
                _bind(f, node.name)
        elif t is ast.MatchMapping:
            if node.rest:
                _bind(f, node.rest)
        if t in _SCOPES:
            inner = next_scope
            next_scope += 1
            f.scope_parent[inner] = scope
        fields = child_fields.get(t)
        if fields is None:
            fields = child_fields[t] = _child_fields(t)
        for name in fields:
            v = getattr(node, name, None)
            for child in v if type(v) is list else (v,):
                ct = type(child)
                if ct is Name:
                    # A read matters only for the names that make a program dynamic (the
                    # reads where a field path starts are taken by their Subscript/Attribute).
                    if type(child.ctx) is Load:
                        if child.id in dynamic_names:
                            f.dynamic = True
                        name_loads[child.id] = name_loads.get(child.id, 0) + 1
                    else:
                        _bind(f, child.id, assign_value.get(id(child)))
                elif ct is Constant:
                    if type(child.value) is str and id(child) not in read_keys:
                        mentioned.add(child.value)
                elif isinstance(child, AST):
                    push((child, inner, guarded))
    return f


# Fields never worth walking into: names and flags, and the context/operator singletons
# (Load, Store, Add, ...) that make up a good share of all nodes.
_SKIP_FIELDS = frozenset(
    {"ctx", "op", "ops", "id", "attr", "name", "arg", "asname", "module", "level", "type_comment",
     "kind", "is_async", "conversion", "simple", "kwd_attrs", "names"}
)
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(t: type) -> tuple[str, ...]:
    """The fields of node type ``t`` that can hold child nodes we need to visit ("names"
    is skipped: Import/ImportFrom/Global/Nonlocal read it themselves)."""
    return tuple(f for f in t._fields if f not in _SKIP_FIELDS)  # type: ignore[attr-defined]


# Exceptions that mean "this key/attribute may be missing" when a try catches them.
_LOOKUP_ERRORS = frozenset({"KeyError", "LookupError", "AttributeError", "Exception", "BaseException", "IndexError"})


def _catches_lookup(typ: ast.AST | None) -> bool:
    """True if an except clause of this type would catch a missing key."""
    if typ is None:
        return True  # bare except
    if type(typ) is ast.Tuple:
        return any(_catches_lookup(e) for e in typ.elts)
    if type(typ) is ast.Name:
        return typ.id in _LOOKUP_ERRORS
    if type(typ) is ast.Attribute:
        return typ.attr in _LOOKUP_ERRORS
    return True  # computed: assume it might


def _suppresses_lookup(expr: ast.AST) -> bool:
    """`with suppress(KeyError):` (contextlib) guards its body like a try."""
    if type(expr) is not ast.Call:
        return False
    func = expr.func
    name = func.id if type(func) is ast.Name else func.attr if type(func) is ast.Attribute else None
    return name == "suppress" and any(_catches_lookup(a) for a in expr.args)


def _method_call(f: _Facts, node: ast.Call, func: ast.Attribute) -> None:
    """Record what a method call may do to the containers it touches."""
    m = func.attr
    base = func.value
    tb = type(base)
    if tb is ast.Name:
        f.dotted.append(((base.id, m), node))
    elif tb is ast.Attribute and type(base.value) is ast.Name:
        f.dotted.append(((base.value.id, base.attr, m), node))
    if m in ("then", "catch"):
        f.thens.append(node)
    if m in _GROW_METHODS:
        f.grows.append(base)
    elif m in _KEY_METHODS:
        if m == "update" and not node.args:
            f.written.update(k.arg for k in node.keywords if k.arg)
            if any(k.arg is None for k in node.keywords):
                f.key_writes.append(base)
            return
        if m in ("update", "setdefault") and len(node.args) >= 1:
            arg = node.args[0]
            if m == "setdefault":
                key = _literal_key(arg)
                if key is not _MISSING:
                    f.written.add(key)
                    return
            elif type(arg) is ast.Dict and all(k is not None for k in arg.keys):
                keys = [_literal_key(k) for k in arg.keys]  # type: ignore[arg-type]
                if _MISSING not in keys:
                    f.written.update(keys)
                    f.written.update(k.arg for k in node.keywords if k.arg)
                    return
        f.key_writes.append(base)
    elif m == "setitem":  # operator.setitem(d, k, v)
        f.key_writes.append(None)


# -- the checks --------------------------------------------------------------------------


def validate(
    code: str,
    functions: dict[str, Callable],
    meta: dict[str, dict],
    *,
    shapes: dict[str, dict] | None = None,
    enforce_mutations: bool = False,
    allow_mutations: Iterable[str] = (),
    disabled: Iterable[str] = (),
    dry_run: bool = False,
    known_names: Iterable[str] = (),
    tree: ast.Module | None = None,
    policy: list | None = None,
) -> list[str]:
    """Check ``code`` before it runs; return one line per problem ([] = nothing found).

    ``functions``: the SDK functions by name (what the program's globals will hold);
    ``meta``: the SDK's ``__codemcp_meta__`` ({fn: {"server", "tool", "mutation"}});
    ``shapes``: learned result shapes ({fn: shape}, see shapes.py), None = no field checks;
    ``enforce_mutations``/``allow_mutations``/``dry_run``: the run's mutation settings (a
    write not in allow_mutations is reported when enforcing, unless dry_run);
    ``disabled``: SDK names of tools disabled in the gateway's configuration;
    ``known_names``: further names the runner defines in the program's globals (e.g.
    what a session kept from earlier runs);
    ``tree``: ``ast.parse(code)`` if the caller already has it (saves the parse, which
    is most of the cost). It is only read, but must not have been modified;
    ``policy``: the gateway's rules for this run's principal (policycheck.py).
    """
    if tree is None:
        try:
            tree = ast.parse(code, "<code>", "exec")
        except SyntaxError as exc:
            return [syntax_problem(exc, code)]
        except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
            return ["SyntaxError: %s (line 1, col 1)." % exc]
    try:
        return _check(tree, functions, meta, shapes, enforce_mutations, allow_mutations, disabled, dry_run, known_names,
                      policy)
    except Exception:
        if STRICT:
            raise
        return []  # our bug must not block the run; the gateway still enforces everything


def syntax_problem(exc: SyntaxError, code: str = "") -> str:
    """The problem line for a SyntaxError: message, position, the offending line and a
    caret under the column."""
    line = exc.lineno or 1
    col = exc.offset or 1
    msg = "SyntaxError: %s (line %d, col %d)." % (exc.msg or "invalid syntax", line, col)
    text = exc.text
    if text is None and code:
        lines = code.splitlines()
        text = lines[line - 1] if 0 < line <= len(lines) else None
    if text is None:
        return msg
    lines = text.splitlines()
    text = (lines[0] if lines else "").expandtabs(1)  # a tab is one column in exc.offset
    js = [(js, py) for js, py in _JS_OPERATORS if js in text]
    if js:
        msg += " %s." % "; ".join("`%s` is JavaScript: Python writes `%s`" % pair for pair in js)
    if len(text) > 160:  # keep the report small; centre the window on the column
        start = max(0, min(col - 80, len(text) - 160))
        text, col = text[start : start + 160], col - start
    return "%s\n    %s\n    %s^" % (msg, text, " " * max(0, col - 1))


def format_report(problems: Iterable[str]) -> str:
    """The text returned to the model: the header, then "- problem" per line (continuation
    lines indented), at most 40 problems plus a count of the rest."""
    problems = list(problems)
    out = [HEADER]
    for p in problems[:_MAX_REPORTED]:
        out.append("- " + p.replace("\n", "\n  "))
    if len(problems) > _MAX_REPORTED:
        out.append("- … and %d more problem(s) of the same kinds." % (len(problems) - _MAX_REPORTED))
    return "\n".join(out)


def _check(
    tree: ast.Module,
    functions: dict[str, Callable],
    meta: dict[str, dict],
    shapes: dict[str, dict] | None,
    enforce_mutations: bool,
    allow_mutations: Iterable[str],
    disabled: Iterable[str],
    dry_run: bool,
    known_names: Iterable[str],
    policy: list | None = None,
) -> list[str]:
    f = _collect(tree)
    if f.dynamic:
        return []  # names may be created at run time: nothing here is certain
    problems = _callcheck.call_problems(
        f.sites,
        f.binds,
        functions,
        meta,
        _BUILTINS | RUNTIME_NAMES | frozenset(known_names),
        f.star_import,
        frozenset(disabled),
        enforce_mutations and not dry_run,
        frozenset(allow_mutations),
    )
    if policy:
        problems += _policycheck.problems(f.sites, f.binds, meta, policy, dry_run)

    known = _BUILTINS | RUNTIME_NAMES | frozenset(known_names)
    if f.dotted or f.imports:
        problems += _jsnames.problems(f, functions, meta, known)
    problems += _habits.problems(f, tree, functions, known)

    if shapes and dry_run:
        # Under dry_run a write returns the gateway's stub, not the tool's real result: its
        # learned shape says nothing about what the program will read.
        shapes = {fn: s for fn, s in shapes.items() if not (meta.get(fn) or {}).get("mutation")}
    if shapes:
        problems += _shapeuse.shape_problems(f, functions, shapes)

    problems.sort(key=lambda p: (p[0], p[1], p[2]))  # the walk is not in source order
    out: list[str] = []
    seen: set[str] = set()
    for _, _, _, msg in problems:
        if msg not in seen:
            seen.add(msg)
            out.append(msg)
    return out
