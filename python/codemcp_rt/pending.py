"""Pending: the value of an SDK call that may still be in flight.

Every SDK function sends its request at once and returns a Pending. The Pending turns
into its value the first time the value is needed — indexing, attribute access,
iteration, len(), bool(), str(), comparisons, arithmetic, int()/float(), format(),
``in``, hashing, isinstance() — so calls made before any value is read overlap.

    a = github_get_me()            # request sent, no waiting
    b = github_list_issues(...)    # second request sent, still no waiting
    a["login"], len(b)             # waits for each reply (both already in flight)

``p.result()`` waits explicitly and raises ToolError if the call failed; ``p.done()``
tells whether the reply is already there without waiting. A dict value's keys also
read as attributes (``p.login``) when the dict has no method of that name.

A Pending is not a real dict/list: ``type(p)`` is Pending. ``isinstance(p, dict)``
does work (it waits for the value). Values returned from a run are resolved
automatically, and ``json.dumps`` works on Pendings in this worker, but other
libraries may need the plain value: call ``resolve(x)`` (deep) or ``p.result()``.

``await p`` works too (top-level ``await``, ``async def`` helpers, ``asyncio.gather``
and ``asyncio.run``): calls overlap the same way.

``gather(*pendings)`` (alias ``settle``) waits for all and never raises:
``[{"ok": True, "value": v}, {"ok": False, "error": {"kind": ..., ...}}]``.
"""

from __future__ import annotations

import json
import operator
import threading
import types
from typing import Any, Callable

from codemcp_rt.errors import ToolError

_UNSET = 0
_DONE = 1
_FAILED = 2
_MAX_DEPTH = 200


class _PyPendingBase:
    """Python twin of ``_codemcp.PendingBase`` (src/worker/pypending.c), the state, result(),
    done(), str() and format() of a Pending; the worker uses the C one, plain python3 this one."""

    __slots__ = ("_wait", "_poll", "_block", "_label", "_lock", "_owner", "_state", "_value", "_error", "_aw",
                 "__weakref__")

    def __init__(
        self,
        wait: Callable[[], Any],
        poll: Callable[[], bool] | None = None,
        label: str = "call",
        block: Callable[[float], bool] | None = None,
    ) -> None:
        self._wait = wait
        self._poll = poll
        self._block = block
        self._aw: Any = None  # the __await__ generator send()/throw() drive
        self._label = label
        self._lock = threading.Lock()
        self._owner: int | None = None  # the thread inside wait(): a re-entrant read is an error
        self._state = _UNSET
        self._value: Any = None
        self._error: ToolError | None = None

    def result(self) -> Any:
        """Wait for the value and return it; raise ToolError if the call failed.

        Raising is repeatable: every later use raises the same ToolError.
        """
        if self._state == _UNSET:
            me = threading.get_ident()
            if self._owner == me:
                raise RuntimeError("a Pending's value was read from inside its own wait()")
            with self._lock:
                if self._state == _UNSET:
                    wait = self._wait
                    if wait is None:
                        raise TypeError("this Pending has nothing to wait for")
                    self._owner = me
                    try:
                        value = wait()
                    except ToolError as exc:
                        self._error, self._value, self._state = exc, None, _FAILED
                    else:
                        self._value, self._state = value, _DONE
                    finally:
                        self._owner = None
                    self._wait = self._poll = self._block = None  # drop the closure and its reply
        if self._state == _FAILED:
            raise self._error  # type: ignore[misc]
        return self._value

    def done(self) -> bool:
        """True when the value (or the error) is available without waiting."""
        if self._state != _UNSET:
            return True
        poll = self._poll
        try:
            return bool(poll and poll())
        except Exception:
            return False

    def __str__(self) -> str:
        return str(self.result())

    def __format__(self, spec: str) -> str:
        return format(self.result(), spec)


try:  # the worker host's C core (src/worker/pypending.c); the twin above under plain python3
    from _codemcp import PendingBase as _PendingBase  # type: ignore[import-not-found]
except ImportError:
    _PendingBase = _PyPendingBase


