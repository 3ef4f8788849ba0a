"""Literal arguments of SDK calls checked against the tool's input schema, before the
program runs.

callcheck.py hands over each call site of an SDK function whose input schema is known
(``__codemcp_schemas__`` of the generated SDK, kept as meta[fn]["input"]). Only what the
program writes literally is judged: constants, and lists / tuples / dicts / sets built
from them. Anything computed (a name, a call, a comprehension, ``**spread``) reads as
"unknown" and matches every schema, so ``{"name": n, "type": "person"}`` is still
checked for its keys while ``n`` is not judged.

Checked: the JSON type (``True`` is not a number; an int is a fine ``number``; a float
with an integral value is a fine ``integer``), enum / const (with "Did you mean" and the
allowed values), required keys of nested objects and of list items, unknown keys next to
a missing required key (the usual misspelling) or where the schema closes the object,
minItems / maxItems, minimum / maximum (and the exclusive forms), minLength / maxLength,
pattern (when Python's ``re`` compiles it), anyOf / oneOf (the closest alternative's
problems are reported), allOf, and ``$ref`` into the same document. Each message names
the argument path (``entities[0].observations``) and says what to write instead.

Stdlib only, no imports from the rest of codemcp_rt: the validator must load alone.
"""

from __future__ import annotations

import ast
import difflib
import keyword
import re
from typing import Any

__all__ = ["UNKNOWN", "literal", "check_value", "param_keys", "fast_types", "fits"]


