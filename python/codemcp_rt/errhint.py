"""A hint under a KeyError / AttributeError / TypeError / IndexError that a program got
from reading an SDK result: which tool's result, the path, what is there instead.

    KeyError: 'nme'
    Hint: memory_read_graph's result['entities'][0] has no key 'nme'; its keys: name,
    entityType, observations.

Only the line that failed is looked at (re-parsed from the program's source); only
read paths from a plain name with literal keys are followed (``r['a'][0].b``), on the
values the frame holds when the error escaped, and never anything that runs code (no
calls, no properties: dict keys and list indexes only). Anything unclear gives no hint.
"""

from __future__ import annotations

import ast
import difflib
import re
from typing import Any

__all__ = ["hint"]

_MAX_NODES = 20000  # values searched for where a plain dict came from
_MAX_KEYS = 15
_NOKEY = object()


def hint(exc: BaseException, frame: Any, lines: list[str], lineno: int) -> str | None:
    """The hint line for ``exc`` raised on ``lines[lineno - 1]`` in ``frame``, or None."""
    try:
        if isinstance(exc, ZeroDivisionError):
            return _zero_hint(frame, lines, lineno)
        if isinstance(exc, KeyError) and exc.args and type(exc.args[0]) is str:
            named = _name_hint(exc.args[0], lines, lineno)
            if named:
                return named
        return _hint(exc, frame, lines, lineno)
    except Exception:
        return None  # a hint is a courtesy


def _name_hint(key: str, lines: list[str], lineno: int) -> str | None:
    """``globals()['memory_' + verb]`` failed: the SDK function with that meaning."""
    if not (0 < lineno <= len(lines)) or "globals()" not in lines[lineno - 1] and "vars()" not in lines[lineno - 1]:
        return None
    from codemcp_rt import meaning, sdk

    snap = sdk.current()
    server = next((str(i.get("server")) for fn, i in snap.meta.items()
                   if isinstance(i, dict) and i.get("server") and key.startswith(fn[: len(fn) - len(str(i.get("tool")))])),
                  None)
    cands = difflib.get_close_matches(key, list(snap.functions), n=1, cutoff=0.8)
    cands += meaning.suggest(key, server, snap.functions, snap.meta)
    cands = [c for c in dict.fromkeys(cands) if meaning.allowed(key, c, snap.meta)][:2]
    if server is None and not cands:
        return None
    text = "Hint: %r is not an SDK function (the name was computed at run time)." % key
    if cands:
        text += " Did you mean %s?" % " or ".join("`%s`" % c for c in cands)
    return text


def _zero_hint(frame: Any, lines: list[str], lineno: int) -> str | None:
    """A division by ``len(x)`` / ``x`` that is empty: say so, and which SDK call's
    result it came from (followed through the program's assignments) had no matches."""
    from codemcp_rt import sdk

    tree = _parse_line(lines[lineno - 1]) if 0 < lineno <= len(lines) else None
    if tree is None:
        return None
    scope = dict(frame.f_globals)
    scope.update(frame.f_locals)
    name = None
    for node in ast.walk(tree):
        if type(node) is ast.BinOp and type(node.op) in (ast.Div, ast.FloorDiv, ast.Mod):
            r = node.right
            if type(r) is ast.Call and type(r.func) is ast.Name and r.func.id == "len" and len(r.args) == 1:
                r = r.args[0]
            if type(r) is ast.Name and r.id in scope:
                v = scope[r.id]
                if (type(v) in (list, dict, tuple, str, set) and not v) or v == 0:
                    name = r.id
                    break
    if name is None:
        return None
    text = "Hint: %s is empty, so the division is by zero." % name
    try:
        program = ast.parse("\n".join(lines))
    except SyntaxError:
        return text
    functions = sdk.current().functions
    cur = name
    for _ in range(8):  # follow x = [... for e in y] / y = fn(...)['k'] back to the call
        value = _assigned(program, cur, lineno)
        if value is None:
            break
        call = next((n for n in ast.walk(value) if type(n) is ast.Call and type(n.func) is ast.Name
                     and n.func.id in functions), None)
        if call is not None:
            shown = ast.unparse(call)
            if len(shown) > 120:
                shown = shown[:117] + "..."
            return text + (" It comes from %s (line %d): the search returned no matches. Check `if %s:` before "
                           "dividing." % (shown, call.lineno, name))
        nxt = None
        for n in ast.walk(value):
            if type(n) is ast.comprehension and type(n.iter) is ast.Name:
                nxt = n.iter.id
                break
        if type(value) is ast.Name:
            nxt = value.id
        if nxt is None:
            break
        cur = nxt
    return text + " Check `if %s:` before dividing." % name


