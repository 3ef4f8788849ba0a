"""The validator's policy check: a call whose function and keyword arguments are all
literals, and that the gateway's policy rules will deny, is reported before the program
runs, naming the rule.

A courtesy only: the gateway decides every call with its final arguments (policy_rules.c),
whatever this module says. The gateway sends, with each run, the rules that can apply to the
run's principal (params["policy"]). The semantics are the gateway's: rules in order, the first
that matches decides; a value a matcher cannot judge (missing, another type, a path that is
not absolute or climbs above /) makes an allow rule not match and a deny rule match; when
rules name a tool and none matches, the call is denied. Regular expressions are not evaluated
here (Python's engine backtracks): a call that meets one is not reported.
tests/python/test_policy_agree.py runs one rule set and call list through this module and
through the gateway (`codemcp policy check`) and fails when they decide differently.

Stdlib only: importable on its own.
"""

from __future__ import annotations

import ast
from typing import Any

__all__ = ["problems"]

_UNDECIDED = object()  # this module cannot tell (a regex): say nothing


def _glob(pattern: str, s: str) -> bool:
    """`*` any characters, `?` one, `\\` quotes: the classic two-pointer walk, O(len * len)
    at worst, never exponential."""
    toks: list[tuple[str, str]] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            i += 1
            toks.append(("c", pattern[i]))
        elif c in "*?":
            toks.append((c, ""))
        else:
            toks.append(("c", c))
        i += 1
    data = s.encode("utf-8", "surrogatepass")
    pat = [(k, v.encode("utf-8", "surrogatepass")) for k, v in toks]
    flat: list[tuple[str, int]] = []  # the gateway compares bytes
    for k, v in pat:
        if k == "c":
            flat.extend(("c", b) for b in v)
        else:
            flat.append((k, 0))
    p = d = 0
    star_p, star_d = -1, 0
    while d < len(data):
        if p < len(flat) and (flat[p][0] == "?" or (flat[p][0] == "c" and flat[p][1] == data[d])):
            p += 1
            d += 1
        elif p < len(flat) and flat[p][0] == "*":
            star_p, star_d = p, d
            p += 1
        elif star_p >= 0:
            p = star_p + 1
            star_d += 1
            d = star_d
        else:
            return False
    while p < len(flat) and flat[p][0] == "*":
        p += 1
    return p == len(flat)


def _globs(spec: Any, s: str) -> bool:
    if spec is None:
        return True
    return any(_glob(g, s) for g in ([spec] if isinstance(spec, str) else spec))


def _normalize(p: str) -> str | None:
    if not p.startswith("/") or "\0" in p:
        return None
    out: list[str] = []
    for part in p.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not out:
                return None
            out.pop()
        else:
            out.append(part)
    return "/" + "/".join(out) if out else ""


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return a == b


def _walk(args: dict, path: str) -> Any:
    """The value at a path "a.b[0][\\"c.d\\"]" ($ prefix allowed), or _MISSING."""
    v: Any = args
    p = path[2:] if path.startswith("$.") else path[1:] if path.startswith("$") else path
    while p:
        if p.startswith('["'):
            end = p.find('"]')
            key: Any = p[2:end]
            p = p[end + 2 :]
        elif p.startswith("["):
            end = p.find("]")
            key = int(p[1:end])
            p = p[end + 1 :]
        else:
            n = len(p)
            for stop in ".[":
                at = p.find(stop)
                if at >= 0:
                    n = min(n, at)
            key, p = p[:n], p[n:]
        if p.startswith("."):
            p = p[1:]
        if isinstance(key, int):
            if not isinstance(v, list) or key >= len(v):
                return _MISSING
        elif not isinstance(v, dict) or key not in v:
            return _MISSING
        v = v[key]
    return v


_MISSING = object()


def _judge(kind: str, spec: Any, v: Any) -> Any:
    """True / False / None (cannot be judged) / _UNDECIDED."""
    if v is _MISSING:
        return None
    if kind == "eq":
        return _json_equal(v, spec)
    if kind == "one_of":
        return any(_json_equal(v, o) for o in spec)
    if kind == "regex":
        return _UNDECIDED
    if kind == "glob":
        return _glob(spec, v) if isinstance(v, str) else None
    if kind == "under":
        n = _normalize(v) if isinstance(v, str) else None
        u = _normalize(spec)
        if n is None or u is None:
            return None
        return n == u or n.startswith(u + "/")
    if kind == "range":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        lo, hi = spec
        return not ((lo is not None and v < lo) or (hi is not None and v > hi))
    return _UNDECIDED


def _decide(rules: list, server: str, tool: str, mutation: bool, dry_run: bool, args: dict) -> Any:
    """(effect, rule name, message) of the deciding rule, None when no rule names the tool,
    or _UNDECIDED."""
    named = False
    for r in rules:
        if not isinstance(r, dict):
            return _UNDECIDED
        if not (_globs(r.get("server"), server) and _globs(r.get("tool"), tool)):
            continue
        named = True
        if "write" in r and bool(r["write"]) != mutation:
            continue
        if "dry_run" in r and bool(r["dry_run"]) != dry_run:
            continue
        effect = r.get("effect")
        matches = True
        for path, spec in (r.get("args") or {}).items():
            kinds = [k for k in spec if k != "ignore_case"]
            if len(kinds) != 1:
                return _UNDECIDED
            verdict = _judge(kinds[0], spec[kinds[0]], _walk(args, path))
            if verdict is _UNDECIDED:
                return _UNDECIDED
            if verdict is False or (verdict is None and effect == "allow"):
                matches = False
                break
        if matches:
            return (effect, r.get("name", "?"), r.get("message"))
    if named:
        return ("deny", None, None)
    return None


def problems(
    sites: dict[tuple, list[ast.Call]],
    bound: dict[str, Any],
    meta: dict[str, dict],
    rules: list,
    dry_run: bool,
) -> list[tuple[int, int, int, str]]:
    """(line, col, rank, message) for each literal call the rules will deny."""
    out: list[tuple[int, int, int, str]] = []
    for form, calls in sites.items():
        name = form[0]
        info = meta.get(name)
        if name in bound or form[1] or form[3] or not isinstance(info, dict):
            continue
        server, tool = info.get("server"), info.get("tool")
        if not isinstance(server, str) or not isinstance(tool, str):
            continue
        for c in calls:
            try:
                args = {k.arg: ast.literal_eval(k.value) for k in c.keywords}
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            try:
                got = _decide(rules, server, tool, bool(info.get("mutation")), dry_run, args)
            except (ValueError, TypeError, AttributeError, IndexError, RecursionError):
                continue  # a shape this module does not know: the gateway decides
            if got is None or got is _UNDECIDED or got[0] != "deny":
                continue
            _, rule, message = got
            if rule is None:
                why = "no policy rule allows %s/%s with these arguments" % (server, tool)
            else:
                why = "policy rule %s denies it%s" % (rule, ": " + message if message else "")
            out.append((c.lineno, c.col_offset, 0, "`%s(...)` will be denied (line %d): %s." % (name, c.lineno, why)))
    return out
