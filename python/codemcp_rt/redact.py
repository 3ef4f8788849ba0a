"""Redaction of secrets in reports: by key and by value, with the rules of redact_rules.py.

The gateway's src/catalog/redact.c applies the same rules (generated from the same file); the
corpus test tests/python/test_redact.py checks both sides give the same answers.
"""

from __future__ import annotations

import re
from typing import Any

from codemcp_rt.redact_rules import (KEY_VALUE_PATTERN, REDACTED, SECRET_PAIRS, SECRET_WORDS,
                                     VALUE_PATTERNS)

_WORDS = frozenset(SECRET_WORDS)
_PAIRS = frozenset(tuple(p) for p in SECRET_PAIRS)
_VALUES = [re.compile(p) for _, p in VALUE_PATTERNS]
_KV = re.compile(KEY_VALUE_PATTERN)
_PLAIN = re.compile(r"-?[0-9][0-9.]*|true|false|null|None|True|False")
_PROSE = re.compile(r"[a-z]{1,7}")  # "needs_auth: the server ..." is a sentence, not a secret
_MAX_STR = 200
# The patterns cost O(n^2) on a long run of identifier characters (re took ~10 s for 60k
# "xxx…" and never checks for signals meanwhile, so a run could not even be interrupted):
# redact() looks at _MAX_STR + _MARGIN characters of a string only (as src/catalog/redact.c), and
# redact_text() keeps the first and the last _MAX_TEXT // 2 characters of a longer text
# (a traceback's last line is the exception) and cuts the middle with a marker.
_MARGIN = 512
_MAX_TEXT = 8192
_MAX_DEPTH = 8


def _split_words(key: str) -> list[str]:
    """Lowercase words of key: split on non-alphanumerics, at lower->Upper, and before the last
    capital of a run followed by a lowercase letter ("APIKey" -> api, key). As redact.c."""
    words: list[str] = []
    cur = ""
    n = len(key)
    for i, c in enumerate(key):
        alnum = c.isascii() and c.isalnum()
        boundary = not alnum
        if alnum and cur:
            prev = key[i - 1]
            nxt = key[i + 1] if i + 1 < n else ""
            if (prev.islower() or prev.isdigit()) and c.isupper():
                boundary = True
            elif prev.isupper() and c.isupper() and nxt.islower():
                boundary = True
        if boundary and cur:
            words.append(cur)
            cur = ""
        if alnum:
            cur += c.lower()
    if cur:
        words.append(cur)
    return words[:16]


def is_secret_key(key: str) -> bool:
    """True when a value named ``key`` probably holds a secret."""
    words = _split_words(str(key))
    if any(w in _WORDS for w in words):
        return True
    return any(pair in _PAIRS for pair in zip(words, words[1:]))


def _alnum(c: str) -> bool:
    return c.isascii() and c.isalnum()


def redact_text(text: str) -> str:
    """``text`` with credential-shaped values and secret ``key=value`` pairs replaced."""
    if not isinstance(text, str) or not text:
        return text
    if len(text) > _MAX_TEXT:
        half = _MAX_TEXT // 2
        return "%s…(%d chars cut)…%s" % (redact_text(text[:half]), len(text) - 2 * half,
                                         redact_text(text[-half:]))
    for pat in _VALUES:
        out, pos, search = [], 0, 0
        while True:
            m = pat.search(text, search)
            if not m:
                break
            if m.start() > 0 and _alnum(text[m.start()]) and _alnum(text[m.start() - 1]):
                search = m.start() + 1
                continue
            a, b = m.span(1) if pat.groups else m.span()
            out.append(text[pos:a])
            out.append(REDACTED)
            out.append(text[b:m.end()])
            pos = search = m.end()
            if m.end() == m.start():
                search += 1
        if out:
            text = "".join(out) + text[pos:]
    out, pos, search = [], 0, 0
    while True:
        m = _KV.search(text, search)
        if not m:
            break
        sep = text[m.end(1):m.start(2)]
        prose = "=" not in sep and '"' not in sep and _PROSE.fullmatch(m.group(2))
        if not is_secret_key(m.group(1)) or _PLAIN.fullmatch(m.group(2)) or m.group(2) == REDACTED or prose:
            search = m.start(2)
            continue
        out.append(text[pos:m.start(2)])
        out.append(REDACTED)
        pos = search = m.end(2)
    if out:
        text = "".join(out) + text[pos:]
    return text


def _keep_under_secret_key(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float))


def redact(value: Any, _depth: int = 0) -> Any:
    """A copy of ``value`` fit for reports: values under secret keys at any depth become
    ``"***"`` (numbers, booleans and None stay), credential-shaped text is replaced inside
    every string, long strings are shortened and deep nesting is cut. Never raises."""
    try:
        if _depth > _MAX_DEPTH:
            return "…"
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                ks = k if isinstance(k, str) else str(k)
                if is_secret_key(ks) and not _keep_under_secret_key(v):
                    out[ks] = REDACTED
                else:
                    out[ks] = redact(v, _depth + 1)
            return out
        if isinstance(value, (list, tuple)):
            items = [redact(v, _depth + 1) for v in value[:50]]
            if len(value) > 50:
                items.append("…(%d more)" % (len(value) - 50))
            return items
        if isinstance(value, str):
            n = len(value)
            if n > _MAX_STR + _MARGIN:
                return redact_text(value[:_MAX_STR + _MARGIN])[:_MAX_STR] + "…(%d chars)" % n
            value = redact_text(value)
            if len(value) > _MAX_STR:
                return value[:_MAX_STR] + "…(%d chars)" % len(value)
            return value
        if value is None or isinstance(value, (bool, int, float)):
            return value
        text = redact_text(repr(value)[:_MAX_STR + _MARGIN])
        return text if len(text) <= _MAX_STR else text[:_MAX_STR] + "…"
    except Exception:  # a report helper must never fail the caller
        return "<unprintable>"
