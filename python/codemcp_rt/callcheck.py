"""The validator's checks of SDK call sites: unknown or disabled functions, unknown /
missing / surplus arguments, unauthorized writes.

Split from validator.py, which walks the program and hands over its call sites already
grouped by *form*: (function name, number of positional arguments, keyword names,
whether a ``*args`` spread is among them). Everything a verdict depends on besides the
site's line is in that key, so each distinct form is checked once and identical sites
(a program with 500 ``p = fn(a=..., b=...)`` lines has one form) cost a dict lookup
each. The grouping lives for one validate() call only, so it can never outlive the SDK
or the run settings it was computed with; the only state kept across calls is the
signature cache, keyed weakly by the function object itself (a reloaded SDK has new
function objects).

Stdlib only: importable on its own.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import operator
import weakref
from typing import Any, Callable

try:
    from . import argcheck as _argcheck
    from . import meaning as _meaning
except ImportError:  # loaded as a top-level module
    import argcheck as _argcheck  # type: ignore[no-redef]
    import meaning as _meaning  # type: ignore[no-redef]

__all__ = ["call_problems", "form_of"]

Form = tuple  # (name, positional count, keyword names (None for **), has *spread)


def form_of(call: ast.Call, name: str, _arg=operator.attrgetter("arg"), _Starred=ast.Starred) -> Form:
    """The key ``call`` (a call of the bare name ``name``) is grouped by. (Paid once per
    call site, hence the plain loop and map(): no generator, no comprehension.)"""
    args = call.args
    star = False
    for a in args:
        if type(a) is _Starred:
            star = True
            break
    return (name, len(args), tuple(map(_arg, call.keywords)), star)


def call_problems(
    sites: dict[Form, list[ast.Call]],
    bound: dict[str, Any],
    functions: dict[str, Callable],
    meta: dict[str, dict],
    known: frozenset,
    star_import: bool,
    disabled: frozenset,
    check_writes: bool,
    allowed: frozenset,
) -> list[tuple[int, int, int, str]]:
    """(line, col, rank, message) per problem found at the call sites of bare names.

    ``sites``: call nodes by form (decorators left out: they run at definition time);
    ``bound``: names the program binds anywhere (their calls are the program's own);
    ``known``: builtins and names the runner defines; ``star_import``: the program has
    ``from x import *`` (any unknown name may come from there). ``rank`` orders the
    problems of one site: the write problem (0) before argument problems (1)."""
    out: list[tuple[int, int, int, str]] = []
    sdk = _SdkIndex.of(functions, meta)
    first_write: dict[str, ast.Call] = {}  # write tool -> its first call site
    for form, calls in sites.items():
        name = form[0]
        if name in bound:
            continue
        if name in disabled:
            for c in calls:
                msg = "`%s` is disabled in this gateway's configuration (line %d)." % (name, c.lineno)
                out.append((c.lineno, c.col_offset, 1, msg))
            continue
        fn = functions.get(name)
        if fn is None:
            if name in known or star_import:
                continue
            hint = sdk.unknown(name)
            if hint is not None:
                for c in calls:
                    msg = "`%s` is not a known SDK function (line %d).%s" % (name, c.lineno, hint)
                    out.append((c.lineno, c.col_offset, 1, msg))
            continue
        if check_writes:
            info = meta.get(name)
            if isinstance(info, dict) and info.get("mutation") and not _authorized(name, info, allowed):
                first = min(calls, key=_position)
                other = first_write.get(name)
                if other is None or _position(first) < _position(other):
                    first_write[name] = first
        sig = _signature(fn) if name in sdk.names else None
        if sig is None:
            continue
        if _argument_problems(name, sig, calls[0]):
            for c in calls:
                out.extend((c.lineno, c.col_offset, 1, msg) for msg in _argument_problems(name, sig, c))
            continue
        keys = sdk.input_keys(name)
        if keys is not None:  # literal values against the input schema, site by site
            schema, fast = keys[1], keys[2]
            positional = sig.positional
            empty = frozenset()
            oks = [fast.get(k, empty) for k in form[2]]  # aligned with every site's keywords
            for c in calls:
                # The usual site passes constants whose type alone settles the check, or
                # plain names: decided here without building anything.
                for k, ok in zip(c.keywords, oks):
                    v = k.value
                    tv = type(v)
                    if tv is Constant:
                        if type(v.value) in ok:
                            continue
                    elif tv is Name:
                        continue
                    break
                else:
                    for i, v in enumerate(c.args):
                        tv = type(v)
                        if tv is Constant:
                            ok = fast.get(positional[i]) if i < len(positional) else None
                            if ok is not None and type(v.value) in ok:
                                continue
                        elif tv is Name:
                            continue
                        break
                    else:
                        continue
                for msg in _literal_problems(name, sig, keys[0], schema, c):
                    out.append((c.lineno, c.col_offset, 1, msg))
    for name, c in first_write.items():
        out.append((c.lineno, c.col_offset, 0, _write_problem(name, c.lineno)))
    return out


Constant, Name = ast.Constant, ast.Name


def _position(call: ast.Call) -> tuple[int, int]:
    return (call.lineno, call.col_offset)


# -- signatures ------------------------------------------------------------------------


class _Sig:
    """What the argument checks need from one SDK function's signature."""

    __slots__ = ("positional", "keywords", "required", "var_pos", "var_kw", "valid")

    def __init__(self, sig: inspect.Signature) -> None:
        P = inspect.Parameter
        self.positional: list[str] = []  # names that can be filled by position, in order
        self.keywords: set[str] = set()  # names that can be passed by keyword
        self.required: list[str] = []
        self.var_pos = self.var_kw = False
        valid: list[str] = []
        for p in sig.parameters.values():
            if p.kind is P.VAR_POSITIONAL:
                self.var_pos = True
                continue
            if p.kind is P.VAR_KEYWORD:
                self.var_kw = True
                continue
            if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD):
                self.positional.append(p.name)
            if p.kind is not P.POSITIONAL_ONLY:
                self.keywords.add(p.name)
                valid.append(p.name)
            if p.default is P.empty:
                self.required.append(p.name)
        if "timeout_ms" not in self.keywords:  # every SDK call accepts it (sdkgen)
            self.keywords.add("timeout_ms")
            valid.append("timeout_ms")
        self.valid = valid


