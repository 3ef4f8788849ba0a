"""jsonsafe: every value becomes valid JSON; big values become the truncation stand-in."""

import collections
import dataclasses
import datetime
import decimal
import enum
import json
import math
import time
import unittest

from codemcp_rt.errors import ToolError
from codemcp_rt import jsonsafe
from codemcp_rt.jsonsafe import HINT, cap, cap_json, dumps_capped, to_jsonable
from codemcp_rt.pending import Pending


def strict_loads(text: str):
    def bad(c):
        raise ValueError("non-standard constant %s" % c)

    return json.loads(text, parse_constant=bad)


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    y: float


class ConvertTest(unittest.TestCase):
    def test_special_floats(self) -> None:
        self.assertEqual(strict_loads(dumps_capped([math.nan, math.inf, -math.inf, 1.5], None)), [None, None, None, 1.5])

    def test_bytes(self) -> None:
        self.assertEqual(to_jsonable(b"hello"), "hello")
        self.assertEqual(to_jsonable(bytearray(b"\xff\x00")), {"base64": "/wA=", "bytes": 2})

    def test_sets_tuples(self) -> None:
        self.assertEqual(to_jsonable({3, 1, 2}), [1, 2, 3])
        mixed = to_jsonable({1, "a"})
        self.assertEqual(sorted(map(str, mixed)), ["1", "a"])
        self.assertEqual(to_jsonable(frozenset({"b", "a"})), ["a", "b"])
        self.assertEqual(to_jsonable((1, (2,))), [1, [2]])
        self.assertEqual(to_jsonable(collections.deque([1])), [1])
        nt = collections.namedtuple("NT", "a b")
        self.assertEqual(to_jsonable(nt(1, 2)), {"a": 1, "b": 2})

    def test_dates_decimals_enums_dataclasses(self) -> None:
        dt = datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc)
        self.assertEqual(to_jsonable(dt), "2024-05-06T07:08:09+00:00")
        self.assertEqual(to_jsonable(datetime.date(2024, 1, 2)), "2024-01-02")
        self.assertEqual(to_jsonable(datetime.time(3, 4)), "03:04:00")
        self.assertEqual(to_jsonable(datetime.timedelta(minutes=1)), 60.0)
        self.assertEqual(to_jsonable(decimal.Decimal("1.5")), 1.5)
        self.assertEqual(to_jsonable(decimal.Decimal("0.1000000000000000000001")), "0.1000000000000000000001")
        self.assertIsNone(to_jsonable(decimal.Decimal("NaN")))
        self.assertEqual(to_jsonable(Color.RED), "red")
        self.assertEqual(to_jsonable(Point(1, math.nan)), {"x": 1, "y": None})

    def test_keys(self) -> None:
        out = to_jsonable({1: "a", None: "b", False: "c", 2.5: "d", (1, 2): "e"})
        self.assertEqual(out["1"], "a")
        self.assertEqual(out["false"], "c")
        self.assertEqual(out["null"], "b")
        self.assertEqual(out["2.5"], "d")
        self.assertEqual(out["(1, 2)"], "e")

    def test_objects_and_errors(self) -> None:
        class Thing:
            def __repr__(self) -> str:
                return "<Thing>"

        class Hostile:
            def __repr__(self) -> str:
                raise RuntimeError("no repr for you")

        class Huge:
            def __repr__(self) -> str:
                return "x" * 100000

        self.assertEqual(to_jsonable(Thing()), "<Thing>")
        self.assertIn("Hostile", to_jsonable(Hostile()))
        self.assertLess(len(to_jsonable(Huge())), 1100)
        self.assertEqual(to_jsonable(ToolError("auth", "m", "s", "t"))["kind"], "auth")
        self.assertEqual(to_jsonable(Pending.of({"a": {1}})), {"a": [1]})
        failed = Pending(lambda: (_ for _ in ()).throw(ToolError("timeout", "slow")), None, "x")
        self.assertEqual(to_jsonable(failed)["tool_error"]["kind"], "timeout")
        self.assertIsInstance(to_jsonable(iter([1, 2])), str)  # iterators are not consumed
        self.assertIsInstance(to_jsonable(2 ** 100000), str)
        self.assertEqual(to_jsonable(2 ** 64), 2 ** 64)

    def test_cycles_and_depth(self) -> None:
        d: dict = {"name": "loop"}
        d["self"] = d
        lst: list = [1]
        lst.append(lst)
        out = strict_loads(dumps_capped({"d": d, "l": lst}, None))
        self.assertEqual(out["d"]["self"], "<cycle>")
        self.assertEqual(out["l"], [1, "<cycle>"])
        shared = [1]
        self.assertEqual(to_jsonable([shared, shared]), [[1], [1]])  # sharing is not a cycle
        deep: list = []
        cur = deep
        for _ in range(5000):
            nxt: list = []
            cur.append(nxt)
            cur = nxt
        text = dumps_capped(deep, None)
        self.assertIn("<depth limit>", text)
        strict_loads(text)

    def test_exponential_sharing_does_not_hang(self) -> None:
        x: list = [1]
        for _ in range(60):
            x = [x, x]  # 2**60 leaves when expanded
        start = time.monotonic()
        out = cap(x, 100000)
        self.assertLess(time.monotonic() - start, 60)  # a hang is 2**60 steps; the bound only has to end
        self.assertTrue(out["_truncated"])


