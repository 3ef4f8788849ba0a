"""search — the ranking behind search_tools(): words, synonyms and a BM25F index.

A query is a task in a person's words ("who starred octocat/hello-world?"); a document is
one SDK function with its fields. Ranking, measured on the query sets of tests/data/catalog
(bench/catalog.mjs, bench/catalog_rank.py; tuned on every set but the blind one, heldout8.json,
in even/odd halves; the thesaurus was written from the catalog, not from any set; the weights
below are checked by bench/rank_learn.py, coordinate ascent on one half scored on the other):

* words (codemcp_rt.searchwords): snake_case, camelCase, kebab-case and digit runs split, stop
  words dropped, Porter stems (codemcp_rt.stem), so "invitation"/"invite" and "reviewers"/"review" meet;
* fields, BM25F: the tool's name words count most, then its summary, the opening of its
  description, its parameter names and enum values, the argument docs, the rest of the
  description and the server name; each field's term frequency is normalised by its length
  (BM25's b), then the fields are summed and saturated once (k1);
* the query side: each word stands for itself, its synonyms from a table of the verbs and
  nouns of APIs (issue/bug/ticket, create/open/new/add, delete/remove/forget, repo/
  repository, ...), longer words it starts ("notif" -> notification) and, for an unknown
  word, its one-typo neighbours; values in the query (owner/repo, file.txt, numbers, quoted
  text) count little, but a file name hints at files and a "who" question at people;
* a thesaurus (codemcp_rt.thesaurus, how people say the catalog's own verbs and nouns): "pause"
  reaches disable, "machine key" deploy key, below an exact match, longer phrases first;
* a function whose name has words the query does not mention, or that matches few of the
  query's words, is ranked lower ("create an issue" prefers issues_create to
  issues_create_comment); a query without a verb asks for a listing;
* intent: a function reads or changes, by the first verb of its name (list/get/check... or
  create/delete...), else by the SDK's own mutation flag (sdkgen/mutation.c: "meetingStatus" has
  no verb; measured, the flag over a name's verb loses: a POST that reads is common); a query asks to read (a question, a reading verb, no verb) or to change (any
  other verb); a function of the other kind keeps _INTENT. An imperative's first word unknown to
  the catalog ("slap a label on it") is a verb: no listing is implied;
* phrasing: a phrasal verb of the table with its object in between ("take the label off") is
  read as the phrase; the word after a negation ("without merging") counts _NEG; a clause after
  the task ("so nobody can force push", "to merge my branch") counts _CLAUSE; text after
  "saying"/"called" is a value; "who" questions also reach agent nouns (watch -> watcher);
  possessives ("my PR") count less than "me";
* sixth pass (tuned on every set, checked on the held-out halves): an imperative's first word
  before its object's determiner is a verb ("paste this snippet"; a change unless it reads or
  asks "give me"); an aside after " - " or "(" is a clause; "no X" negates X and "besides me" the
  user's own; a two-word thesaurus phrase may have two words in between ("stop people from
  commenting"); "#77" or one number right after the verb hints at an issue or pull request; a
  change adds or takes away (polarity of the first verb: "assign" is not remove_assignees,
  _OPPOSITE); "let" is a permission; a "where" question or "across"/"anywhere" hints at a search;
  what follows "remember that" is a value; a typo is one edit; get_all_ names list; a word the
  catalog does not know after a verb or "to"/"of" ("kick mallory out", "add carol to") hints at a
  person (_PERSON_HINT);
* seventh pass: a verb of the table that is an everyday noun too (file, open, run, record, ...)
  is a verb only as the task's first word (_NOUN_VERB: "the file tree" creates nothing); a
  CONSTANT_CASE identifier is a value named by its last word (NODE_VERSION is a version); a
  change's every/all is a quantity, not a listing; "left" remains only after have/has;
* structure: adjacent query words found side by side in a name, summary or the description's
  opening rank a function higher (_PAIR).

The index is built once per catalog (some tens of ms per 1,000 functions); a search costs
well under 2 ms at 1,200 functions. Stdlib only; never raises for any str.
"""

from __future__ import annotations

import bisect
import math
import re
from typing import Any

from codemcp_rt import thesaurus as _thesaurus
from codemcp_rt import verbs as _verbs
from codemcp_rt.searchwords import _KEEP, _Q_STOP, _STOP, _TOKEN, _deletes, _one_edit, stem, words

# -- the vocabulary of APIs ------------------------------------------------------------------

# Phrases that are one thing in an API (matched on the lowercase query before splitting).
_PHRASE_MAP = {
    "pull request": "pull", "pull requests": "pull", "merge request": "pull", "merge requests": "pull",
    "code snippet": "gist", "rate limit": "rate limit", "knowledge graph": "graph", "sign in": "login",
    "log in": "login", "set up": "create", "kick off": "dispatch", "thumbs up": "add reaction",
    "thumbs-up": "add reaction", "thumbs down": "add reaction", "throw away": "delete", "get rid of": "delete",
    "clean up": "delete", "take off": "remove", "kick out": "remove", "at once": "multiple", "in one go": "multiple",
    "look up": "get", "find out": "get",
    "what changed": "compare", "how many": "", "how much": "", "web hook": "webhook", "check run": "check",
    "make sure": "check", "turn on": "enable", "turn off": "disable", "switch on": "enable",
    "switch off": "disable", "hand over": "transfer", "sum up": "sum", "add up": "sum", "send back": "echo", "say back": "echo",
    "repeat back": "echo", "read back": "echo",
    # "calls do I have left" is what remains; "the linter left", "he left the company" are not
    "have left": "remaining", "has left": "remaining", "are left": "remaining", "is left": "remaining",
}
# A phrasal verb of the table with its object in between ("take the bug label off", "kick bob
# out of the org"): up to three words may separate the verb from its particle.
_SPLIT_PARTICLES = frozenset("off out up down on away over back".split())
_SPLIT = re.compile(r"\b(" + "|".join(sorted({k.split()[0] for k in _PHRASE_MAP if len(k.split()) == 2
                                               and k.split()[1] in _SPLIT_PARTICLES})) +
                    r")((?:\s+(?!(?:off|out|up|down|on|away|over|back)\b)[\w'/.#@-]+){1,3}?)\s+(" +
                    "|".join(sorted(_SPLIT_PARTICLES)) + r")\b")


