"""searchwords — the words of search_tools() ranking: tokens, stop words, stems, typos.

Splits text into words (snake_case, camelCase, kebab-case and digit runs), drops stop words and
maps each word to its Porter stem (codemcp_rt.stem), cached; and tells whether two words are one
typo apart. codemcp_rt.search builds its index and reads queries with these; this module ranks
nothing and knows no catalog. Stdlib only; never raises for any str.
"""

from __future__ import annotations

import re

from codemcp_rt.stem import stem as _porter

# -- words -----------------------------------------------------------------------------

# A word: an acronym ("HTTP" in HTTPServer), a capitalised or lowercase run, or digits; so
# snake_case, camelCase, kebab-case and "v2" all split.
_TOKEN = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_STEMS: dict[str, str] = {}

_STOP = frozenset(
    "a an the of for to in on with and or by from is are be been was were this that these those "
    "it its as at can could you your we our us please want would like need some any there their "
    "them they into onto how do does did doing done what which whose about using use via "
    "just also so then than too very really me let lets i'd i'm it's that's here now "
    "should will shall may might must have has had get got out up off back away down over again "
    "still only ever even already yet".split()
)
# the words of exclusions ("besides me"; what they exclude is negated below)
_STOP_MORE = frozenset("besides except excluding".split())
# Kept although they look like stop words: "me"/"my"/"i" mean the authenticated user, "get"
# is a verb of APIs; they are taken out of _STOP again below.
_KEEP = frozenset("me my mine i get".split())
_STOP = _STOP - _KEEP
_Q_STOP = _STOP | _STOP_MORE  # a query's stop words


def stem(w: str) -> str:
    """The stem of one lowercase word (cached)."""
    st = _STEMS.get(w)
    if st is None:
        st = _porter(w)
        if len(_STEMS) < 200000:
            _STEMS[w] = st
    return st


def words(text: str) -> list[str]:
    """Lowercase stems of ``text``: snake/camel/kebab case and digit runs split, stop words
    dropped."""
    out = []
    for raw in _TOKEN.findall(text):
        w = raw.lower()
        if w in _STOP:
            continue
        out.append(stem(w))
    return out


def _deletes(w: str) -> list[str]:
    return [w[:i] + w[i + 1:] for i in range(len(w))]


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are one typo apart: a letter added, dropped, replaced, or two
    neighbours swapped."""
    if a == b or abs(len(a) - len(b)) > 1:
        return a == b
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        return a[i + 1:] == b[i + 1:] or (a[i + 2:] == b[i + 2:] and a[i:i + 2] == b[i:i + 2][::-1])
    return a[i + 1:] == b[i:] if len(a) > len(b) else a[i:] == b[i + 1:]


__all__ = ["stem", "words"]