def _assigned(program: ast.AST, name: str, before: int) -> ast.AST | None:
    """The value of the last ``name = ...`` above line ``before``."""
    best = None
    for node in ast.walk(program):
        if type(node) is ast.Assign and node.lineno <= before and any(
                type(t) is ast.Name and t.id == name for t in node.targets):
            if best is None or node.lineno > best.lineno:
                best = node
    return best.value if best is not None else None


def _hint(exc: BaseException, frame: Any, lines: list[str], lineno: int) -> str | None:
    from codemcp_rt.pending import Pending

    if not (0 < lineno <= len(lines)):
        return None
    tree = _parse_line(lines[lineno - 1])
    if tree is None:
        return None
    scope = dict(frame.f_globals)
    scope.update(frame.f_locals)
    for root, steps in _paths(tree):
        if root not in scope:
            continue
        cur = scope[root]
        origin = cur if type(cur) is Pending else None
        path = ""
        for op, key in steps:
            if op == "name":
                key = scope.get(key, _NOKEY)
                if type(key) not in (str, int):
                    break
                op = "key"
            if type(cur) is Pending:
                if cur._state != 1:  # not resolved (or failed): nothing to show
                    break
                cur = cur._value
            failed = _fails(cur, op, key, exc)
            if failed:
                where = _where(cur, scope, origin, root, path)
                if where is None:
                    return _plain_hint(cur, root + path, op, key, exc, failed, scope)
                return "Hint: %s %s" % (where, failed)
            try:
                cur = cur[key] if op == "key" or (op == "attr" and type(cur) is dict) else None
            except Exception:
                break
            if cur is None and op == "attr":
                break
            path += "[%r]" % (key,)
    return None


def _plain_hint(value: Any, shown: str, op: str, key: Any, exc: BaseException, failed: str,
                scope: dict) -> str | None:
    """The hint for a value the program holds that no SDK result contains (parsed data, a
    dict it built, a gather() entry): the keys that exist, a failed gather entry's error,
    or which result the dict's values came from."""
    if type(value) is not dict or not value or op != "key" or not isinstance(exc, KeyError):
        return None  # an empty dict: nothing to show
    if value.get("ok") is False and isinstance(value.get("error"), dict) and key == "value":
        err = value["error"]
        kind = err.get("kind")
        why = "timed out" if kind == "timeout" else "failed (%s)" % kind
        return ("Hint: %s is a gather() entry whose call %s: %s. Check entry['ok'] before reading "
                "entry['value'] (a failed entry has 'error' instead)." % (shown, why, err.get("message")))
    close = difflib.get_close_matches(str(key), [k for k in value if type(k) is str], n=1, cutoff=0.6)
    hint = "Hint: %s %s" % (shown, failed)
    if close:
        hint += " Did you mean %r?" % close[0]
    source = _values_from(value, scope)
    if source is not None:
        hint += " Its values come from %s, which has no entry for %r." % (source, key)
    return hint


def _values_from(d: dict, scope: dict) -> str | None:
    """"memory_read_graph's result['entities']" when the values of ``d`` (a dict the
    program built) are items of an SDK result the program holds, else None."""
    first = next((v for v in d.values() if type(v) in (dict, list)), None)
    if first is None:
        return None
    where = _where(first, scope, None, "", "")
    return re.sub(r"\[\d+\]$", "", where) if where else None


def _parse_line(text: str) -> ast.AST | None:
    text = text.strip()
    for candidate in (text, text + " pass", text.rstrip(":") if text.endswith(":") else None):
        if not candidate:
            continue
        try:
            return ast.parse(candidate)
        except SyntaxError:
            continue
    if text.startswith(("elif ", "else")):
        try:
            return ast.parse("if " + text[5:] + " pass") if text.startswith("elif ") else None
        except SyntaxError:
            return None
    return None