def _split_phrase(m: re.Match[str]) -> str:
    k = m.group(1) + " " + m.group(3)
    return m.group(0) if k not in _PHRASE_MAP else k + m.group(2)


_PHRASES = re.compile(r"\b(?:" + "|".join(sorted((re.escape(k) for k in _PHRASE_MAP), key=len, reverse=True)) + r")\b")

# Groups of words that mean the same thing in an API (codemcp_rt.thesaurus.SYNONYM_GROUPS: a
# group's first word is its canonical term; "~" marks loose kin).
_SYNONYM_GROUPS = _thesaurus.SYNONYM_GROUPS

# Words that say what to do; a query with none of them asks for a listing. The groups of
# verbs are named by their first word.
_VERB_GROUPS = frozenset("create delete list get update write enable disable".split())
_VERBS = frozenset(
    stem(w)
    for g in [g.lstrip("~") for g in _SYNONYM_GROUPS if g.lstrip("~").split()[0] in _VERB_GROUPS]
    + ["merge fork star follow watch unwatch run cancel approve reject lock unlock move rename block "
       "invite search download upload render mark check remember forget compare assign request review "
       "echo sum dispatch transfer"]
    for w in g.split()
    if w not in _STOP and w not in ("all", "every", "whole", "entire", "which", "new")
)

# What a function does, from the first verb of its name: it reads (list/get/check...) or it
# changes something (create/delete/update/merge...); and what the query asks, from its first
# verb (a question, a reading verb or no verb at all: it reads). A function whose kind is not
# the query's is ranked lower (_INTENT): "approve the PR" prefers pulls_create_review to
# pulls_get_review, "show the pages site" repos_get_pages to repos_update_..._pages_site. The
# verbs are the gateway's (codemcp_rt.verbs, which sdkgen/mutation.c's lists are made from)
# plus the ranking-only ones there.
_READ_OPS = frozenset(stem(w) for w in _verbs.READ_VERBS + _verbs.SEARCH_READ_VERBS
                      if w not in _verbs.SEARCH_NOUNS)
_WRITE_OPS = frozenset(stem(w) for w in
                       _verbs.WRITE_VERBS + _verbs.STRONG_WRITE_VERBS + _verbs.SEARCH_WRITE_VERBS)
_READ_Q = frozenset(stem(w) for w in "get list show see view display fetch find search look read check "
                    "download browse enumerate every retrieve obtain dump export inspect describe explain "
                    "tell lookup locate count".split())
_INTENT = 0.9
# a change adds (create, add, enable, assign, ...) or takes away (delete, remove, disable, ...); a
# function doing the opposite of the query's verb keeps _OPPOSITE
_POLARITY = {stem(w): "+" for w in "create add set enable assign invite follow star watch subscribe attach lock "
             "block pin approve install archive suspend grant give new make open post put upload register "
             "start request accept".split()}
_POLARITY.update({stem(w): "-" for w in "delete remove disable unassign unfollow unstar unwatch unsubscribe "
                  "detach unlock unblock unpin revoke cancel uninstall unarchive unsuspend reject decline dismiss "
                  "deregister stop drop destroy erase purge forget kill terminate kick discard".split()})
_OPPOSITE = 0.85
# an imperative: a first word, then a determiner or a pronoun that opens its object
# (or a singular first word, "on"/"to", then that: "reply on the ticket", "respond to the thread")
_IMPERATIVE = re.compile(r"(?:[a-z]+|[a-z]*[a-rt-z]\s+(?:on|to))\s+(?:a|an|the|this|that|these|those|my|our|your|his|"
                         r"her|their|its|some|every|each|all|me|us|it|them|him)\b")
_IMPERATIVE_ME = re.compile(r"[a-z]+\s+me\b")
_CLAUSE_MARK = re.compile(r"\b(?:so|now that|because|since|when|whenever|once|where|unless|until|while|after|before)\b")
_CLAUSE = 0.6
# an aside: what follows a dash or an opening parenthesis elaborates ("issue 9 - renames, label changes")
_ASIDE = re.compile(r"\s[-\u2013]\s|\s\(")  # (an em dash often carries the task's second half)
_TO_VERB = re.compile(r"\bto\s+([a-z]+)")  # "open a PR to merge my branch": a purpose
# (and what a search looks for: "mentioning segfault", "anything about kubernetes")
_TEXT_MARK = re.compile(r"\b(?:saying|that says|telling (?:them|him|her|everyone|people|us|me)|called|named|titled"
                        r"|with the (?:title|message|text|body)|mentioning|containing|(?<=anything )about"
                        r"|(?<=everything )about|(?<=something )about"
                        r"|(?<=remember )that|(?<=note )that|(?<=noting )that|(?<=record )that)\b")
