"""stem — the Porter stemmer (M. F. Porter, 1980), for search_tools() ranking.

Maps the forms of an English word to one stem, so "invite", "invitation" and "invited"
meet, as do "reviewer"/"reviews", "followers"/"following", "protection"/"protected".
The stems are not words ("repositori", "collabor"); they only have to agree between a
query and the catalog. British "-isation"/"-ise"/"-yse" spellings are folded to "-ize"
first; -scription/-istration nouns fold to their verbs (subscription -> subscribe), and step 1c
is Porter2's (y -> i only after a consonant: "deploy" meets "deployment"). Pure functions,
stdlib only; never raises for any str.
"""

from __future__ import annotations

_VOWELS = frozenset("aeiou")


def _cons(w: str, i: int) -> bool:
    """Is w[i] a consonant (y after a consonant is a vowel)?"""
    c = w[i]
    if c in _VOWELS:
        return False
    if c == "y":
        return i == 0 or not _cons(w, i - 1)
    return True


def _measure(s: str) -> int:
    """m in [C](VC)^m[V]: the number of vowel-consonant runs."""
    m = 0
    i = 0
    n = len(s)
    while i < n and _cons(s, i):
        i += 1
    while i < n:
        while i < n and not _cons(s, i):
            i += 1
        if i >= n:
            break
        while i < n and _cons(s, i):
            i += 1
        m += 1
    return m


def _has_vowel(s: str) -> bool:
    return any(not _cons(s, i) for i in range(len(s)))


def _double_cons(s: str) -> bool:
    return len(s) >= 2 and s[-1] == s[-2] and _cons(s, len(s) - 1)


def _cvc(s: str) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y (hop, not hoop)."""
    if len(s) < 3:
        return False
    return _cons(s, len(s) - 3) and not _cons(s, len(s) - 2) and _cons(s, len(s) - 1) and s[-1] not in "wxy"


def _replace(w: str, rules: tuple[tuple[str, str], ...], min_m: int) -> str:
    for suffix, rep in rules:
        if w.endswith(suffix):
            stem = w[: len(w) - len(suffix)]
            return stem + rep if _measure(stem) > min_m else w
    return w


_STEP2 = (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
    ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"),
    ("ization", "ize"), ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"),
    ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
    ("logi", "log"),
)
_STEP3 = (("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"),
          ("ful", ""), ("ness", ""))
_STEP4 = ("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion",
          "ou", "ism", "ate", "iti", "ous", "ive", "ize")


# nouns whose Porter stem misses their verb's: "subscript" / "subscrib", "registr" / "regist"
_DERIVED = (("scriptions", "scribe"), ("scription", "scribe"), ("istrations", "ister"), ("istration", "ister"))


def _british(w: str) -> str:
    if w.endswith("isation") or w.endswith("isations"):
        return w.replace("isation", "ization")
    for a, b in (("ising", "izing"), ("ised", "ized"), ("ises", "izes"), ("yse", "yze")):
        if w.endswith(a) and len(w) > len(a) + 3:
            return w[: -len(a)] + b
    return w


def stem(word: str) -> str:
    """The Porter stem of a lowercase word; words of up to 2 letters and digits unchanged."""
    w = word
    if len(w) <= 2 or not w.isalpha():
        return w
    w = _british(w)
    for noun, verb in _DERIVED:  # subscription -> subscribe, registration -> register
        if w.endswith(noun) and len(w) > len(noun) + 2:
            w = w[: -len(noun)] + verb
            break
    if w.endswith("ly") and len(w) > 5 and not w.endswith(("ply", "ally", "ily", "ely")):
        w = w[:-2]  # adverbs: publicly -> public, weekly -> week
    # step 1a: plurals
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    # step 1b: -eed, -ed, -ing
    again = False
    if w.endswith("eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
    elif w.endswith("ed") and _has_vowel(w[:-2]):
        w = w[:-2]
        again = True
    elif w.endswith("ing") and _has_vowel(w[:-3]):
        w = w[:-3]
        again = True
    if again:
        if w.endswith(("at", "bl", "iz")):
            w += "e"
        elif _double_cons(w) and w[-1] not in "lsz":
            w = w[:-1]
        elif _measure(w) == 1 and _cvc(w):
            w += "e"
    # step 1c: y -> i after a consonant that is not the word's first letter (Porter2: "cry" ->
    # "cri", but "deploy" stays, so it meets "deployment"; "key", "relay", "survey" too)
    if w.endswith("y") and len(w) > 2 and w[-2] not in "aeiouy":
        w = w[:-1] + "i"
    w = _replace(w, _STEP2, 0)
    w = _replace(w, _STEP3, 0)
    # step 4: drop a suffix from a long enough stem
    for suffix in _STEP4:
        if w.endswith(suffix):
            st = w[: -len(suffix)]
            if _measure(st) > 1 and (suffix != "ion" or st.endswith(("s", "t"))):
                w = st
            break
    # step 5: a final -e, a final -ll
    if w.endswith("e"):
        st = w[:-1]
        m = _measure(st)
        if m > 1 or (m == 1 and not _cvc(st)):
            w = st
    if w.endswith("ll") and _measure(w) > 1:
        w = w[:-1]
    return w


__all__ = ["stem"]
