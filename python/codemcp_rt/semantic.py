"""semantic — search by meaning beside search by words: the catalog's sentence vectors and the fusion.

codemcp_rt.search ranks a catalog by words (BM25F, stems, synonyms); this module adds the
sentence encoder's view (codemcp_rt.encoder): each function is one sentence ("<name words>.
<summary>. <the description's first sentence>") embedded once, a query is embedded per search,
and the two rankings are fused by rank: a function's score is 1/sqrt(1 + its lexical rank)
plus SEM_WEIGHT times the z-score of its cosine among the catalog's (so the weight does not
depend on how spread one query's cosines are). Lexical leads, meaning reorders and fills in:
measured on the query sets (bench/catalog_rank.py --semantic), a larger weight loses more
top-1 hits on GitHub's sets than it wins anywhere.

Vectors are computed in a background thread (a 1,000-function catalog takes seconds); until
they are ready, and whenever the encoder is missing, search is lexical alone and status()
says so. With a cache directory (outside the sandbox: bench, tools) they are kept on disk,
keyed by the model's digest and a digest of the sentences, so a catalog is embedded once.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from typing import Any

from codemcp_rt import encoder
from codemcp_rt.search import _MAX_QUERY_CHARS  # what lexical search reads of a query, too

SEM_WEIGHT = 0.1  # one z-score of cosine is worth this much of the lexical rank term
LEX_DEPTH = 40  # lexical candidates fused
SEM_DEPTH = 10  # semantic candidates added to them
_FIRST_SENTENCE = re.compile(r"(?<=[.!?])\s")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")


def sentence(fn: str, it: dict[str, Any]) -> str:
    """The one sentence a function is embedded as."""
    name = _CAMEL.sub(r"\1 \2", str(it.get("tool") or fn)).replace("_", " ").replace("-", " ").lower()
    summary = str(it.get("summary") or "").strip()
    head = str(it.get("doc") or "").split("\n    Args:\n")[0].strip()
    if summary and head.startswith(summary):
        head = head[len(summary):].strip()
    first = _FIRST_SENTENCE.split(head, 1)[0][:200] if head else ""
    return ". ".join(p for p in (name, summary, first) if p)


class Vectors:
    """The sentence vectors of one catalog (names in catalog order), ready() once computed."""

    def __init__(self, names: list[str], info: dict[str, dict[str, Any]], cache_dir: str | None = None,
                 background: bool = True) -> None:
        self.names = names
        self.enc = encoder.load()
        self.matrix: Any = None
        self.error = ""
        self._done = threading.Event()
        if self.enc is None:
            self._done.set()
            return
        texts = [sentence(fn, info.get(fn) or {}) for fn in names]
        key = hashlib.sha256("\n".join(texts).encode("utf-8", "surrogatepass")).hexdigest()[:24]
        self._cache = os.path.join(cache_dir, "vectors-%s-%s.npy" % (self.enc.digest, key)) if cache_dir else None
        if background:
            threading.Thread(target=self._build, args=(texts,), name="codemcp-semantic", daemon=True).start()
        else:
            self._build(texts)

    def _build(self, texts: list[str]) -> None:
        np = self.enc.np  # type: ignore[union-attr]
        try:
            if self._cache and os.path.exists(self._cache):
                m = np.load(self._cache)
                if m.shape == (len(texts), self.enc.dim):  # type: ignore[union-attr]
                    self.matrix = m
                    return
            m = self.enc.encode(texts) if texts else np.zeros((0, self.enc.dim), dtype=np.float32)  # type: ignore[union-attr]
            if self._cache:
                os.makedirs(os.path.dirname(self._cache), exist_ok=True)
                tmp = self._cache + ".%d.tmp.npy" % os.getpid()
                np.save(tmp, m)
                os.replace(tmp, self._cache)
            self.matrix = m
        except Exception as e:  # a broken cache or encoder: lexical search goes on
            self.error = "%s: %s" % (type(e).__name__, e)
        finally:
            self._done.set()

    def ready(self) -> bool:
        return self._done.is_set() and self.matrix is not None

    def wait(self, timeout: float | None = None) -> bool:
        self._done.wait(timeout)
        return self.ready()

    def status(self) -> str:
        if self.enc is None:
            return "lexical only: " + (encoder.why() or "no sentence encoder")
        if self.error:
            return "lexical only: sentence vectors failed (%s)" % self.error
        if not self._done.is_set():
            return "lexical while the sentence vectors of %d functions are computed" % len(self.names)
        return "lexical + semantic (Universal Sentence Encoder Lite, model %s)" % self.enc.digest

    def zscores(self, queries: list[str]) -> Any:
        """Per function, the best z-scored cosine over the queries (None when not ready)."""
        if not self.ready() or not len(self.names):
            return None
        np = self.enc.np  # type: ignore[union-attr]
        q = self.enc.encode([t[:_MAX_QUERY_CHARS] for t in queries])  # type: ignore[union-attr]
        sims = self.matrix @ q.T
        z = (sims - sims.mean(axis=0)) / (sims.std(axis=0) + np.float32(1e-6))
        return z.max(axis=1)


def fuse(lexical: list[int], z: Any, limit: int, allowed: Any = None) -> list[int]:
    """Documents by lexical rank (best first) fused with semantic z-scores; ``allowed(doc)``
    filters the semantic candidates (a server's functions only)."""
    if z is None:
        return lexical[:limit]
    order = [int(d) for d in (-z).argsort()[: SEM_DEPTH * 4]]
    extra = [d for d in order if allowed is None or allowed(d)][:SEM_DEPTH]
    rank = {d: i for i, d in enumerate(lexical)}
    cand = list(dict.fromkeys(lexical + extra))
    score = {d: ((1.0 / (1 + rank[d])) ** 0.5 if d in rank else 0.0) + SEM_WEIGHT * float(z[d]) for d in cand}
    cand.sort(key=lambda d: -score[d])
    return cand[:limit]