_NUMBER_HINT = 0.3
_DIGITS = re.compile(r"\d+")
_AFTER_VERB = re.compile(r"^\s*[a-z]+\s+$")  # a number right after the first word
_PAIR = 0.3  # a document without the query's adjacent pairs of words keeps 1 - this
_PAIR_MIN = 0.85
_PAIR_LEAD = 12
_POSSESSIVE = frozenset("my mine our ours".split())
_POSSESSIVE_WEIGHT = 0.5
_SELF = frozenset("me i myself".split())
_SELF_WEIGHT = 0.6
_WHO = re.compile(r"\s*(?:who|whom)\b")
_AGENT_OK = frozenset(stem(w) for w in "contribute collaborate watch follow review assign maintain own star "
                      "sponsor".split())
_AGENT_WEIGHT = 0.8
_WHO_WEIGHT = 0.6
_WHERE = re.compile(r"\s*where\b(?!'s)")
_WHERE_HINT = 0.5
_PERSON = re.compile(r"\b(?:to|of|for|from|kick|add|invite|remove|block|ask|does|did|has|is|follow|unfollow|ban)\s+([a-z]{3,10})\b(?!['/.])")
_PERSON_HINT = 0.3
_ACROSS = re.compile(r"\b(?:across|anywhere|everywhere)\b")
_EXCEPT_WORDS = ("besides", "except", "other than", "apart from", "aside from", "excluding")
# the word or two after a negation ("without merging it", "so nobody can force push")
_NEGATION = re.compile(r"\b(?:without|not|never|nobody|no one|don't|doesn't|didn't|can't|cannot|won't|isn't|aren't"
                       r"|no|" + "|".join(_EXCEPT_WORDS) + ")"
                       r"\s+((?:(?:can|could|will|would|be|been|being|a|an|the|any|ever)\s+)*[\w-]+)")
_NEG = 0.3
_EXCEPT = re.compile(r"\b(?:" + "|".join(_EXCEPT_WORDS) + r")\s+(me|myself|my|mine|i)\b")  # "besides me": not the user's own

# word -> {synonym: weight}.
_SYN_WEIGHT = 0.85
_SYN_SIDE = 0.6
_SYN: dict[str, dict[str, float]] = {}
# Words that are verbs of the table and everyday nouns too ("file a bug" / "the file tree", "open a
# PR" / "open PRs", "workflow runs"): a verb only where an imperative's verb goes (the task's first
# word); elsewhere a noun, with the synonyms of its noun groups only (_SYN_NOUN)
_NOUN_VERB = frozenset(stem(w) for w in "file open record store share leave run start".split())
_SYN_NOUN: dict[str, dict[str, float]] = {}
for _group in _SYNONYM_GROUPS:
    _weak = _group.startswith("~")
    _stems = [stem(w) for w in _group.lstrip("~").split()]
    for _i, _s in enumerate(_stems):
        _m = _SYN.setdefault(_s, {})
        for _j, _x in enumerate(_stems):
            if _x == _s:
                continue
            _wt = _SYN_WEIGHT if (_i == 0 or _j == 0) and not _weak else _SYN_SIDE
            if _m.get(_x, 0.0) < _wt:
                _m[_x] = _wt
            if _s in _NOUN_VERB and _group.lstrip("~").split()[0] not in _VERB_GROUPS | {"run"}:
                _n = _SYN_NOUN.setdefault(_s, {})
                if _n.get(_x, 0.0) < _wt:
                    _n[_x] = _wt

# -- the thesaurus: everyday words for the catalog's own vocabulary -----------------------------

# A phrase of several words keeps its words (at _THES_KEPT) and gains one token per word of its
# API term (at _THES_PHRASE_WEIGHT; tokens pair like the term's words); a single word reaches the
# term's words at _THES_WEIGHT; an everyday verb whose term is a catalog verb is a verb.
# a single everyday word: 0.7 until the seventh pass; 0.9 is the mean of what bench/rank_learn.py
# picked on each half (1.0 on the even halves, 0.875 on the odd ones), the one weight both agreed on
_THES_WEIGHT = 0.9
_THES_PHRASE_WEIGHT = 0.8  # a phrase of several words is less ambiguous than one word
_THES_KEPT = 0.5
_THES_GAP = 2  # a two-word phrase may have this many words in between ("stop people from commenting")
_THES_WORD_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_THES = _thesaurus.compile_table(stem, _THES_WEIGHT, _THES_PHRASE_WEIGHT,
                                 lambda w: "w" if w in _WRITE_OPS else "r" if w in _READ_OPS else "")
_THES_PHRASES = _THES.phrases  # first stem -> [(stems, term no.)], longer first
_THES_TERMS = _THES.terms  # term no. -> per word of the term {index stem: weight}
_THES_TOKS = _THES.toks  # term no. -> its tokens, space-separated
_THES_TOKEN = _THES.token  # token -> {index stem: weight}
_THES_VERB = _THES.verb  # token -> "r"/"w" when its term is a verb of the catalog


# -- values in a query -------------------------------------------------------------------------

