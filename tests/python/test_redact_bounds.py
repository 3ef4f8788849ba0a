"""Redaction's cost is bounded (docs/review-extensions.md): the patterns are
O(n^2) on a long run of identifier characters, so redact() looks at the shown part of a
string plus a margin and redact_text() keeps the head and the tail of a text longer than
_MAX_TEXT; secrets in what is shown (or just
across the cut) are still found."""

import time
import unittest

from codemcp_rt import redact as rd


class RedactBounds(unittest.TestCase):
    def test_long_identifier_runs_are_cheap(self):
        for text in ("x" * 400_000, "a=" * 200_000, "xsk-" * 100_000):
            t = time.monotonic()
            out = rd.redact({"message": text})
            rd.redact_text(text)
            self.assertLess(time.monotonic() - t, 15.0, text[:10])  # was minutes
            self.assertIn("(%d chars)" % len(text), out["message"])

    def test_secret_in_the_shown_part_or_across_the_cut_is_redacted(self):
        key = "sk-" + "A" * 30
        for prefix in ("", "y " * 50, "z" * (rd._MAX_STR - 10) + " "):
            out = rd.redact({"m": prefix + key + " " + "x" * 100_000})["m"]
            self.assertNotIn("A" * 20, out, prefix[:5])

    def test_redact_text_keeps_head_and_tail(self):
        out = rd.redact_text("password=hunter22 " + "x " * rd._MAX_TEXT + "ValueError: token=zz99yy88")
        self.assertTrue(out.startswith("password=***"), out[:40])
        self.assertTrue(out.endswith("ValueError: token=***"), out[-40:])
        self.assertIn("chars cut)…", out)
        self.assertLess(len(out), rd._MAX_TEXT + 100)

    def test_short_strings_unchanged(self):
        self.assertEqual(rd.redact({"m": "token=abcdefgh12345"}), {"m": "token=***"})
        s = "q" * (rd._MAX_STR + 5)
        self.assertEqual(rd.redact(s), s[: rd._MAX_STR] + "…(%d chars)" % len(s))


if __name__ == "__main__":
    unittest.main()
