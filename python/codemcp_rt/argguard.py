"""Arguments a program builds in code, checked against the tool's input schema at the call,
before they are sent: a wrong key in items assembled in a loop, a string where the schema
wants a list, an enum value off by case. The upstream would refuse them too, but its
validation text then comes back as the call's value and fails later, far from the cause.

The check is argcheck.py's (the validator's check of literal arguments), so run time and
pre-flight agree. It raises InvalidArguments (a ValueError) naming the SDK function, the
argument, what is wrong and the fix; the traceback shows the program's line. Only what
argcheck is certain of is refused, and a value that is still a Pending is left to the
gateway. Cost per call: one dict lookup per argument whose type alone passes its schema.
"""

from __future__ import annotations

from typing import Any

from codemcp_rt import argcheck, sdk

__all__ = ["check", "InvalidArguments"]


class InvalidArguments(ValueError):
    """The arguments of an SDK call do not fit the tool's input schema (nothing was sent)."""


_for_snap: list[Any] = [None, {}]  # the SDK snapshot, {(server, tool): (fn, schema, fast) | None}


def _plan(server: str, tool: str) -> tuple[str, dict, dict] | None:
    snap = sdk._current
    if _for_snap[0] is not snap:
        _for_snap[:] = [snap, {}]
    plans = _for_snap[1]
    key = (server, tool)
    if key in plans:
        return plans[key]
    plan = None
    fn = snap.by_tool.get(key)
    info = snap.meta.get(fn) if fn else None
    schema = info.get("input") if isinstance(info, dict) else None
    if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
        required = schema.get("required") if isinstance(schema.get("required"), list) else ()
        names = {k: n for n, k in argcheck.param_keys(schema).items()}
        fast = {k: argcheck.fast_types(v, k in required) for k, v in schema["properties"].items()}
        plan = (fn, schema, {"fast": fast, "names": names})
    plans[key] = plan
    return plan


def check(server: Any, tool: Any, args: Any) -> None:
    """Raise InvalidArguments when ``args`` certainly do not fit ``server``/``tool``'s schema."""
    if type(args) is not dict or not args:
        return
    try:
        plan = _plan(server, tool)
    except TypeError:  # unhashable server/tool: the call itself reports it
        return
    if plan is None:
        return
    fn, schema, extra = plan
    fast, names, props = extra["fast"], extra["names"], schema["properties"]
    problems: list[str] = []
    for key, value in args.items():
        ok = fast.get(key)
        if ok and type(value) in ok:
            continue
        sub = props.get(key)
        if sub is None or not _plain(value, 0):
            continue  # an unknown key is the signature's business; a Pending is the gateway's
        problems += argcheck.check_value(value, sub, schema, names.get(key, key))
    if problems:
        raise InvalidArguments("%s(...) was not sent: %s" % (fn, " ".join(problems[:4])))


_PLAIN = (str, int, float, bool, type(None))


def _plain(value: Any, depth: int) -> bool:
    """True if ``value`` is plain JSON data (no Pending, nothing that computes on access)."""
    t = type(value)
    if t in _PLAIN:
        return True
    if depth > 32:
        return False
    if t is list or t is tuple:
        return all(_plain(v, depth + 1) for v in value)
    if t is dict:
        return all(type(k) is str and _plain(v, depth + 1) for k, v in value.items())
    return False