# Things a person names rather than asks for: owner/repo or a path, a file name, a quoted
# string, an @handle, #12 or a bare number. Their words count _VALUE_WEIGHT; a file name
# hints at files, a path at paths.
_VALUE = re.compile(r"""(?x)
    "[^"]{1,200}" | '[^']{1,200}'(?!\w)      # quoted
  | (?<![\w/])[\w.*~-]+(?:/[\w.*~-]+)+/?     # owner/repo, a/b/c.txt
  | (?<![\w.])[\w*~-]+\.[A-Za-z][A-Za-z0-9]{0,4}\b   # notes.txt, *.log
  | [@#]\w+                                  # @handle, #12
  | \b(?=[a-z]*\d)\w+\b                       # 42, abc123, v2
""")
_VALUE_WEIGHT = 0.2
_ASPECT = frozenset("start begin try keep continue stop quit cease".split())
_ASPECT_END = frozenset("stop quit cease".split())
_ASPECT_WEIGHT = 0.3
_UNDO_WEIGHT = 0.6  # "stop watching": undoing what the gerund did
_QUESTION_VERB = 0.35  # a verb in a question ("which PRs are open?")
_LATER_VERB = 0.9  # a verb after the first ("open a PR to merge my branch")
_QUESTION = re.compile(r"\s*(?:who|whom|whose|what|what's|which|when|where|is|are|was|were|did|does|has|have|any|"
                       r"how (?:many|much|big|large|old|often))\b")
_REQUEST = re.compile(r"\s*(?:can|could|would|will) (?:you|i|we)\b|\s*please\b|\s*how (?:do|can|should) (?:i|we)\b")
_FILE_HINT = 0.5

# -- fields ------------------------------------------------------------------------------------

# (weight, b) per field: b is BM25's length normalisation within the field.
_FIELDS = {
    "name": (4.5, 0.3),
    "summary": (1.6, 0.3),
    "lead": (0.33, 0.6),
    "args": (0.35, 0.4),
    "enum": (1.0, 0.3),
    "argdoc": (0.12, 0.7),
    "body": (0.08, 0.75),
    "server": (0.8, 0.0),
}
_K1 = 1.6
_LEAD_CHARS = 400
_BODY_CHARS = 1500
_PREFIX_WEIGHT = 0.55
_PREFIX_KNOWN = 0.3  # for a word the catalog has itself ("work" -> "workflow" is less likely meant)
_FUZZY_WEIGHT = 0.5
_IMPLICIT_WEIGHT = 0.5
_SINGULAR_LIST = 0.4  # of the implicit listing, "list" when the query names one thing
_PLURAL_GET = 0.6  # "get" when it names several
_PLURAL_HINT = 0.125
_PLURAL_READ = 0.25  # the same when the query reads ("show the open PRs")  # "list" for a query with a verb and a plural noun
_MAX_QUERY_CHARS = 2000
_MAX_QUERY_WORDS = 32
_Q_BASE = 0.67  # a document matching few of the query's words keeps this share
_N_BASE = 0.15  # a function whose name words the query does not mention keeps this share
_COVER_IDF_POW = 0.5  # name words weigh idf**this in the coverage
_COVER_FLOOR = 0.35  # a query word weighted this or more covers a name word fully

_CONSTANT = re.compile(r"(?<![\w'\"])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![\w'\"])")
_QUANTIFIERS = frozenset(stem(w) for w in "every all whole entire each".split())
_LET = re.compile(r"\blet\b(?!'s| me know| us know)")
_HYPHEN_PREFIX = re.compile(r"\b(re|un|de|pre)-(?=[a-z])")
_LITERAL = re.compile(r"Literal\[([^\]]*)\]")
_URL = re.compile(r"\(?https?://\S+|`application/[^`]*`|\[([^\]]*)\]\([^)]*\)")


def _doc_fields(doc: str, summary: str) -> tuple[str, str, str]:
    """(lead, argdoc, body) of a generated docstring: the description's opening, the Args
    section and the rest, with links and media types taken out."""
    doc = _URL.sub(lambda m: m.group(1) or " ", doc)
    head, sep, args = doc.partition("\n    Args:\n")
    if not sep:
        head, args = doc, ""
    head = head.strip()
    if summary and head.startswith(summary):
        head = head[len(summary):]
    head = head.strip()
    return head[:_LEAD_CHARS], args[:_BODY_CHARS], head[_LEAD_CHARS:_BODY_CHARS]


