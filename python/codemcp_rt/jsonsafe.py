"""Turn any Python value into valid JSON, and cap its size. Never hangs, never raises.

Conversions (to_jsonable):
    NaN, +Inf, -Inf            -> null
    bytes / bytearray          -> UTF-8 text, or {"base64": "...", "bytes": n}
    set, frozenset             -> list (sorted when the items sort)
    tuple, deque, range        -> list; namedtuple -> dict
    datetime, date, time       -> ISO 8601 text; timedelta -> seconds
    Decimal                    -> number when exact as a float, else text
    Enum                       -> its value; dataclass -> dict of its fields
    ToolError                  -> its to_dict(); Pending -> its value
    dict keys                  -> text (None -> "null", True -> "true", 1 -> "1")
    anything else              -> repr() (at most 1000 characters)
    a container inside itself  -> "<cycle>";  nesting deeper than 100 -> "<depth limit>"

dumps_capped(value, limit) returns JSON text of at most about ``limit`` bytes: a value
whose JSON is larger is replaced by {"_truncated": true, "bytes", "limit", "preview",
"hint"} ("bytes" is exact up to 4 x limit; past that the walk stops and the stand-in
says "bytes_at_least": true).
"""

from __future__ import annotations

import base64
import collections
import collections.abc
import dataclasses
import datetime
import decimal
import enum
import fractions
import json
import math
from typing import Any

MAX_DEPTH = 100
_MAX_REPR = 1000
_MAX_PREVIEW = 4096
_WALK_FACTOR = 4
_WALK_SLACK = 65536
_HUGE_INT_BITS = 13000  # str(int) refuses > 4300 digits (~14284 bits) in 3.11
HINT = "Return less data: filter or aggregate in Python before returning."