def _paths(tree: ast.AST) -> list[tuple[str, list[tuple[str, Any]]]]:
    """Every maximal read path x[k]... / x.a... from a bare name, with literal keys."""
    out = []
    for node in ast.walk(tree):
        if type(node) not in (ast.Subscript, ast.Attribute):
            continue
        steps: list[tuple[str, Any]] = []
        cur: ast.AST = node
        ok = True
        while type(cur) in (ast.Subscript, ast.Attribute):
            if type(cur) is ast.Subscript:
                s = cur.slice  # type: ignore[attr-defined]
                if type(s) is ast.Constant and type(s.value) in (str, int):
                    steps.append(("key", s.value))
                elif type(s) is ast.Name:
                    steps.append(("name", s.id))  # a key held in a variable: read from the frame
                elif type(s) is ast.UnaryOp and type(s.operand) is ast.Constant and type(s.operand.value) is int:
                    steps.append(("key", -s.operand.value))
                else:
                    ok = False
                    break
            else:
                steps.append(("attr", cur.attr))  # type: ignore[attr-defined]
            cur = cur.value  # type: ignore[attr-defined]
        if ok and type(cur) is ast.Name:
            steps.reverse()
            out.append((cur.id, steps))  # type: ignore[attr-defined]
    out.sort(key=lambda p: -len(p[1]))
    return out


def _fails(value: Any, op: str, key: Any, exc: BaseException) -> str | None:
    """What is wrong when ``value[key]`` / ``value.key`` raised ``exc``, else None."""
    t = type(value)
    if op == "key":
        if t is dict and isinstance(exc, KeyError) and key not in value and exc.args and exc.args[0] == key:
            return "has no key %r; its keys: %s." % (key, _keys(value))
        if t is list and isinstance(exc, IndexError) and type(key) is int and not -len(value) <= key < len(value):
            return "is a list of %d item(s): index %d is out of range." % (len(value), key)
        if t is list and isinstance(exc, TypeError) and type(key) is str:
            return "is a list, not a dict: index it with a number or loop over it%s." % (
                " (its first item has keys: %s)" % _keys(value[0]) if value and type(value[0]) is dict else "")
        if t is str and isinstance(exc, TypeError) and type(key) is str:
            return "is text (str), not a dict: %r." % (value[:80] + ("…" if len(value) > 80 else ""))
        if t in (int, float, bool) and isinstance(exc, TypeError):
            return "is a %s (%r), not a container." % (t.__name__, value)
        return None
    if isinstance(exc, AttributeError) and getattr(exc, "name", key) == key and not hasattr(value, key):
        if t is dict:
            return "has no key or attribute %r; its keys: %s." % (key, _keys(value))
        if t is str:
            return "is text (str), which has no attribute %r: %r." % (key, value[:80])
        return "is a %s, which has no attribute %r." % (t.__name__, key)
    return None


def _keys(d: dict) -> str:
    names = [repr(k) if type(k) is not str else k for k in list(d)[:_MAX_KEYS]]
    return (", ".join(names) or "none") + (", … (%d in all)" % len(d) if len(d) > _MAX_KEYS else "")


def _where(value: Any, scope: dict, origin: Any, root: str, path: str) -> str | None:
    """Names the SDK call whose result holds ``value``: "memory_read_graph's
    result['entities'][0]"; the root variable when no SDK result holds it."""
    from codemcp_rt.pending import Pending

    if origin is not None:
        return "%s's result%s" % (_fn_name(origin), path)
    # A plain value (a loop variable, an alias): find it inside a resolved result.
    budget = [_MAX_NODES]
    for v in list(scope.values()):
        if type(v) is Pending and v._state == 1:
            found = _find(v._value, value, "", budget)
            if found is not None:
                return "%s's result%s" % (_fn_name(v), found)
        if budget[0] <= 0:
            break
    return None


def _find(hay: Any, needle: Any, path: str, budget: list[int]) -> str | None:
    stack = [(hay, path)]
    while stack and budget[0] > 0:
        cur, p = stack.pop()
        budget[0] -= 1
        if cur is needle:
            return p
        if type(cur) is dict:
            for k, v in cur.items():
                if type(v) in (dict, list):
                    stack.append((v, "%s[%r]" % (p, k)))
        elif type(cur) is list:
            for i, v in enumerate(cur):
                if type(v) in (dict, list):
                    stack.append((v, "%s[%d]" % (p, i)))
    return None


def _fn_name(p: Any) -> str:
    """The SDK function name of a Pending's call ("server/tool" label mapped back)."""
    label = getattr(p, "_label", "") or ""
    try:
        from codemcp_rt import sdk

        server, _, tool = label.partition("/")
        name = sdk.current().by_tool.get((server, tool))
        if name:
            return name
    except Exception:
        pass
    return label or "the call"