class Pending(_PendingBase):  # type: ignore[misc,valid-type]
    """A tool call's value that resolves on first use (see the module docstring).

    ``Pending(wait, poll=None, label="call", block=None)``: ``wait()`` returns the value or
    raises ToolError; ``poll()`` says, without blocking, whether wait() would return at once;
    ``block(seconds)`` waits at most that long for it (and says whether it is there).
    ``label`` names the call. State, result(), done(), str() and format() live in the base
    class."""

    __slots__ = ()

    @classmethod
    def of(cls, value: Any, label: str = "value") -> "Pending":
        """A Pending that is already resolved to ``value``."""
        p = cls(lambda: value, lambda: True, label)
        p._state, p._value = _DONE, value
        return p

    def __await__(self):
        """``await p`` (top-level, in ``async def``, under asyncio.gather/run): the value.
        Under a running asyncio loop the wait is cut into short slices with a yield to
        the loop in between, so other tasks go on (and send their own calls) meanwhile;
        without a loop it simply waits."""
        if self._state == _UNSET and not self.done():
            import asyncio

            if asyncio._get_running_loop() is not None:
                slice_s = 0.001
                while not self.done():
                    block = self._block
                    if block is not None:
                        try:
                            if block(slice_s):
                                break
                        except Exception:
                            break  # the wait below reports what went wrong
                        yield from asyncio.sleep(0).__await__()
                    else:
                        yield from asyncio.sleep(slice_s).__await__()
                    slice_s = min(slice_s * 2, 0.004)
        return self.result()

    # asyncio.create_task() and ensure_future() want a coroutine: Pending is registered as
    # one (below) and its send/throw drive __await__. (No close(): a result key "close"
    # stays readable as p.close.)
    def send(self, value: Any) -> Any:
        if self._aw is None:
            self._aw = self.__await__()
        return self._aw.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        if self._aw is None:
            self._aw = self.__await__()
        return self._aw.throw(typ, val, tb) if val is not None or tb is not None else self._aw.throw(typ)

    def __repr__(self) -> str:
        try:
            return repr(self.result())
        except ToolError as exc:
            return "<Pending %s failed: %s>" % (self._label, exc)

    # __str__ and __format__ are the base class's (C in the worker)

    # -- attribute access: never for private/dunder probes (copy, pickle, json, ...) --

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        value = self.result()
        try:
            return getattr(value, name)
        except AttributeError:
            if isinstance(value, dict) and name in value:
                return value[name]
            raise AttributeError(
                "%s (result of %s) has no attribute or key %r" % (type(value).__name__, self._label, name)
            ) from None

    def __dir__(self) -> list[str]:
        names = set(dir(self.result()))
        return sorted(names | {"result", "done"})

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # makes isinstance(p, dict) see the value's type
        return type(self.result())

    # -- containers ---------------------------------------------------------------

    def __getitem__(self, key: Any) -> Any:
        return self.result()[_unwrap(key)]

    def __setitem__(self, key: Any, value: Any) -> None:
        self.result()[_unwrap(key)] = value

    def __delitem__(self, key: Any) -> None:
        del self.result()[_unwrap(key)]

    def __iter__(self):
        return iter(self.result())

    def __reversed__(self):
        return reversed(self.result())

    def __len__(self) -> int:
        return len(self.result())

    def __contains__(self, item: Any) -> bool:
        return _unwrap(item) in self.result()

    def __bool__(self) -> bool:
        return bool(self.result())

    def __hash__(self) -> int:
        value = self.result()
        try:
            return hash(value)
        except TypeError:
            # A dict/list value: hashed by identity, so a Pending can still be a key where
            # the library (asyncio.gather's de-duplication) keys by the awaitable itself.
            return object.__hash__(self)

    # -- conversions ----------------------------------------------------------------

    def __int__(self) -> int:
        return int(self.result())

    def __float__(self) -> float:
        return float(self.result())

    def __complex__(self) -> complex:
        return complex(self.result())

    def __index__(self) -> int:
        return operator.index(self.result())

    def __round__(self, ndigits: int | None = None) -> Any:
        return round(self.result(), ndigits)

    def __trunc__(self) -> Any:
        import math

        return math.trunc(self.result())

    def __floor__(self) -> Any:
        import math

        return math.floor(self.result())

    def __ceil__(self) -> Any:
        import math

        return math.ceil(self.result())

    # -- copy / pickle give the value -------------------------------------------------

    def __copy__(self) -> Any:
        import copy

        return copy.copy(self.result())

    def __deepcopy__(self, memo: dict) -> Any:
        import copy

        return copy.deepcopy(self.result(), memo)

    def __reduce_ex__(self, protocol: int) -> Any:
        return (_identity, (self.result(),))


import collections.abc as _abc  # noqa: E402

_abc.Coroutine.register(Pending)


def _identity(value: Any) -> Any:
    return value


def _unwrap(value: Any) -> Any:
    """The value behind a Pending; anything else unchanged (no isinstance: it resolves)."""
    return value.result() if type(value) is Pending else value


def _binary(op: Callable[[Any, Any], Any]) -> Callable[[Pending, Any], Any]:
    def method(self: Pending, other: Any) -> Any:
        return op(self.result(), _unwrap(other))

    return method


