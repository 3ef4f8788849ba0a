"""capture: sys.stdout/stderr swapped for a run, capped with a marker, then restored."""

import sys
import unittest
import weakref

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


class StreamReuseTest(unittest.TestCase):
    """capture() hands the last run's streams on only when nothing else holds them, reset."""

    def _run(self, body, limit: int = 100):  # type: ignore[no-untyped-def]
        c = capture(limit)
        with c as (out, err):
            body(out, err)
        return out.getvalue(), err.getvalue(), id(out)

    def test_an_unheld_stream_is_reused_clean(self) -> None:
        def tamper(out, err):  # type: ignore[no-untyped-def]
            print("x", file=out)
            out.limit, out._kept, err._cut = 1, 10**9, 5
            out.close()

        first = self._run(tamper)
        got = self._run(lambda out, err: print("y", file=out), limit=50)
        self.assertEqual(got[0], "y\n")
        self.assertEqual(got[1], "")
        self.assertEqual(got[2], first[2])  # the same object, reset

    def test_a_held_stream_is_not_handed_on(self) -> None:
        kept: list = []
        self._run(lambda out, err: kept.extend([out, weakref.ref(err)]))
        def leak(out, err):  # type: ignore[no-untyped-def]
            kept[0].write("LEAK")
            old_err = kept[1]()  # dead, or not this run's
            if old_err is not None:
                self.assertIsNot(old_err, err)
                old_err.write("LEAK")
            print("z", file=out)

        got = self._run(leak)
        self.assertEqual(got[:2], ("z\n", ""))
        self.assertIsNot(capture(1).streams[0], kept[0])