_SIG_CACHE: "weakref.WeakKeyDictionary[Any, _Sig | None]" = weakref.WeakKeyDictionary()


def _signature(fn: Callable) -> _Sig | None:
    try:
        return _SIG_CACHE[fn]
    except KeyError:
        pass
    except TypeError:  # not weak-referenceable: no cache, still correct
        return _make_sig(fn)
    info = _make_sig(fn)
    _SIG_CACHE[fn] = info
    return info


def _make_sig(fn: Callable) -> _Sig | None:
    try:
        return _Sig(inspect.signature(fn))
    except (TypeError, ValueError):
        return None


# -- the checks --------------------------------------------------------------------------


def _authorized(name: str, info: dict, allowed: frozenset) -> bool:
    """Whether allow_mutations names this write. The SDK name is the documented form;
    "server/tool", "server.tool", "server/*" and "*" are accepted too, so the courtesy
    check is never stricter than the gateway, which decides for real."""
    if name in allowed or "*" in allowed:
        return True
    server, tool = info.get("server"), info.get("tool")
    if not isinstance(server, str) or not isinstance(tool, str):
        return False
    forms = (server + "/" + tool, server + "." + tool, server + ":" + tool, server + "/*", server + ".*", server)
    return any(f in allowed for f in forms)


def _write_problem(name: str, line: int) -> str:
    return (
        '%s is a write tool and was not authorized (line %d). Re-send with "allow_mutations": ["%s"], '
        'or preview it with "dry_run": true.' % (name, line, name)
    )


def _literal_problems(name: str, sig: _Sig, keys: dict[str, str], schema: dict, call: ast.Call) -> list[str]:
    """What the literal argument values of one call site get wrong against the tool's
    input schema (argcheck.py). Values that are plain names cost one type test each."""
    props = schema["properties"]
    required = schema.get("required")
    if not isinstance(required, list):
        required = ()
    if len(call.args) == 1 and type(call.args[0]) is ast.Dict:
        as_keywords = _dict_as_arguments(name, sig, call)
        if as_keywords is not None:
            return [as_keywords]
    out: list[str] = []
    pairs: list[tuple[str, ast.AST]] = []
    for i, a in enumerate(call.args):
        if i < len(sig.positional):
            pairs.append((sig.positional[i], a))
    for k in call.keywords:
        if k.arg is not None:
            pairs.append((k.arg, k.value))
    Name = ast.Name
    for pname, node in pairs:
        if type(node) is Name:
            continue  # computed: never judged
        key = keys.get(pname)
        if key is None:
            continue
        value = _argcheck.literal(node)
        if value is _argcheck.UNKNOWN:
            continue
        if value is None and key not in required:
            continue  # None means "not given": the SDK leaves the key out
        for problem in _argcheck.check_value(value, props[key], schema, pname):
            out.append("%s (line %d): %s" % (name, call.lineno, problem))
    return out