def _reflected(op: Callable[[Any, Any], Any]) -> Callable[[Pending, Any], Any]:
    def method(self: Pending, other: Any) -> Any:
        return op(_unwrap(other), self.result())

    return method


def _unary(op: Callable[[Any], Any]) -> Callable[[Pending], Any]:
    def method(self: Pending) -> Any:
        return op(self.result())

    return method


for _name, _op in {
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
}.items():
    setattr(Pending, "__%s__" % _name, _binary(_op))

for _name, _op in {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "matmul": operator.matmul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "divmod": divmod,
    "pow": pow,
    "lshift": operator.lshift,
    "rshift": operator.rshift,
    "and": operator.and_,
    "or": operator.or_,
    "xor": operator.xor,
}.items():
    setattr(Pending, "__%s__" % _name, _binary(_op))
    setattr(Pending, "__r%s__" % _name, _reflected(_op))

for _name, _op in {
    "neg": operator.neg,
    "pos": operator.pos,
    "abs": operator.abs,
    "invert": operator.invert,
}.items():
    setattr(Pending, "__%s__" % _name, _unary(_op))

# Defining __eq__ through setattr after class creation keeps our __hash__.
del _name, _op


def _error_dict(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, ToolError):
        return exc.to_dict()
    return {"kind": "exception", "message": "%s: %s" % (type(exc).__name__, exc)}


def gather(*items: Any) -> list[dict[str, Any]]:
    """Wait for every item and report each outcome; never raises a ToolError.

    Accepts Pendings (or plain values) as arguments, or one list/tuple/generator of them.
    Returns, in order, ``{"ok": True, "value": v}`` or
    ``{"ok": False, "error": {"kind", "server", "tool", "args", "message", "elapsed_ms"}}``.
    ``ok`` means the tool answered; an answer can still describe a failure.
    """
    if len(items) == 1:
        only = items[0]
        if type(only) is not Pending and isinstance(only, (list, tuple, types.GeneratorType)):
            items = tuple(only)
    out: list[dict[str, Any]] = []
    for item in items:
        if type(item) is not Pending:
            out.append({"ok": True, "value": item})
            continue
        try:
            out.append({"ok": True, "value": item.result()})
        except Exception as exc:  # ToolError, or a bug below us: report, don't raise
            out.append({"ok": False, "error": _error_dict(exc)})
    return out


settle = gather


def resolve(value: Any) -> Any:
    """Replace every Pending inside ``value`` (dicts, lists, tuples, sets, at any depth)
    by its value and return the result. Lists and dicts are updated in place; tuples and
    sets are rebuilt when they contained a Pending. Raises ToolError for a failed call.
    """
    return _resolve(value, 0, set())


def _resolve(value: Any, depth: int, seen: set[int]) -> Any:
    if type(value) is Pending:
        value = value.result()
    if depth > _MAX_DEPTH or value is None or isinstance(value, (str, int, float, bytes)):
        return value
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        if id(value) in seen:
            return value
        seen.add(id(value))
    if isinstance(value, dict):
        rekey = False
        for key, item in list(value.items()):
            if type(key) is Pending:
                rekey = True
            new = _resolve(item, depth + 1, seen)
            if new is not item:
                value[key] = new
        if rekey:
            pairs = [(_resolve(k, depth + 1, seen), v) for k, v in value.items()]
            value.clear()
            value.update(pairs)
        return value
    if isinstance(value, list):
        for i, item in enumerate(value):
            new = _resolve(item, depth + 1, seen)
            if new is not item:
                value[i] = new
        return value
    if isinstance(value, (tuple, set, frozenset)):
        items = [_resolve(item, depth + 1, seen) for item in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        if isinstance(value, tuple):
            if hasattr(type(value), "_fields"):  # namedtuple
                return type(value)(*items)
            return tuple(items)
        if isinstance(value, set):
            value.clear()
            value.update(items)
            return value
        return frozenset(items)
    return value


_json_hook_installed = False


def install_json_hook() -> None:
    """Let ``json.dumps`` serialize Pendings in this process (they are resolved first).

    json's C encoder checks real types, so a Pending reaches JSONEncoder.default; we
    extend that default to return the Pending's value. Idempotent.
    """
    global _json_hook_installed
    if _json_hook_installed:
        return
    original = json.JSONEncoder.default

    def default(self: json.JSONEncoder, o: Any) -> Any:
        if type(o) is Pending:
            return o.result()
        return original(self, o)

    json.JSONEncoder.default = default  # type: ignore[method-assign]
    _json_hook_installed = True