class CapTest(unittest.TestCase):
    def test_small_value_unchanged(self) -> None:
        self.assertEqual(cap({"a": [1, 2]}, 100), {"a": [1, 2]})
        self.assertEqual(cap("x" * 50, None), "x" * 50)

    def test_truncation(self) -> None:
        value = [{"id": i, "name": "item %d" % i} for i in range(5000)]
        text = dumps_capped(value, 40000)
        out = strict_loads(text)  # the stand-in is itself valid JSON
        self.assertIs(out["_truncated"], True)
        self.assertNotIn("bytes_at_least", out)
        self.assertEqual(out["limit"], 40000)
        self.assertEqual(out["bytes"], len(json.dumps(value, separators=(",", ":")).encode()))
        self.assertEqual(out["hint"], HINT)
        self.assertTrue(out["preview"].startswith('[{"id":0,"name":"item 0"}'))
        self.assertLessEqual(len(out["preview"].encode()), 40000)
        self.assertLessEqual(len(text.encode()), 40000)

    def test_huge_range_and_multibyte_preview(self) -> None:
        out = cap(range(10 ** 12), 1000)
        self.assertTrue(out["_truncated"])
        self.assertTrue(out.get("bytes_at_least"))
        out = cap("é" * 10000, 1001)
        out["preview"].encode("utf-8")  # cut on a character boundary
        self.assertTrue(out["_truncated"])

    def test_exactly_at_limit(self) -> None:
        value = "a" * 8  # JSON "aaaaaaaa" is 10 bytes
        self.assertEqual(cap(value, 10), value)
        self.assertTrue(cap(value, 9)["_truncated"])


class FastPathTest(unittest.TestCase):
    """Plain values skip the converter; the outcome must be the converter's, byte for byte."""

    def converted(self, value, limit):
        saved = jsonsafe.plain
        jsonsafe.plain = lambda *a, **k: False  # force the converter
        try:
            return cap_json(value, limit)
        finally:
            jsonsafe.plain = saved

    def test_same_as_converter(self) -> None:
        Pair = collections.namedtuple("Pair", "a b")
        deep: list = ["x"]
        for _ in range(105):
            deep = [deep]
        values = [None, True, 0, -5, 1.5, "é\u2028\x00\"", [], {}, {"a": [1, 2.5, None, {"b": "c"}]},
                  [math.nan], {"k": math.inf}, (1, 2), Pair(1, 2), {"t": Pair(1, 2)}, {1: "x"}, deep,
                  1 << 13001, [1 << 12999], "x" * 30, ["y" * 10] * 10, [{"id": i} for i in range(3000)]]
        for value in values:
            for limit in (None, 0, 12, 25, 200, 40000):
                with self.subTest(value=repr(value)[:40], limit=limit):
                    got = cap_json(value, limit)
                    want = self.converted(value, limit)
                    self.assertEqual(got[1], want[1])
                    self.assertEqual(got[0], want[0])
                    self.assertEqual(json.loads(got[1]), got[0])

    def test_walk_budget_matches_the_converters_count(self) -> None:
        # Past 4 x limit + slack the converter stops and says "at least"; so must the fast path.
        value = ["z" * 1000] * 400
        for limit in (100, 1000, 100000, 10 ** 6):
            with self.subTest(limit=limit):
                self.assertEqual(cap_json(value, limit), self.converted(value, limit))
        walk = 1000 * jsonsafe._WALK_FACTOR + jsonsafe._WALK_SLACK
        for extra in (-1, 0, 1):  # right at the point where the converter stops counting
            for value in ("a" * (walk - 2 + extra), ["b" * (walk - 5 + extra)], {"k": "c" * (walk - 9 + extra)},
                          [None] * ((walk - 2) // 5) + [1] * (extra + 2)):
                with self.subTest(extra=extra, kind=type(value).__name__):
                    got = cap_json(value, 1000)
                    self.assertEqual(got, self.converted(value, 1000))
                    self.assertEqual(got[0].get("bytes_at_least", False), extra > 0)

    def test_plain(self) -> None:
        self.assertTrue(jsonsafe.plain({"a": [1, "b", None, 2.5, True]}, 100))
        self.assertFalse(jsonsafe.plain({"a": (1,)}, 100))
        self.assertFalse(jsonsafe.plain({1: 1}, 100))
        self.assertFalse(jsonsafe.plain("x" * 100, 50))
        self.assertFalse(jsonsafe.plain([Pending.of(1)], 100))
        self.assertTrue(jsonsafe.plain([Pending.of(1)], 100, pendings=True))
        cyc: list = []
        cyc.append(cyc)
        self.assertFalse(jsonsafe.plain(cyc, 1 << 40))

    def test_dumps(self) -> None:
        self.assertEqual(jsonsafe.dumps({"a": [1, "é"]}), '{"a":[1,"é"]}')
        self.assertEqual(jsonsafe.dumps({"t": (1, 2)}), '{"t":[1,2]}')
        with self.assertRaises(ValueError):
            jsonsafe.dumps([math.nan])
        with self.assertRaises(TypeError):
            jsonsafe.dumps([object()])
        cyc: list = []
        cyc.append(cyc)
        with self.assertRaises(ValueError):
            jsonsafe.dumps(cyc)


if __name__ == "__main__":
    unittest.main()