def _dict_as_arguments(name: str, sig: _Sig, call: ast.Call) -> str | None:
    """``fn({"a": 1, "b": 2})``: the JS/REST habit of one options object. Reported when
    the dict's keys are the function's own parameters."""
    if len(call.args) != 1 or call.keywords or type(call.args[0]) is not ast.Dict:
        return None
    d = call.args[0]
    keys = []
    for k in d.keys:
        if k is None or type(k) is not ast.Constant or type(k.value) is not str:
            return None
        keys.append(k.value)
    if not keys or not any(k in sig.keywords for k in keys):
        return None
    shown = []
    for k, v in zip(keys, d.values):
        try:
            text = ast.unparse(v)
        except Exception:
            text = "…"
        shown.append("%s=%s" % (k, text if len(text) <= 30 else "…"))
    return "%s takes keyword arguments, not one dict (line %d): pass arguments as keywords: %s(%s)." % (
        name, call.lineno, name, ", ".join(shown))


def _argument_problems(name: str, sig: _Sig, call: ast.Call) -> list[str]:
    """The argument problems of one call site. Reads only what its form holds (plus the
    line for the messages)."""
    line = call.lineno
    out: list[str] = []
    if len(call.args) == 1 and type(call.args[0]) is ast.Dict:
        as_keywords = _dict_as_arguments(name, sig, call)
        if as_keywords is not None:
            return [as_keywords]
    star = any(type(a) is ast.Starred for a in call.args)
    dstar = any(k.arg is None for k in call.keywords)
    given = [k.arg for k in call.keywords if k.arg is not None]
    suggested: set[str] = set()  # a typo's fix is not also reported as missing
    if not sig.var_kw:
        for k in given:
            if k not in sig.keywords:
                close = difflib.get_close_matches(k, sig.valid, n=1, cutoff=0.6)
                if close:
                    suggested.add(close[0])
                    hint = "Did you mean `%s`?" % close[0]
                else:
                    hint = "Valid arguments: %s." % (", ".join(sig.valid) or "none")
                out.append("unknown argument `%s` for %s (line %d). %s" % (k, name, line, hint))
    if star:
        return out
    npos = len(call.args)
    if npos > len(sig.positional) and not sig.var_pos:
        out.append(
            "%s takes %d positional argument(s) but %d were given (line %d)."
            % (name, len(sig.positional), npos, line)
        )
        return out
    filled = set(sig.positional[:npos])
    for k in given:
        if k in filled and k in sig.keywords:
            out.append("%s got multiple values for argument `%s` (line %d)." % (name, k, line))
    if not dstar:
        missing = [p for p in sig.required if p not in filled and p not in given and p not in suggested]
        if missing:
            out.append(
                "%s: missing required argument(s) %s (line %d)." % (name, ", ".join("`%s`" % m for m in missing), line)
            )
    return out


