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

Fast path: a value that is already plain JSON data (see plain()) is not copied; the C
encoder writes it directly, with the same result as the conversion.
"""

from __future__ import annotations

import base64
import collections
import collections.abc
import enum
import json
import json.encoder
import math
import sys
from typing import Any, Callable

from codemcp_rt.pending import Pending

MAX_DEPTH = 100
_MAX_REPR = 1000
_MAX_PREVIEW = 4096
_WALK_FACTOR = 4
_WALK_SLACK = 65536
_HUGE_INT_BITS = 13000  # str(int) refuses > 4300 digits (~14284 bits) in 3.11
_BIG_INT = 1 << _HUGE_INT_BITS
HINT = "Return less data: filter or aggregate in Python before returning."


def plain(value: Any, budget: int, pendings: bool = False) -> bool:
    """True when ``value`` is JSON data that the C encoder writes exactly as the
    conversion below would: str/int/float/bool/None, dicts with str keys and lists of
    those, nested less than MAX_DEPTH deep (so no cycles), whose JSON is at most about
    ``budget`` bytes by the converter's own lower-bound count. NaN and Infinity pass
    here (an encoder made with allow_nan=False refuses them). Tuples do not pass (a
    namedtuple is a dict here, a list to json). ``pendings``: a Pending counts as plain
    too (an encoder from make_encoder(resolve_pendings=True) checks its value)."""
    return _walk((value,), 0, budget, pendings) >= 0


def _walk(items: Any, depth: int, room: int, pendings: bool) -> int:
    """``room`` left after ``items`` (the _Converter._spend count), or -1."""
    for v in items:
        t = type(v)
        if t is str:
            room -= len(v) + 2
        elif t is int:
            if not -_BIG_INT < v < _BIG_INT:
                return -1
            room -= 1
        elif t is float:
            room -= 1
        elif t is bool or v is None:
            room -= 4
        elif depth >= MAX_DEPTH:
            return -1
        elif t is dict:
            room -= 2
            for k in v:
                if type(k) is not str:
                    return -1
                room -= len(k) + 4
            room = _walk(v.values(), depth + 1, room, pendings)
        elif t is list:
            room = _walk(v, depth + 1, room - 2 - len(v), pendings)
        elif t is Pending and pendings:
            pass
        else:
            return -1
        if room < 0:
            return -1
    return room


class _NotPlain(TypeError):
    pass


def _refuse(value: Any) -> Any:
    raise _NotPlain("Object of type %s is not JSON serializable" % type(value).__name__)


def _resolve_plain(value: Any) -> Any:
    if type(value) is Pending:
        inner = value.result()  # a failed call raises ToolError
        if plain(inner, 1 << 62):
            return inner
    raise _NotPlain("Object of type %s is not plain JSON data" % type(value).__name__)


def make_encoder(resolve_pendings: bool = False) -> Callable[[Any], str]:
    """A compact, strict (no NaN) JSON encoder for data without cycles (plain(), the
    converter's output, envelopes). Raises TypeError/ValueError for anything else;
    ``resolve_pendings``: a Pending is written as its value when that is plain."""
    default = _resolve_plain if resolve_pendings else _refuse
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"),
                                check_circular=False, default=default).encode
    # No circular-reference markers, so the encoder object has no state: one serves all.
    encoder = make(None, default, json.encoder.c_encode_basestring, None, ":", ",", False, False, False)

    def encode(value: Any) -> str:
        return "".join(encoder(value, 0))

    return encode


_encode = make_encoder()


def _loaded(modules: tuple[str, ...], *names: str) -> tuple[type, ...]:
    """The classes ``names`` of the first of ``modules`` a program has imported, else ():
    no instance of them can exist before, so the runtime's start does not import datetime,
    decimal, fractions and dataclasses for the programs that never use them (bench/
    runtime_import.py). isinstance(x, ()) is False."""
    for name in modules:
        m = sys.modules.get(name)
        if m is not None:
            return tuple(getattr(m, n) for n in names)
    return ()


class _Converter:
    """One conversion pass. ``budget`` (bytes) stops the walk early once the JSON is
    known to be larger: ``used`` is a lower bound of the JSON size produced so far."""

    def __init__(self, max_depth: int, budget: int | None) -> None:
        self.max_depth = max_depth
        self.budget = budget
        self.used = 0
        self.tripped = False
        self.active: set[int] = set()  # ids of the containers on the current path
        # (the C modules too: a program may import _datetime or _decimal alone)
        self.moments = _loaded(("datetime", "_datetime"), "datetime", "date", "time")
        self.deltas = _loaded(("datetime", "_datetime"), "timedelta")
        self.decimals = _loaded(("decimal", "_decimal"), "Decimal")
        self.fractions = _loaded(("fractions",), "Fraction")
        self.dataclasses = sys.modules.get("dataclasses")

    def is_dataclass(self, value: Any) -> bool:
        return self.dataclasses is not None and self.dataclasses.is_dataclass(value)

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
        if isinstance(value, self.moments):
            return self.convert(value.isoformat(), depth)
        if isinstance(value, self.deltas):
            return self.convert(value.total_seconds(), depth)
        if isinstance(value, self.decimals):
            return self._decimal(value)
        if isinstance(value, self.fractions):
            return self.convert(float(value), depth)
        if isinstance(value, complex):
            return self.convert(str(value), depth)
        if isinstance(value, ToolError):
            return self.convert(value.to_dict(), depth)
        if depth >= self.max_depth:
            self._spend(15)
            return "<depth limit>"
        if isinstance(value, (dict, list, tuple, set, frozenset, collections.deque, range)) or (
            self.is_dataclass(value) and not isinstance(value, type)
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
            if self.is_dataclass(value):
                fields = [(f.name, getattr(value, f.name)) for f in self.dataclasses.fields(value)]
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
        text = self._repr(key) if not isinstance(key, self.moments) else key.isoformat()
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

    def _decimal(self, value: Any) -> Any:
        self._spend(1)
        if not value.is_finite():
            return None
        as_float = float(value)
        if math.isfinite(as_float) and self.decimals[0](repr(as_float)) == value:
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


def dumps(obj: Any) -> str:
    """Compact, strict JSON (no NaN) of JSON-ready data, e.g. what to_jsonable or cap
    return; raises TypeError/ValueError like json.dumps for anything else."""
    try:
        return _encode(obj)
    except (TypeError, ValueError, RecursionError):  # not plain data: the general (slower) way
        return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def truncated(size: int, limit: int, text: str, at_least: bool = False) -> dict[str, Any]:
    """The stand-in for a result whose JSON (``text``, ``size`` bytes) exceeds ``limit``."""
    room = max(0, min(limit // 2, _MAX_PREVIEW))
    preview = text.encode("utf-8")[:room].decode("utf-8", "ignore")
    out: dict[str, Any] = {"_truncated": True, "bytes": size, "limit": limit, "preview": preview, "hint": HINT}
    if at_least:
        out["bytes_at_least"] = True
    return out


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def cap_json(value: Any, limit: int | None) -> tuple[Any, str]:
    """cap(value, limit) and its JSON text. Never raises."""
    try:
        budget = limit if limit and limit > 0 else None
        # Walk up to a few times the limit so "bytes" is exact for the usual overshoot;
        # beyond that stop early and report a lower bound.
        walk = None if budget is None else budget * _WALK_FACTOR + _WALK_SLACK
        obj = text = None
        if plain(value, (1 << 62) if walk is None else walk):
            try:
                obj, text = value, _encode(value)
            except ValueError:  # NaN or Infinity: the converter makes them null
                pass
        if text is None:
            conv = _Converter(MAX_DEPTH, walk)
            obj = conv.convert(value, 0)
            text = dumps(obj)
            if conv.tripped:
                obj = truncated(max(conv.used, _utf8_len(text)), budget or 0, text, at_least=True)
                return obj, dumps(obj)
        if budget is not None:
            size = _utf8_len(text)
            if size > budget:
                obj = truncated(size, budget, text)
                return obj, dumps(obj)
        return obj, text
    except Exception as exc:  # last resort: the result is lost, the envelope stays valid
        obj = {"_unserializable": "%s: %s" % (type(exc).__name__, exc)}
        return obj, json.dumps(obj, ensure_ascii=False)


def cap(value: Any, limit: int | None) -> Any:
    """``value`` as JSON-ready data, or the truncation stand-in when its JSON is larger
    than ``limit`` bytes (None or <= 0: no limit). Never raises. A plain value (see
    plain()) is returned as it is, not copied."""
    return cap_json(value, limit)[0]


def dumps_capped(value: Any, limit: int | None) -> str:
    """JSON text for ``value``, replaced by the truncation stand-in above ``limit`` bytes."""
    return cap_json(value, limit)[1]