class _Converter:
    """One conversion pass. ``budget`` (bytes) stops the walk early once the JSON is
    known to be larger: ``used`` is a lower bound of the JSON size produced so far."""

    def __init__(self, max_depth: int, budget: int | None) -> None:
        self.max_depth = max_depth
        self.budget = budget
        self.used = 0
        self.tripped = False
        self.active: set[int] = set()  # ids of the containers on the current path

    def _spend(self, n: int) -> bool:
        self.used += n
        if self.budget is not None and self.used > self.budget:
            self.tripped = True
        return self.tripped

    def convert(self, value: Any, depth: int) -> Any:
        if self.tripped:
            return "…"
        try:
            return self._convert(value, depth)
        except Exception as exc:  # a hostile __repr__, a broken Mapping, MemoryError...
            self._spend(16)
            return "<unserializable %s: %s>" % (type(value).__name__, type(exc).__name__)

    def _convert(self, value: Any, depth: int) -> Any:
        from codemcp_rt.errors import ToolError
        from codemcp_rt.pending import Pending

        t = type(value)
        if value is None or t is bool:
            self._spend(4)
            return value
        if t is str:
            self._spend(len(value) + 2)
            return value
        if t is int:
            self._spend(1)
            if value.bit_length() > _HUGE_INT_BITS:
                return "<int of %d bits>" % value.bit_length()
            return value
        if t is float:
            self._spend(1)
            return value if math.isfinite(value) else None
        if t is Pending:
            try:
                inner = value.result()
            except ToolError as exc:
                return {"tool_error": exc.to_dict()}
            return self.convert(inner, depth)
        if isinstance(value, enum.Enum):
            return self.convert(value.value, depth)
        if isinstance(value, bool):
            return bool(value)
        if isinstance(value, int):
            return self.convert(int(value), depth)
        if isinstance(value, float):
            return self.convert(float(value), depth)
        if isinstance(value, str):
            return self.convert(str.__str__(value), depth)
        if isinstance(value, (bytes, bytearray, memoryview)):
            return self._bytes(bytes(value))
        if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
            return self.convert(value.isoformat(), depth)
        if isinstance(value, datetime.timedelta):
            return self.convert(value.total_seconds(), depth)
        if isinstance(value, decimal.Decimal):
            return self._decimal(value)
        if isinstance(value, fractions.Fraction):
            return self.convert(float(value), depth)
        if isinstance(value, complex):
            return self.convert(str(value), depth)
        if isinstance(value, ToolError):
            return self.convert(value.to_dict(), depth)
        if depth >= self.max_depth:
            self._spend(15)
            return "<depth limit>"
        if isinstance(value, (dict, list, tuple, set, frozenset, collections.deque, range)) or (
            dataclasses.is_dataclass(value) and not isinstance(value, type)
        ):
            return self._container(value, depth)
        if isinstance(value, collections.abc.Mapping):
            return self._container(dict(value.items()), depth)
        return self._repr(value)

    def _container(self, value: Any, depth: int) -> Any:
        key = id(value)
        if key in self.active:
            self._spend(9)
            return "<cycle>"
        self.active.add(key)
        try:
            if isinstance(value, dict):
                return self._dict(value.items(), depth)
            if isinstance(value, tuple) and hasattr(type(value), "_fields"):
                return self._dict(zip(type(value)._fields, value), depth)
            if dataclasses.is_dataclass(value):
                fields = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
                return self._dict(fields, depth)
            if isinstance(value, (set, frozenset)):
                try:
                    value = sorted(value)
                except Exception:
                    value = list(value)
            return self._list(value, depth)
        finally:
            self.active.discard(key)

    def _dict(self, items: Any, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        self._spend(2)
        for k, v in items:
            if self.tripped:
                break
            name = self._key(k)
            self._spend(len(name) + 4)
            out[name] = self.convert(v, depth + 1)
        return out

    def _list(self, items: Any, depth: int) -> list[Any]:
        out: list[Any] = []
        self._spend(2)
        for v in items:
            if self.tripped:
                out.append("…")
                break
            self._spend(1)
            out.append(self.convert(v, depth + 1))
        return out

    def _key(self, key: Any) -> str:
        from codemcp_rt.pending import Pending

        if type(key) is Pending:
            key = key.result()
        if isinstance(key, str):
            return str.__str__(key)
        if key is None:
            return "null"
        if isinstance(key, bool):
            return "true" if key else "false"
        if isinstance(key, enum.Enum):
            return self._key(key.value)
        if isinstance(key, int):
            return str(int(key)) if key.bit_length() <= _HUGE_INT_BITS else "<int>"
        if isinstance(key, float):
            return json.dumps(float(key))
        text = self._repr(key) if not isinstance(key, (datetime.date, datetime.time)) else key.isoformat()
        return text

    def _bytes(self, data: bytes) -> Any:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            encoded = base64.b64encode(data).decode("ascii")
            self._spend(len(encoded) + 20)
            return {"base64": encoded, "bytes": len(data)}
        self._spend(len(text) + 2)
        return text

    def _decimal(self, value: decimal.Decimal) -> Any:
        self._spend(1)
        if not value.is_finite():
            return None
        as_float = float(value)
        if math.isfinite(as_float) and decimal.Decimal(repr(as_float)) == value:
            return as_float
        text = str(value)
        self._spend(len(text) + 2)
        return text

    def _repr(self, value: Any) -> str:
        try:
            text = repr(value)
        except Exception as exc:
            text = "<%s object (repr failed: %s)>" % (type(value).__name__, type(exc).__name__)
        if not isinstance(text, str):
            text = "<%s object>" % type(value).__name__
        if len(text) > _MAX_REPR:
            text = text[:_MAX_REPR] + "…"
        self._spend(len(text) + 2)
        return text


def to_jsonable(value: Any, max_depth: int = MAX_DEPTH) -> Any:
    """A copy of ``value`` made only of dict/list/str/int/float/bool/None (finite floats)."""
    return _Converter(max_depth, None).convert(value, 0)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def truncated(size: int, limit: int, text: str, at_least: bool = False) -> dict[str, Any]:
    """The stand-in for a result whose JSON (``text``, ``size`` bytes) exceeds ``limit``."""
    room = max(0, min(limit // 2, _MAX_PREVIEW))
    preview = text.encode("utf-8")[:room].decode("utf-8", "ignore")
    out: dict[str, Any] = {"_truncated": True, "bytes": size, "limit": limit, "preview": preview, "hint": HINT}
    if at_least:
        out["bytes_at_least"] = True
    return out


def cap(value: Any, limit: int | None) -> Any:
    """``value`` as JSON-ready data, or the truncation stand-in when its JSON is larger
    than ``limit`` bytes (None or <= 0: no limit). Never raises."""
    try:
        budget = limit if limit and limit > 0 else None
        # Walk up to a few times the limit so "bytes" is exact for the usual overshoot;
        # beyond that stop early and report a lower bound.
        conv = _Converter(MAX_DEPTH, None if budget is None else budget * _WALK_FACTOR + _WALK_SLACK)
        obj = conv.convert(value, 0)
        text = _dumps(obj)
        if conv.tripped:
            return truncated(max(conv.used, len(text.encode("utf-8"))), budget or 0, text, at_least=True)
        size = len(text.encode("utf-8"))
        if budget is not None and size > budget:
            return truncated(size, budget, text)
        return obj
    except Exception as exc:  # last resort: the result is lost, the envelope stays valid
        return {"_unserializable": "%s: %s" % (type(exc).__name__, exc)}


def dumps_capped(value: Any, limit: int | None) -> str:
    """JSON text for ``value``, replaced by the truncation stand-in above ``limit`` bytes."""
    try:
        return _dumps(cap(value, limit))
    except Exception as exc:
        return _dumps({"_unserializable": "%s" % type(exc).__name__})
