"""The read/write verbs are one list (codemcp_rt.verbs) for the gateway's classification of a
tool (sdkgen/mutation.c, generated from it) and for search_tools' ranking (codemcp_rt.search):
search knows every verb of the gateway with the gateway's kind (but the two it takes for nouns,
verbs.SEARCH_NOUNS), and no word as both kinds."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import unittest

from codemcp_rt import search, verbs
from codemcp_rt.searchwords import stem

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


class VerbsAgree(unittest.TestCase):
    def test_search_reads_what_the_gateway_reads(self):
        for w in verbs.READ_VERBS:
            self.assertNotIn(stem(w), search._WRITE_OPS, w)
            if w in verbs.SEARCH_NOUNS:  # a noun anywhere but first in a name: no verb to search
                self.assertNotIn(stem(w), search._READ_OPS, w)
            else:
                self.assertIn(stem(w), search._READ_OPS, w)

    def test_search_writes_what_the_gateway_writes(self):
        for w in verbs.WRITE_VERBS + verbs.STRONG_WRITE_VERBS:
            self.assertIn(stem(w), search._WRITE_OPS, w)
            self.assertNotIn(stem(w), search._READ_OPS, w)

    def test_watch_reads_on_both_sides(self):
        self.assertIn("watch", verbs.READ_VERBS)
        self.assertIn(stem("watch"), search._READ_OPS)

    def test_no_word_is_both_kinds(self):
        self.assertFalse(search._READ_OPS & search._WRITE_OPS)

    def test_the_generator_refuses_a_word_of_both_kinds(self):
        with open(os.path.join(ROOT, "python", "codemcp_rt", "verbs.py"), encoding="utf-8") as f:
            text = f.read()
        text = text.replace('SEARCH_READ_VERBS = [\n', 'SEARCH_READ_VERBS = [\n    "delete",\n', 1)
        with tempfile.TemporaryDirectory() as d:
            src, out = os.path.join(d, "verbs.py"), os.path.join(d, "mutation_verbs.h")
            with open(src, "w", encoding="utf-8") as f:
                f.write(text)
            r = subprocess.run([sys.executable, os.path.join(ROOT, "sdkgen", "gen_verbs.py"), src, out],
                               capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("delete", r.stderr)


if __name__ == "__main__":
    unittest.main()
