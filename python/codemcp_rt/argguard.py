"""Arguments a program builds in code, checked against the tool's input schema at the call,
before they are sent: a wrong key in items assembled in a loop, a string where the schema
wants a list, an enum value off by case. The upstream would refuse them too, but its
validation text then comes back as the call's value and fails later, far from the cause.

The check is argcheck.py's (the validator's check of literal arguments), so run time and
pre-flight agree. It raises InvalidArguments (a ValueError) naming the SDK function, the
argument, what is wrong and the fix; the traceback shows the program's line. Only what
argcheck is certain of is refused, and a value that is still a Pending is left to the
gateway. Cost per call: each schema is compiled once per SDK snapshot into argcheck.fits's
checker that only says "certainly fits" (exact types, required and allowed keys, enums);
argcheck's slower walk, which writes the messages, runs only when that checker is not sure
(~1 us for a scalar argument, ~10 us for ten nested objects). In the worker, a call whose
every argument has a type in certain_types()'s set for its key does not run check() at all
(the test is in C, src/worker/pycall.c): check() could find nothing wrong with it.
"""

from __future__ import annotations

from typing import Any

from codemcp_rt import argcheck, sdk

__all__ = ["check", "InvalidArguments"]


class InvalidArguments(ValueError):
    """The arguments of an SDK call do not fit the tool's input schema (nothing was sent)."""


_snap: Any = None  # the SDK snapshot the plans below were made for
_plans: dict[tuple[Any, Any], Any] = {}  # (server, tool) -> (fn, schema, types, fits, names) | None


def _plan(server: str, tool: str) -> Any:
    """The check's plan for one tool: ``types`` (key -> the exact Python types that always
    fit: the usual scalar argument costs one set lookup), ``fits`` (key -> the compiled
    checker), ``names`` (key -> the Python parameter name messages use)."""
    snap = sdk._current
    fn = snap.by_tool.get((server, tool))
    info = snap.meta.get(fn) if fn else None
    schema = info.get("input") if isinstance(info, dict) else None
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return None
    required = schema.get("required") if isinstance(schema.get("required"), list) else ()
    props = schema["properties"]
    types = {k: argcheck.fast_types(v, k in required) for k, v in props.items()}
    fits = {k: argcheck.fits(v, k in required) for k, v in props.items()}
    names = {k: n for n, k in argcheck.param_keys(schema).items()}
    return (fn, schema, types, fits, names)


def _plan_of(server: Any, tool: Any) -> Any:
    """The tool's plan for the current SDK snapshot (made once per snapshot), or None when
    its schema gives nothing to check; TypeError for unhashable names."""
    global _snap, _plans
    if _snap is not sdk._current:
        _snap, _plans = sdk._current, {}
    try:
        return _plans[(server, tool)]
    except KeyError:
        plan = _plans[(server, tool)] = _plan(server, tool)
        return plan


def certain_types(server: Any, tool: Any) -> dict[str, frozenset] | None:
    """key -> the exact Python types that certainly fit that argument (check()'s first test),
    or None when the tool has no plan. client.call's C fast path (_codemcp.issue) tests each
    argument's type against this table and calls check() itself only when a type is not in
    its key's set, or when there is no table; a key not in the table is left to the
    signature, as check() leaves it."""
    try:
        plan = _plan_of(server, tool)
    except TypeError:
        return None
    return None if plan is None else plan[2]


def check(server: Any, tool: Any, args: Any) -> None:
    """Raise InvalidArguments when ``args`` certainly do not fit ``server``/``tool``'s schema."""
    if type(args) is not dict or not args:
        return
    try:
        plan = _plan_of(server, tool)
    except TypeError:  # unhashable server/tool: the call itself reports it
        return
    if plan is None:
        return
    fn, schema, types, fits, names = plan
    problems: list[str] = []
    for key, value in args.items():
        ok = types.get(key)
        if ok and type(value) in ok:
            continue
        fit = fits.get(key)
        if fit is None or fit(value) or not _plain(value, 0):
            continue  # an unknown key is the signature's business; a Pending is the gateway's
        problems += argcheck.check_value(value, schema["properties"][key], schema, names.get(key, key))
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