class _Unknown:
    """A value the program computes: it matches every schema."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "…"


UNKNOWN: Any = _Unknown()

_MAX_ITEMS = 64  # list items checked per list (the rest are not judged)
_MAX_PROBLEMS = 3  # per argument
_MAX_DEPTH = 32
_SHOW_VALUES = 12  # enum values listed in a message
_patterns: dict[str, Any] = {}


# -- literals ------------------------------------------------------------------------


def literal(node: ast.AST, depth: int = 0) -> Any:
    """The Python value ``node`` writes literally, with UNKNOWN for every computed part."""
    t = type(node)
    if t is ast.Constant:
        v = node.value
        return v if type(v) in (str, int, float, bool) or v is None else UNKNOWN
    if depth > _MAX_DEPTH:
        return UNKNOWN
    if t is ast.List or t is ast.Tuple or t is ast.Set:
        out = []
        for e in node.elts:  # type: ignore[attr-defined]
            if type(e) is ast.Starred:
                return UNKNOWN  # [*xs, 1]: the length and items are not known
            out.append(literal(e, depth + 1))
        return out
    if t is ast.Dict:
        d: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values):  # type: ignore[attr-defined]
            if k is None or type(k) is not ast.Constant or type(k.value) is not str:
                return UNKNOWN  # {**spread} or a computed key: any key may be there
            d[k.value] = literal(v, depth + 1)
        return d
    if t is ast.UnaryOp and type(node.op) in (ast.USub, ast.UAdd):  # type: ignore[attr-defined]
        inner = node.operand  # type: ignore[attr-defined]
        if type(inner) is ast.Constant and type(inner.value) in (int, float):
            return -inner.value if type(node.op) is ast.USub else inner.value  # type: ignore[attr-defined]
    return UNKNOWN


# -- parameter names ---------------------------------------------------------------------


def param_keys(schema: dict) -> dict[str, str]:
    """Python parameter name -> schema key, as sdkgen names them (keywords get "_",
    other characters "_"); only names that map back unambiguously."""
    props = schema.get("properties")
    out: dict[str, str] = {}
    if not isinstance(props, dict):
        return out
    seen: dict[str, int] = {}
    for key in props:
        if not isinstance(key, str):
            continue
        name = "".join(c if (c.isascii() and (c.isalnum() or c == "_")) else "_" for c in key) or "_"
        if name[0].isdigit():
            name = "_" + name
        if keyword.iskeyword(name) or keyword.issoftkeyword(name) or name == "__debug__":
            name += "_"
        seen[name] = seen.get(name, 0) + 1
        out[name] = key
    return {n: k for n, k in out.items() if seen[n] == 1}


# Schema keywords that never judge a scalar constant beyond its type.
_INERT = frozenset({"type", "description", "title", "default", "examples", "$schema", "$comment", "deprecated",
                    "readOnly", "writeOnly", "format", "items", "properties", "required", "additionalProperties",
                    "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties"})
_FAST = {"string": (str,), "number": (int, float), "integer": (int,), "boolean": (bool,)}


def fast_types(schema: Any, required: bool) -> frozenset:
    """The Python types of a constant that always pass ``schema`` (a scalar type with no
    enum, bounds or pattern), for callcheck's per-site fast path; empty when the value
    itself has to be looked at. None passes an optional parameter (it means "not given")."""
    if not isinstance(schema, dict) or not set(schema) <= _INERT:
        return frozenset()
    t = schema.get("type")
    types = [t] if isinstance(t, str) else t if isinstance(t, list) else None
    if not types:
        return frozenset()
    out: set = set()
    for x in types:
        if x == "null":
            out.add(type(None))
        elif x in _FAST:
            out.update(_FAST[x])
        elif x not in ("array", "object"):
            return frozenset()
    if not required:
        out.add(type(None))
    return frozenset(out)


# -- certain fits ----------------------------------------------------------------------
# The run-time check (argguard.py) asks this first, once per argument of every SDK call:
# a function compiled once per schema that answers True only when check_value would find no
# problem, and False when it is not sure (check_value then decides and writes the messages).
# About ten times faster than check_value on valid nested data.

_FIT_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
              "null": (type(None),)}
# Keywords fits() understands; any other makes it unsure.
_FIT_KNOWN = frozenset({"type", "properties", "required", "additionalProperties", "items", "enum", "description",
                        "title", "default", "examples", "$schema", "$comment", "deprecated", "readOnly",
                        "writeOnly", "format"})


def fits(schema: Any, required: bool = True) -> Any:
    """A function value -> True when ``value`` certainly fits ``schema`` (False: not sure);
    None fits an optional parameter (it means "not given")."""
    check = _fits(schema, 0)
    return check if required else lambda v: v is None or check(v)


def _unsure(value: Any) -> bool:
    return False


def _fits(schema: Any, depth: int) -> Any:
    if not isinstance(schema, dict) or depth > 16 or not set(schema) <= _FIT_KNOWN:
        return _unsure
    t = schema.get("type")
    enum = schema.get("enum")
    if isinstance(enum, list):
        if not all(type(e) in (str, int, float, bool) or e is None for e in enum):
            return _unsure
        keys = frozenset((type(e), e) for e in enum)
        return lambda v: (type(v), v) in keys
    if t == "object":
        return _fits_object(schema, depth)
    if t == "array":
        items = schema.get("items")
        if items is False:
            return lambda v: type(v) in (list, tuple) and not v
        sub = _fits(items, depth + 1) if isinstance(items, dict) else None
        if sub is None:
            return lambda v: type(v) in (list, tuple) and all(type(x) in (str, int, float, bool) for x in v)
        return lambda v: type(v) in (list, tuple) and all(sub(x) for x in v)
    types = [t] if isinstance(t, str) else t if isinstance(t, list) else None
    if not types or not all(x in _FIT_TYPES for x in types):
        return _unsure
    ok = frozenset(c for x in types for c in _FIT_TYPES[x])  # exact types: True is no integer here
    return lambda v: type(v) in ok


def _fits_object(schema: dict, depth: int) -> Any:
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    subs = {k: _fits(v, depth + 1) for k, v in props.items()}
    required = frozenset(r for r in schema.get("required") or () if isinstance(r, str))
    closed = schema.get("additionalProperties") is False
    if schema.get("additionalProperties") not in (None, True, False):
        return _unsure

    def fits_object(v: Any) -> bool:
        if type(v) is not dict or not required <= v.keys():
            return False
        for k, item in v.items():
            sub = subs.get(k)
            if sub is None:
                if closed or type(k) is not str:
                    return False
                continue
            if not sub(item):
                return False
        return True
    return fits_object


# -- the check -------------------------------------------------------------------------


def check_value(value: Any, schema: Any, root: Any, path: str) -> list[str]:
    """Problems of ``value`` (from literal()) against ``schema``; each names ``path``."""
    out: list[str] = []
    _check(value, schema, root, path, out, 0)
    return out[:_MAX_PROBLEMS]


def _resolve(schema: Any, root: Any) -> Any:
    for _ in range(16):
        if not isinstance(schema, dict):
            return schema
        ref = schema.get("$ref")
        if not isinstance(ref, str):
            return schema
        schema = _pointer(root, ref)
        if schema is None:
            return None
    return None


def _pointer(root: Any, ref: str) -> Any:
    if not ref.startswith("#"):
        return None
    cur = root
    for part in ref[1:].split("/")[1:] if ref != "#" else []:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(cur, dict):
            cur = cur.get(part)
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return None
        if cur is None:
            return None
    return cur


_PY_NAMES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None",
             "array": "list", "object": "dict"}


def _json_type_ok(value: Any, t: str) -> bool:
    vt = type(value)
    if t == "string":
        return vt is str
    if t == "integer":
        return vt is int or (vt is float and value.is_integer())
    if t == "number":
        return vt is int or vt is float
    if t == "boolean":
        return vt is bool
    if t == "null":
        return value is None
    if t == "array":
        return vt is list or vt is tuple  # a tuple at run time is sent as a JSON array
    if t == "object":
        return vt is dict
    return True  # a type we do not know: not ours to judge


def _show(value: Any) -> str:
    if type(value) is list or type(value) is tuple:
        return "a list"
    if type(value) is dict:
        return "a dict"
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return "%s %s" % (type(value).__name__, text)


def _fix_for_type(value: Any, types: list[str]) -> str:
    """What to write instead, when it is obvious."""
    vt = type(value)
    if vt is str and any(t in ("number", "integer") for t in types):
        try:
            num = float(value)
            return " Write the number without quotes: %s." % (value.strip() if num == num else value)
        except ValueError:
            pass
    if vt is bool and any(t in ("number", "integer") for t in types):
        return " True/False are not numbers here: write %d." % int(value)
    if vt in (int, float) and not isinstance(value, bool) and "string" in types:
        return ' Write it as a string: "%s".' % value
    if vt is str and "boolean" in types and value.lower() in ("true", "false"):
        return " Write %s (no quotes)." % value.capitalize()
    if vt is str and "array" in types:
        return " Wrap it in a list: [%r]." % value
    if vt is dict and "array" in types:
        return " Pass a list of such dicts: [{...}]."
    return ""


def _check(value: Any, schema: Any, root: Any, path: str, out: list[str], depth: int) -> None:
    if value is UNKNOWN or depth > _MAX_DEPTH or len(out) >= _MAX_PROBLEMS:
        return
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        if schema is False:
            out.append("`%s` is not allowed here." % path)
        return
    alts = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(alts, list) and alts:
        best: list[str] | None = None
        for alt in alts:
            trial: list[str] = []
            _check(value, alt, root, path, trial, depth + 1)
            if not trial:
                best = None
                break
            if best is None or len(trial) < len(best):
                best = trial
        if best:
            out.extend(best[: _MAX_PROBLEMS - len(out)])
            return
    all_of = schema.get("allOf")
    if isinstance(all_of, list):
        for sub in all_of:
            _check(value, sub, root, path, out, depth + 1)
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        if not _in_enum(value, enum):
            out.append(_enum_problem(path, value, enum))
        return
    if "const" in schema:
        if not _in_enum(value, [schema["const"]]):
            out.append("`%s` must be %r, got %s." % (path, schema["const"], _show(value)))
        return
    t = schema.get("type")
    types = [t] if isinstance(t, str) else [x for x in t if isinstance(x, str)] if isinstance(t, list) else []
    if types and not any(_json_type_ok(value, x) for x in types):
        if not (schema.get("nullable") is True and value is None):
            want = " or ".join("%s (%s)" % (x, _PY_NAMES.get(x, x)) for x in types)
            out.append("`%s` must be %s, got %s.%s" % (path, want, _show(value), _fix_for_type(value, types)))
            return
    vt = type(value)
    if vt is str:
        _check_string(value, schema, path, out)
    elif vt is int or vt is float:
        if vt is not bool:
            _check_number(value, schema, path, out)
    elif vt is list or vt is tuple:
        _check_array(value, schema, root, path, out, depth)
    elif vt is dict:
        _check_object(value, schema, root, path, out, depth)


def _in_enum(value: Any, enum: list) -> bool:
    for e in enum:
        if type(e) is bool or type(value) is bool:
            if type(e) is type(value) and e == value:
                return True
        elif e == value and (type(e) in (int, float)) == (type(value) in (int, float)):
            return True
    return False


def _enum_problem(path: str, value: Any, enum: list) -> str:
    shown = ", ".join(repr(e) for e in enum[:_SHOW_VALUES]) + (", …" if len(enum) > _SHOW_VALUES else "")
    msg = "`%s` must be one of %s; got %r." % (path, shown, value)
    if type(value) is str:
        strings = [e for e in enum if type(e) is str]
        close = difflib.get_close_matches(value, strings, n=1, cutoff=0.6)
        if not close:
            low = {e.lower(): e for e in strings}
            close = [low[value.lower()]] if value.lower() in low else []
        if close:
            msg += " Did you mean %r?" % close[0]
    return msg


def _check_string(value: str, schema: dict, path: str, out: list[str]) -> None:
    lo, hi = schema.get("minLength"), schema.get("maxLength")
    if type(lo) is int and len(value) < lo:
        out.append("`%s` must be at least %d character(s) long, got %d." % (path, lo, len(value)))
    if type(hi) is int and len(value) > hi:
        out.append("`%s` must be at most %d character(s) long, got %d." % (path, hi, len(value)))
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and len(value) <= 10000:
        rx = _patterns.get(pattern)
        if rx is None:
            try:
                rx = re.compile(pattern)
            except (re.error, RecursionError, OverflowError):
                rx = False  # a JS-only construct: not ours to judge
            if len(_patterns) < 256:
                _patterns[pattern] = rx
        if rx and rx.search(value) is None:
            out.append("`%s` must match the pattern %r, got %r." % (path, pattern, value[:60]))


def _num(x: Any) -> bool:
    return type(x) in (int, float)


def _check_number(value: Any, schema: dict, path: str, out: list[str]) -> None:
    lo, hi = schema.get("minimum"), schema.get("maximum")
    xlo, xhi = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if _num(lo) and value < lo:
        out.append("`%s` must be >= %s, got %r." % (path, lo, value))
    elif _num(xlo) and value <= xlo:
        out.append("`%s` must be > %s, got %r." % (path, xlo, value))
    if _num(hi) and value > hi:
        out.append("`%s` must be <= %s, got %r." % (path, hi, value))
    elif _num(xhi) and value >= xhi:
        out.append("`%s` must be < %s, got %r." % (path, xhi, value))


def _check_array(value: list | tuple, schema: dict, root: Any, path: str, out: list[str], depth: int) -> None:
    lo, hi = schema.get("minItems"), schema.get("maxItems")
    if type(lo) is int and len(value) < lo:
        out.append("`%s` needs at least %d item(s), got %d." % (path, lo, len(value)))
    if type(hi) is int and len(value) > hi:
        out.append("`%s` takes at most %d item(s), got %d." % (path, hi, len(value)))
    items = schema.get("items")
    if isinstance(items, (dict, bool)):
        for i, item in enumerate(value[:_MAX_ITEMS]):
            _check(item, items, root, "%s[%d]" % (path, i), out, depth + 1)
            if len(out) >= _MAX_PROBLEMS:
                return


def _check_object(value: dict, schema: dict, root: Any, path: str, out: list[str], depth: int) -> None:
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    required = [r for r in schema.get("required") or () if isinstance(r, str)] if isinstance(
        schema.get("required"), list) else []
    missing = [r for r in required if r not in value]
    extra = [k for k in value if k not in props]
    closed = schema.get("additionalProperties") is False
    if missing or (closed and extra):
        paired: set[str] = set()
        for m in missing:
            guess = _closest(m, extra, len(missing) == 1 and len(extra) == 1)
            if guess is not None:
                paired.add(guess)
                out.append("`%s` has `%s` where the key is `%s`: rename it." % (path, guess, m))
            else:
                out.append("`%s` is missing the required key `%s`%s." % (
                    path, m, " (keys: %s)" % ", ".join(props) if props and len(props) <= 12 else ""))
        if closed:
            for k in extra:
                if k not in paired:
                    close = difflib.get_close_matches(k, list(props), n=1, cutoff=0.6)
                    hint = " Did you mean `%s`?" % close[0] if close else " Keys: %s." % ", ".join(list(props)[:12])
                    out.append("`%s` has no key `%s`.%s" % (path, k, hint))
        if len(out) >= _MAX_PROBLEMS:
            return
    for k, v in value.items():
        sub = props.get(k)
        if sub is not None:
            _check(v, sub, root, "%s.%s" % (path, k), out, depth + 1)
        elif isinstance(schema.get("additionalProperties"), dict):
            _check(v, schema["additionalProperties"], root, "%s.%s" % (path, k), out, depth + 1)
        if len(out) >= _MAX_PROBLEMS:
            return


def _closest(want: str, extra: list[str], only_pair: bool) -> str | None:
    """The unknown key that is most likely a misspelling of the missing key ``want``."""
    if not extra:
        return None
    close = difflib.get_close_matches(want, extra, n=1, cutoff=0.6)
    if close:
        return close[0]
    low = want.lower()
    for k in extra:
        kl = k.lower().replace("_", "")
        if kl and (kl in low or low in kl or kl == low.replace("_", "")):
            return k
    return extra[0] if only_pair else None
