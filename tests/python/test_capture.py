"""capture: sys.stdout/stderr swapped for a run, capped with a marker, then restored."""

import sys
import unittest

from codemcp_rt.capture import CappedStream, capture


class CaptureTest(unittest.TestCase):
    def test_captures_and_restores(self) -> None:
        before = sys.stdout, sys.stderr, sys.stdin
        with capture(1000) as (out, err):
            print("hello")
            print("oops", file=sys.stderr)
            self.assertEqual(input.__call__ and sys.stdin.read(), "")
        self.assertEqual((sys.stdout, sys.stderr, sys.stdin), before)
        self.assertEqual(out.getvalue(), "hello\n")
        self.assertEqual(err.getvalue(), "oops\n")

    def test_restored_after_exception(self) -> None:
        before = sys.stdout
        with self.assertRaises(ValueError):
            with capture(10):
                raise ValueError
        self.assertIs(sys.stdout, before)

    def test_cap_and_marker(self) -> None:
        with capture(10) as (out, _):
            for _ in range(100):
                print("abcdefghi")  # 10 bytes per line
        text = out.getvalue()
        self.assertTrue(text.startswith("abcdefghi\n"))
        self.assertEqual(text, "abcdefghi\n\n…[codemcp: 990 more bytes of stdout cut]")
        self.assertEqual(out.cut_bytes, 990)

    def test_multibyte_boundary_and_bytes(self) -> None:
        s = CappedStream("stderr", 5)
        s.write("ééé")  # 6 bytes: the third character is cut in half
        self.assertTrue(s.getvalue().startswith("éé\n…[codemcp: 1 more bytes of stderr cut]"))
        b = CappedStream("stdout", 100)
        b.buffer.write(b"raw\xff")
        self.assertEqual(b.getvalue(), "raw\ufffd")

    def test_no_cut_no_marker(self) -> None:
        s = CappedStream("stdout", 3)
        s.write("abc")
        self.assertEqual(s.getvalue(), "abc")
        with self.assertRaises(TypeError):
            s.write(b"bytes")  # type: ignore[arg-type]


if __name__ == "__main__":
    unittest.main()


class RawOutputTest(unittest.TestCase):
    """Bytes that reached the descriptors (handed over by the worker host) join the stream
    after its print() output and share its cap."""

    def test_appended_after_print_output(self) -> None:
        s = CappedStream("stdout", 100)
        s.write("printed\n")
        s.add_raw(b"raw\n", 0)
        self.assertEqual(s.getvalue(), "printed\nraw\n")

    def test_shares_the_cap_and_counts_what_the_host_cut(self) -> None:
        s = CappedStream("stdout", 10)
        s.write("12345678")
        s.add_raw(b"abcdef", 1000)
        self.assertEqual(s.cut_bytes, 4 + 1000)
        self.assertTrue(s.getvalue().startswith("12345678ab\n"))
        self.assertIn("1004 more bytes of stdout cut", s.getvalue())

    def test_nothing_raw_changes_nothing(self) -> None:
        s = CappedStream("stderr", 10)
        s.add_raw(b"", 0)
        self.assertEqual(s.getvalue(), "")