class Index:
    """The search index of one catalog: ``names`` (function names, in catalog order) and
    ``info`` (name -> {"server", "tool", "summary", "doc", "params", "signature"})."""

    def __init__(self, names: list[str], info: dict[str, dict[str, Any]]) -> None:
        self.names = names
        self.info = info
        self.name_words: list[frozenset[str]] = []
        self.kinds: list[str] = []  # "r" reads, "w" changes, "" unknown
        self.polarity: list[str] = []  # of a change: "+" adds or turns on, "-" takes away or undoes
        docs_fields: list[dict[str, list[str]]] = []
        for fn in names:
            it = info[fn]
            summary = str(it.get("summary") or "")
            lead, argdoc, body = _doc_fields(str(it.get("doc") or ""), summary)
            enums = " ".join(_LITERAL.findall(str(it.get("signature") or "")))
            f = {
                "name": words(str(it.get("tool") or fn)),
                "summary": words(summary),
                "lead": words(lead),
                "args": words(" ".join(p for p in (it.get("params") or ()) if p != "timeout_ms")),
                "enum": words(enums),
                "argdoc": words(argdoc),
                "body": words(body),
                "server": words(str(it.get("server") or "")),
            }
            nm = f["name"]
            for k in range(len(nm) - 1):
                if nm[k] == "get" and nm[k + 1] == "all":  # get_all_topics lists the topics
                    f["name"] = nm[:k] + ["list"] + nm[k + 2:]
                    break
            self.name_words.append(frozenset(f["name"]))
            kind = ""
            for w in f["name"]:
                if w in _READ_OPS or w in _WRITE_OPS:
                    kind = "r" if w in _READ_OPS else "w"
                    self.polarity.append(_POLARITY.get(w, ""))
                    break
            else:
                self.polarity.append("")
            mutation = it.get("mutation")
            if not kind and isinstance(mutation, bool):  # no verb in the name: the SDK's flag
                kind = "w" if mutation else "r"
            self.kinds.append(kind)
            docs_fields.append(f)
        # adjacent word pairs of the name and the summary ("workflow run", "deploy key")
        self.pairs: dict[tuple[str, str], set[int]] = {}
        for i, f in enumerate(docs_fields):
            for seq in (f["name"], f["summary"], f["lead"][:_PAIR_LEAD]):
                for a, b in zip(seq, seq[1:]):
                    if a != b:
                        self.pairs.setdefault((a, b), set()).add(i)
        n = max(1, len(names))
        avg = {k: max(1.0, sum(len(d[k]) for d in docs_fields) / n) for k in _FIELDS}
        self.postings: dict[str, dict[int, float]] = {}
        for i, f in enumerate(docs_fields):
            tf: dict[str, float] = {}
            for k, (weight, b) in _FIELDS.items():
                toks = f[k]
                if not toks or not weight:
                    continue
                norm = 1.0 - b + b * len(toks) / avg[k]
                counts: dict[str, int] = {}
                for w in toks:
                    counts[w] = counts.get(w, 0) + 1
                for w, c in counts.items():
                    tf[w] = tf.get(w, 0.0) + weight * c / norm
            for w, v in tf.items():
                # saturated once over the summed fields (BM25F)
                self.postings.setdefault(w, {})[i] = v * (_K1 + 1.0) / (v + _K1)
        self.idf = {w: math.log(1.0 + (n - len(p) + 0.5) / (len(p) + 0.5)) for w, p in self.postings.items()}
        self.name_word_weight = {w: self.idf[w] ** _COVER_IDF_POW for nw in self.name_words for w in nw}
        self.name_idf = [sum(self.name_word_weight[w] for w in nw) or 1.0 for nw in self.name_words]
        self.vocab = sorted(self.postings)
        self._del_index: dict[str, list[str]] | None = None  # built on the first typo
        self._thes_extra: dict[str, dict[str, float]] = {}  # this query's single words' API terms
        self._thes_verbs: dict[str, str] = {}  # of those, the ones whose term is a verb: "r"/"w"
        self._thes_kept: set[str] = set()  # this query's words that are part of a thesaurus phrase
        self._nouns: set[str] = set()  # this query's _NOUN_VERB words read as nouns

    @property
    def del_index(self) -> dict[str, list[str]]:
        if self._del_index is None:
            d_index: dict[str, list[str]] = {}
            for w in self.vocab:
                if len(w) >= 4:
                    for d in _deletes(w):
                        d_index.setdefault(d, []).append(w)
            self._del_index = d_index
        return self._del_index

    def _expand(self, w: str) -> dict[str, float]:
        """Index words a query word stands for, with their weights."""
        out: dict[str, float] = {}
        tok = _THES_TOKEN.get(w)
        if tok is not None:  # a phrase of the thesaurus: the API term's words
            return {t: v for t, v in tok.items() if t in self.postings}
        if w in self.postings:
            out[w] = 1.0
        for s, wt in (_SYN_NOUN if w in self._nouns else _SYN).get(w, {}).items():
            if s in self.postings and out.get(s, 0.0) < wt:
                out[s] = wt
        for t, wt in self._thes_extra.get(w, {}).items():
            if t in self.postings and out.get(t, 0.0) < wt:
                out[t] = wt
        if len(w) >= 3 and not w.isdigit():  # partial words: "repo" finds "repository", "notif" "notification"
            i = bisect.bisect_left(self.vocab, w)
            pw = _PREFIX_WEIGHT if w not in self.postings else _PREFIX_KNOWN
            k = 0
            while i < len(self.vocab) and self.vocab[i].startswith(w) and k < 24:
                v = self.vocab[i]
                if v != w and v not in out and pw:
                    out[v] = pw
                i += 1
                k += 1
        if not out and len(w) >= 4:  # one typo: a deletion on either side
            cands: set[str] = set(self.del_index.get(w, ()))
            for d in _deletes(w):
                if d in self.postings:
                    cands.add(d)
                cands.update(self.del_index.get(d, ()))
            for v in cands:
                if not _one_edit(w, v):
                    continue  # "tech" and "echo" share "ech" but are two edits apart
                out[v] = _FUZZY_WEIGHT
                for s, wt in _SYN.get(v, {}).items():
                    if s in self.postings and s not in out:
                        out[s] = _FUZZY_WEIGHT * wt
        return out

    def _typo(self, w: str) -> bool:
        """Whether ``w`` is one edit from a word of the catalog."""
        if len(w) < 4:
            return False
        for d in _deletes(w):
            if d in self.postings or any(_one_edit(w, v) for v in self.del_index.get(d, ())):
                return True
        return any(_one_edit(w, v) for v in self.del_index.get(w, ()))

    def _thesaurus(self, q: str) -> str:
        """``q`` with each phrase of several words followed by its term's tokens (its words to
        _thes_kept); a single word's terms go to _thes_extra (for _expand), a verb's kind to _thes_verbs."""
        self._thes_extra = {}
        self._thes_verbs = {}
        self._thes_kept = set()
        ms = list(_THES_WORD_RE.finditer(q))
        if not ms:
            return q
        # words inside values (owner/repo, file names, quoted text) are not the task's words
        vals = [(v.start(), v.end()) for v in _VALUE.finditer(q)]
        st: list[str] = []
        k = 0
        for m in ms:  # both in order
            while k < len(vals) and vals[k][1] <= m.start():
                k += 1
            st.append("" if k < len(vals) and vals[k][0] <= m.start() else stem(m.group(0).replace("'", "")))
        out: list[str] = []
        last = 0
        i = 0
        while i < len(st):
            step = 1
            for ps, tn in _THES_PHRASES.get(st[i], ()):
                n = len(ps)
                if tuple(st[i:i + n]) != ps:
                    # a phrasal verb with its object in between ("shut the runner down")
                    if n != 2 or (ps[1] not in _SPLIT_PARTICLES and not _THES_GAP):
                        continue
                    reach = 5 if ps[1] in _SPLIT_PARTICLES else 2 + _THES_GAP
                    n = next((j - i + 1 for j in range(i + 2, min(i + reach, len(st))) if st[j] == ps[1]), 0)
                    if not n:
                        continue
                if n == 1:
                    extra = self._thes_extra.setdefault(st[i], {})
                    for d in _THES_TERMS[tn]:
                        extra.update(d)
                    kind = _THES_VERB.get(_THES_TOKS[tn].split()[0])
                    if kind:
                        self._thes_verbs[st[i]] = kind
                else:
                    end = ms[i + n - 1].end()
                    out.append(q[last:end])
                    self._thes_kept.update(ps)
                    out.append(" " + _THES_TOKS[tn] + " ")
                    last = end
                    step = n
                break
            i += step
        if not out:
            return q
        out.append(q[last:])
        return "".join(out)

    def _query(self, query: str) -> tuple[list[tuple[str, float]], bool]:
        """(stem, weight) of the query's words, in order, without repeats; and whether the
        query is a question ("who starred it?", "what milestones are open"), which asks to
        read: its verbs then describe a state ("open", "starred") more than an action."""
        # an identifier in CONSTANT_CASE names a thing (a value) by its last word's kind:
        # NODE_VERSION is a version, NPM_TOKEN a token
        q = _CONSTANT.sub(lambda m: "'%s' %s" % tuple(m.group(0).rsplit("_", 1)), query).lower()
        question = bool(_QUESTION.match(q)) or (q.rstrip().endswith("?") and not _REQUEST.match(q))
        q = _SPLIT.sub(_split_phrase, q)
        q = _PHRASES.sub(lambda m: " " + _PHRASE_MAP[m.group(0)] + " ", q)
        q = _HYPHEN_PREFIX.sub(r"\1", q)  # re-run -> rerun, un-archive -> unarchive
        q = _LET.sub("allow", q)  # "only let collaborators comment": a permission
        q = self._thesaurus(q)
        out: dict[str, float] = {}
        verbs = 0
        self._plural = False
        self._intent = "r" if question else ""
        self._polarity = ""
        # an imperative's first word is its verb even when the catalog never uses it ("slap a
        # label on it", "cut a branch"): the query then asks for no listing
        toks = _TOKEN.findall(q)
        first = next((r for r in toks if r not in _STOP), "")
        lead = next((k for k, r in enumerate(toks) if r not in _STOP and r not in _SELF), len(toks))
        self._nouns = {stem(r) for r in toks[lead + 1:] if stem(r) in _NOUN_VERB} - {stem(toks[lead]) if lead < len(toks) else ""}
        self._odd_verb = (not question and bool(first) and not first.isdigit() and stem(first) not in _VERBS
                          and stem(first) not in self.postings and first not in _THES_TOKEN
                          and stem(first) not in self._thes_extra
                          and not _VALUE.match(q.lstrip()))
        if self._odd_verb:
            self._intent = "?"
            if _IMPERATIVE.match(q.lstrip()):  # "slap a label on it" changes, "hand me the logs" reads
                self._intent = "r" if _IMPERATIVE_ME.match(q.lstrip()) and first != "let" else "w"
        elif (not question and first and not first.isdigit() and stem(first) not in _VERBS
              and first not in _THES_TOKEN and stem(first) not in self._thes_verbs
              and _IMPERATIVE.match(q.lstrip())):
            # "paste this snippet", "give my buddy push rights", "point our site at ...": a first
            # word followed by its object's determiner is the imperative's verb, whatever else the
            # catalog uses it for; a verb that does not read changes something
            self._odd_verb = True
            # "give me a sample": asking to be given something reads
            self._intent = "r" if stem(first) in _READ_Q or (_IMPERATIVE_ME.match(q.lstrip()) and first != "let") else "w"

        scale = 1.0
        tverbs = {**self._thes_verbs, **_THES_VERB} if self._thes_verbs else _THES_VERB
        kept = self._thes_kept
        negated = {stem(x) for m in _NEGATION.finditer(q) for x in _TOKEN.findall(m.group(1))
                   if x not in _STOP} - _KEEP
        negated.update(stem(m.group(1)) for m in _EXCEPT.finditer(q))

        def plain(text: str) -> None:
            nonlocal verbs
            raws = [r for r in _TOKEN.findall(text) if r not in _Q_STOP]
            for k, raw in enumerate(raws):
                w = stem(raw)
                noun = w in self._nouns
                if (raw.endswith("s") and not raw.endswith(("ss", "us", "is")) and len(raw) > 3
                        and (w not in _VERBS or noun)):
                    self._plural = True  # "branches", "open issues": a listing, likely
                wt = 1.0
                nxt = raws[k + 1] if k + 1 < len(raws) else ""
                if raw in _ASPECT and nxt.endswith("ing") and stem(nxt) in _VERBS:
                    # "start following", "stop watching": the gerund is the action
                    wt = _ASPECT_WEIGHT
                    if raw in _ASPECT_END:  # "stop following" -> unfollow, else a deletion
                        undo = "un" + stem(nxt)
                        if undo not in self.postings:
                            undo = stem("delete")
                        out[undo] = max(out.get(undo, 0.0), _UNDO_WEIGHT)
                elif (w in _VERBS or w in tverbs) and not noun:
                    if question:
                        wt = _QUESTION_VERB
                    elif verbs:
                        wt = _LATER_VERB
                    verbs += 1
                if not self._intent and not noun and (w in _VERBS or w in _WRITE_OPS or w in _READ_Q or w in tverbs):
                    self._intent = "r" if w in _READ_Q else tverbs.get(w, "w")
                    self._polarity = _POLARITY.get(w) or next(
                        (_POLARITY[t] for t in _THES_TOKEN.get(w, ()) if t in _POLARITY), "")
                if w in kept:
                    wt *= _THES_KEPT  # a word of a phrase the thesaurus read: its term says more
                if w in negated:
                    wt *= _NEG  # "close it without merging": not a merge
                if raw in ("who", "whom"):
                    wt *= _WHO_WEIGHT  # the people of a relation: the relation's words say more
                elif raw in _POSSESSIVE:
                    wt *= _POSSESSIVE_WEIGHT  # "my PR" is a PR, not the authenticated user's endpoint
                elif raw in _SELF:
                    wt *= _SELF_WEIGHT
                out[w] = max(out.get(w, 0.0), wt * scale)

        # a clause after the task ("a webhook that calls my server on push", "... so nobody can
        # force push") says why or when; its words count _CLAUSE of the task's
        # what follows "saying", "called", "titled" is text to send, not words of the task
        main, clause, text = q, "", ""
        m = _TEXT_MARK.search(q)
        if m and any(r not in _STOP for r in _TOKEN.findall(q[:m.start()])):
            main, text = q[:m.start()], q[m.end():]
        starts = [m.start() for m in _CLAUSE_MARK.finditer(main)]
        starts += [m.start() for m in _TO_VERB.finditer(main) if stem(m.group(1)) in _VERBS]
        starts += [m.start() for m in _ASIDE.finditer(main)]
        for at in sorted(starts):
            if any(r not in _STOP for r in _TOKEN.findall(main[:at])):
                main, clause = main[:at], main[at:]
                break
        for part, mult in ((main, 1.0), (clause, _CLAUSE)):
            scale = mult
            pos = 0
            for m in _VALUE.finditer(part):
                plain(part[pos:m.start()])
                v = m.group(0)
                for w in words(v):
                    out.setdefault(w, _VALUE_WEIGHT * mult)
                if re.search(r"\.[a-z][a-z0-9]{0,4}$", v) and not v.startswith(("'", '"', "@", "#")):
                    out.setdefault(stem("file"), _FILE_HINT * mult)
                elif _NUMBER_HINT and (v.startswith("#") and v[1:].isdigit()
                                       or v.isdigit() and _AFTER_VERB.search(part[:m.start()])
                                       and len(_DIGITS.findall(q)) == 1):
                    # "#77", "close 230": a number where an object goes is an issue or a pull
                    # request ("add 5 and 7": numbers to work on)
                    for h in ("issue", "pull"):
                        out.setdefault(stem(h), _NUMBER_HINT * mult)
                pos = m.end()
            plain(part[pos:])
        for w in words(text):
            out.setdefault(w, _VALUE_WEIGHT)
        if _PERSON_HINT:
            for m in _PERSON.finditer(main):
                w = m.group(1)
                if (w not in _Q_STOP and stem(w) not in self.postings and stem(w) not in _SYN
                        and w not in _THES_TOKEN and not self._typo(stem(w))):
                    # "kick mallory out", "add carol to the team": a name the catalog does not know
                    out.setdefault(stem("user"), _PERSON_HINT)
                    break
        if _WHERE_HINT and (_WHERE.match(q) or _ACROSS.search(q)):
            # "where in the code is X called", "bugs mentioning segfault across github": a search
            out.setdefault(stem("search"), _WHERE_HINT)
        if _WHO.match(q):
            # "who starred/watches/contributed ...": the people who do it are a list of
            # agent nouns (watcher, contributor, follower, reviewer, assignee)
            for w in list(out):
                if w in _VERBS or w in _WRITE_OPS or w in _AGENT_OK:
                    for suf in ("er", "or", "ee"):
                        a = stem(w + suf) if not w.endswith("e") else stem(w[:-1] + suf)
                        if a != w and a in self.postings and a not in out:
                            out[a] = _AGENT_WEIGHT
            self._plural = True
        if not self._intent:
            self._intent = "r"  # no verb: a listing
        if self._intent == "?":
            self._intent = ""
        return list(out.items())[:_MAX_QUERY_WORDS], question

    def search(self, query: str, limit: int, server: str | None = None) -> list[int]:
        """Document numbers for ``query``, best first, at most ``limit``."""
        qws, question = self._query(query[:_MAX_QUERY_CHARS])
        if not qws or limit <= 0:
            return []
        qwords = [w for w, _ in qws]
        exps = [self._expand(w) for w in qwords]
        if self._intent == "w":
            # a change's "every"/"all" says how much ("strip every label off"), not "list"
            exps = [{t: v for t, v in e.items() if t == w or t == "all"} if w in _QUANTIFIERS else e
                    for w, e in zip(qwords, exps)]
        qweights = [wt for _, wt in qws]
        # A synonym or a longer word never counts for more than the word the user typed
        # (a rare synonym would otherwise outweigh it: "pull" -> "pr" in fork_pr_workflows).
        caps = [self.idf.get(w) for w in qwords]
        plural = self._plural
        intent = self._intent
        polarity = self._polarity if intent == "w" else ""
        tverbs = self._thes_verbs
        if question or not (self._odd_verb or any((w in _VERBS or w in _THES_VERB or w in tverbs) and w not in self._nouns
                                                  for w in qwords)):  # "teams in the org": a listing
            implicit = {"list": _IMPLICIT_WEIGHT * (1.0 if plural else _SINGULAR_LIST),
                        "get": _IMPLICIT_WEIGHT * (_PLURAL_GET if plural else 1.0)}
            exps.append({t: v for t, v in implicit.items() if t in self.postings})
            caps.append(None)
            qweights.append(1.0)
            qwords = qwords + ["list"]
        elif plural and "list" in self.postings:
            exps.append({"list": 1.0})
            caps.append(None)
            qweights.append(_PLURAL_READ if intent == "r" else _PLURAL_HINT)
        # how strongly the query asks for each index word (for the name coverage below)
        allq: dict[str, float] = dict.fromkeys(qwords, 1.0)
        for e, qw in zip(exps, qweights):
            for t, wt in e.items():
                v = wt * min(1.0, qw / _COVER_FLOOR)
                if v > allq.get(t, 0.0):
                    allq[t] = v
        # the query's adjacent pairs of words, each as the documents whose name or summary has
        # the two (or words they stand for, strongly) side by side
        pair_docs: list[set[int]] = []
        nplain = len(qws)
        for k in range(nplain - 1):
            if qweights[k] < _PAIR_MIN or qweights[k + 1] < _PAIR_MIN:
                continue
            # a thesaurus phrase's tokens pair as its API term's words ("machine key" -> deploy key)
            t1, t2 = qwords[k] in _THES_TOKEN, qwords[k + 1] in _THES_TOKEN
            if t1 != t2:
                continue  # a phrase's own last word beside its term's first: no pair
            m = 0.0 if t1 else _PAIR_MIN
            e1 = [t for t, wt in exps[k].items() if wt >= m]
            e2 = [t for t, wt in exps[k + 1].items() if wt >= m]
            ds: set[int] = set()
            for a in e1:
                for b in e2:
                    got = self.pairs.get((a, b))
                    if got:
                        ds |= got
            pair_docs.append(ds)
        npairs = len(pair_docs)
        scores: dict[int, float] = {}
        matched: dict[int, float] = {}
        for exp, cap, qw in zip(exps, caps, qweights):
            best: dict[int, float] = {}
            for term, weight in exp.items():
                idf = self.idf[term]
                if weight < 1.0 and cap is not None and idf > cap:
                    idf = cap
                idf *= weight * qw
                for doc, tf in self.postings[term].items():
                    sc = idf * tf
                    if sc > best.get(doc, 0.0):
                        best[doc] = sc
            for doc, sc in best.items():
                scores[doc] = scores.get(doc, 0.0) + sc
                matched[doc] = matched.get(doc, 0.0) + qw
        if server is not None:
            scores = {d: v for d, v in scores.items() if self.info[self.names[d]].get("server") == server}
        nq = sum(qweights)
        nidf = self.name_word_weight
        # Both factors are at most 1, so a document's raw score bounds its final one: take
        # documents by raw score and stop once that bound cannot reach the limit-th best.
        ranked: list[tuple[float, int, int]] = []
        floor = -1.0
        for doc, raw in sorted(scores.items(), key=lambda kv: -kv[1]):
            if raw < floor:
                break
            nw = self.name_words[doc]
            # a name word the query does not ask for costs by its rarity: "repos" in
            # repos_delete_release says less than "reactions" in reactions_delete_for_release
            name_cover = sum(allq.get(w, 0.0) * nidf[w] for w in nw) / self.name_idf[doc] if nw else 0.0
            sc = raw * (_Q_BASE + (1.0 - _Q_BASE) * matched[doc] / nq) * (_N_BASE + (1.0 - _N_BASE) * name_cover)
            if self.kinds[doc] and self.kinds[doc] != intent:
                sc *= _INTENT
            elif polarity and self.polarity[doc] and self.polarity[doc] != polarity:
                sc *= _OPPOSITE  # "assign the bug" is not remove_assignees
            if npairs:
                sc *= 1.0 - _PAIR + _PAIR * sum(doc in ds for ds in pair_docs) / npairs
            ranked.append((-sc, len(self.names[doc]), doc))
            if len(ranked) >= 2 * limit:  # trim now and then; a stale floor only prunes less
                ranked.sort()
                del ranked[limit:]
                floor = -ranked[-1][0]
        ranked.sort()
        return [doc for _, _, doc in ranked[:limit]]


__all__ = ["Index", "words", "stem"]