class _SdkIndex:
    """Lookups over the SDK's names for the unknown-function check."""

    _last: "tuple[Any, Any, _SdkIndex, tuple[int, int]] | None" = None

    @classmethod
    def of(cls, functions: dict[str, Callable], meta: dict[str, dict]) -> "_SdkIndex":
        """The index for these dicts, reused while the runner passes the same SDK
        snapshot (its dicts are never modified after loading)."""
        last = cls._last
        key = (len(functions), len(meta) if meta else 0)
        if last is not None and last[0] is functions and last[1] is meta and last[3] == key:
            return last[2]
        index = cls(functions, meta)
        cls._last = (functions, meta, index, key)
        return index

    def __init__(self, functions: dict[str, Callable], meta: dict[str, dict]) -> None:
        names = [n for n in functions if n in meta] if meta else [n for n in functions if not n.startswith("_")]
        self.names = frozenset(names)
        self.sorted = sorted(names)
        self.meta = meta
        self.functions = functions
        self._inputs: dict[str, tuple[dict[str, str], dict, dict[str, frozenset]] | None] = {}
        self.prefixes: dict[str, list[str]] = {}  # "memory_" -> its functions
        self.by_tool: dict[str, list[str]] = {}  # "create_entities" -> ["memory_create_entities"]
        for n in self.sorted:
            info = meta.get(n) if meta else None
            server = info.get("server") if isinstance(info, dict) else None
            if isinstance(server, str) and server:
                prefix = _sanitize(server) + "_"
                if n.startswith(prefix):
                    self.prefixes.setdefault(prefix, []).append(n)
                    self.by_tool.setdefault(n[len(prefix) :], []).append(n)

    def input_keys(self, name: str) -> tuple[dict[str, str], dict, dict[str, frozenset]] | None:
        """(parameter name -> schema key, the input schema, parameter name -> the Python
        types of a constant that always pass (argcheck.fast_types)) of an SDK function whose
        input schema came with the SDK, else None. Computed once per SDK snapshot."""
        try:
            return self._inputs[name]
        except KeyError:
            pass
        info = self.meta.get(name) if self.meta else None
        schema = info.get("input") if isinstance(info, dict) else None
        entry = None
        if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
            keys = _argcheck.param_keys(schema)
            if keys:
                props = schema["properties"]
                fast = {}
                for pname, key in keys.items():
                    ok = _argcheck.fast_types(props[key], key in (schema.get("required") or ()))
                    if ok:
                        fast[pname] = ok
                entry = (keys, schema, fast)
        self._inputs[name] = entry
        return entry

    def dotted(self, parts: tuple[str, ...], module: bool = False) -> str | None:
        """The hint for ``<server>.<tool>`` written as attributes or a module path: None
        when ``parts`` do not name a server (or an SDK function), else the sentence naming
        the SDK function to call. ``module``: parts name only the server (import x)."""
        if not parts:
            return None
        if len(parts) == 1 and parts[0] in self.names and not module:
            return " Call `%s(...)` directly." % parts[0]
        fns = self.prefixes.get(_sanitize(parts[0]) + "_")
        if fns is None:
            return None
        if module or len(parts) == 1:
            shown = ", ".join(fns[:8]) + (", …" if len(fns) > 8 else "")
            return " Call them directly, e.g. %s." % shown
        prefix = _sanitize(parts[0]) + "_"
        want = _normal(parts[1])
        for fn in fns:
            if _normal(fn[len(prefix):]) == want:
                return " Call `%s(...)`." % fn
        tools = {fn[len(prefix):]: fn for fn in fns}
        close = difflib.get_close_matches(parts[1], list(tools), n=1, cutoff=0.6)
        if close:
            return " Did you mean `%s(...)`?" % tools[close[0]]
        shown = ", ".join(fns[:10]) + (", …" if len(fns) > 10 else "")
        return " Functions of that server: %s." % shown

    def unknown(self, name: str) -> str | None:
        """None if ``name`` does not look like an SDK function, else the hint to append
        (possibly empty)."""
        server_fns: list[str] | None = None
        server = None
        cands: list[str] = []
        for prefix, fns in self.prefixes.items():
            if name.startswith(prefix):
                server_fns = fns
                info = self.meta.get(fns[0]) if self.meta else None
                server = info.get("server") if isinstance(info, dict) else None
                cands += self.by_tool.get(name[len(prefix) :], ())  # right tool, wrong server
                break
        cands += self.by_tool.get(name, ())  # the server prefix was left out
        if not cands and server_fns is not None:
            # A guessed verb: the function with that meaning (the discovery search), not
            # the closest spelling, which is often the opposite operation.
            cands = _meaning.suggest(name, server, self.functions, self.meta)
        cands += difflib.get_close_matches(name, self.sorted, n=1, cutoff=0.8)
        if server_fns is None and not cands:
            return None
        if not cands:
            cands = difflib.get_close_matches(name, server_fns or self.sorted, n=1, cutoff=0.6)
        # Spelling alone never suggests a destructive tool, nor a write for a read.
        cands = [c for c in dict.fromkeys(cands) if _meaning.allowed(name, c, self.meta)][:2]
        if cands:
            return " Did you mean %s?" % " or ".join("`%s`" % c for c in cands)
        if server_fns:
            shown = ", ".join(server_fns[:10]) + (", …" if len(server_fns) > 10 else "")
            return " Functions of that server: %s." % shown
        return ""


def _normal(name: str) -> str:
    """A tool name without case and separators: getSum, get_sum, get-sum -> getsum."""
    return "".join(c for c in name.lower() if c.isalnum())


def _sanitize(server: str) -> str:
    """sdkgen's server-name sanitizer: ASCII letters, digits and _ kept, others -> _,
    leading digit -> _ prefix."""
    out = "".join(c if (c.isascii() and (c.isalnum() or c == "_")) else "_" for c in server)
    return "_" + out if out[:1].isdigit() else out
