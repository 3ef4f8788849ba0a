"""Pending: transparent resolution through every dunder, gather/settle, resolve."""

import copy
import json
import math
import pickle
import threading
import time
import unittest

from codemcp_rt.errors import ToolError
from codemcp_rt.pending import Pending, gather, install_json_hook, resolve, settle


class Counting:
    """A wait() that counts how often it is called and can fail."""

    def __init__(self, value=None, error=None, delay=0.0):
        self.value, self.error, self.delay, self.calls = value, error, delay, 0

    def __call__(self):
        self.calls += 1
        if self.delay:
            time.sleep(self.delay)
        if self.error is not None:
            raise self.error
        return self.value


def pending(value=None, error=None, delay=0.0):
    w = Counting(value, error, delay)
    return Pending(w, lambda: False, "srv/tool"), w


class DunderTest(unittest.TestCase):
    def test_mapping_access(self) -> None:
        p, w = pending({"a": 1, "b": [1, 2], "items": "key named like a method"})
        self.assertEqual(w.calls, 0)  # nothing waits before first use
        self.assertEqual(p["a"], 1)
        self.assertEqual(w.calls, 1)
        self.assertEqual(len(p), 3)
        self.assertIn("a", p)
        self.assertEqual(sorted(p), ["a", "b", "items"])
        self.assertEqual(sorted(p.keys()), ["a", "b", "items"])
        self.assertEqual(dict(p.items())["a"], 1)
        self.assertEqual(p.get("zz", 7), 7)
        self.assertEqual(p.a, 1)  # dict keys read as attributes
        self.assertTrue(callable(p.items))  # ...but methods win
        self.assertTrue(p)
        self.assertEqual(p, {"a": 1, "b": [1, 2], "items": "key named like a method"})
        self.assertIsInstance(p, dict)
        self.assertIsInstance(p, Pending)
        p["c"] = 3
        self.assertEqual(p["c"], 3)
        del p["c"]
        self.assertNotIn("c", p)
        with self.assertRaises(AttributeError):
            p.nope
        self.assertEqual(w.calls, 1)  # resolved exactly once

    def test_private_and_dunder_probes_do_not_resolve(self) -> None:
        p, w = pending({"x": 1})
        self.assertFalse(hasattr(p, "_private"))
        self.assertFalse(hasattr(p, "__array_interface__"))
        self.assertFalse(hasattr(p, "__html__"))
        self.assertEqual(w.calls, 0)

    def test_sequence_and_string(self) -> None:
        p, _ = pending([3, 1, 2])
        self.assertEqual(p[0], 3)
        self.assertEqual(list(reversed(p)), [2, 1, 3])
        self.assertEqual(sorted(p), [1, 2, 3])
        self.assertEqual(p + [4], [3, 1, 2, 4])
        self.assertEqual([0] + p, [0, 3, 1, 2])
        s, _ = pending("hello")
        self.assertEqual(str(s), "hello")
        self.assertEqual(repr(s), "'hello'")
        self.assertEqual(f"<{s:>7}>", "<  hello>")
        self.assertEqual("%s!" % s, "hello!")
        self.assertEqual(s.upper(), "HELLO")
        self.assertEqual(s + "!", "hello!")
        self.assertEqual("say " + s, "say hello")
        self.assertIn("ell", s)

    def test_numbers(self) -> None:
        p, _ = pending(7)
        q, _ = pending(2)
        self.assertEqual(p + 1, 8)
        self.assertEqual(1 + p, 8)
        self.assertEqual(p - q, 5)
        self.assertEqual(10 - p, 3)
        self.assertEqual(p * q, 14)
        self.assertEqual(p / q, 3.5)
        self.assertEqual(p // q, 3)
        self.assertEqual(p % q, 1)
        self.assertEqual(p ** q, 49)
        self.assertEqual(2 ** p, 128)
        self.assertEqual(divmod(p, q), (3, 1))
        self.assertEqual(p << 1, 14)
        self.assertEqual(p & 3, 3)
        self.assertEqual(p | 8, 15)
        self.assertEqual(p ^ 1, 6)
        self.assertEqual(-p, -7)
        self.assertEqual(+p, 7)
        self.assertEqual(abs(-p), 7)
        self.assertEqual(~p, -8)
        self.assertEqual(int(p), 7)
        self.assertEqual(float(p), 7.0)
        self.assertEqual([10, 11, 12, 13, 14, 15, 16, 17][p], 17)  # __index__
        self.assertEqual(hex(p), "0x7")
        self.assertEqual("%d" % p, "7")
        self.assertEqual(f"{p:03d}", "007")
        self.assertTrue(p > q and q < p and p >= 7 and p <= 7 and p != q)
        self.assertEqual(max(p, q), 7)
        f, _ = pending(2.5)
        self.assertEqual(round(f), 2)
        self.assertEqual(math.floor(f), 2)
        self.assertEqual(math.ceil(f), 3)
        self.assertEqual(math.trunc(f), 2)
        acc = 0
        acc += p
        self.assertEqual(acc, 7)

    def test_hash_and_set_membership(self) -> None:
        p, _ = pending("k")
        self.assertEqual(hash(p), hash("k"))
        self.assertEqual({"k": 1}[p], 1)
        self.assertIn(p, {"k"})

    def test_bool_and_len_of_empty(self) -> None:
        p, _ = pending([])
        self.assertFalse(p)
        self.assertEqual(len(p), 0)
        n, _ = pending(None)
        self.assertFalse(n)
        self.assertEqual(str(n), "None")

    def test_error_raises_on_every_use(self) -> None:
        err = ToolError("upstream_error", "boom", "srv", "tool", {"a": 1}, 3)
        p, w = pending(error=err)
        with self.assertRaises(ToolError) as ctx:
            p["x"]
        self.assertIs(ctx.exception, err)
        with self.assertRaises(ToolError):
            p.result()
        with self.assertRaises(ToolError):
            str(p)
        self.assertIn("failed", repr(p))  # repr never raises
        self.assertEqual(w.calls, 1)
        self.assertTrue(p.done())

    def test_done_polls(self) -> None:
        ready = []
        p = Pending(lambda: 5, lambda: bool(ready), "x")
        self.assertFalse(p.done())
        ready.append(1)
        self.assertTrue(p.done())
        self.assertEqual(p.result(), 5)

    def test_copy_pickle_give_the_value(self) -> None:
        p, _ = pending({"a": [1]})
        c = copy.copy(p)
        self.assertEqual(type(c), dict)
        d = copy.deepcopy(p)
        self.assertEqual(d, {"a": [1]})
        self.assertIsNot(d["a"], p["a"])
        self.assertEqual(pickle.loads(pickle.dumps(p)), {"a": [1]})

    def test_json_dumps_directly(self) -> None:
        install_json_hook()
        p, _ = pending({"a": 1})
        q, _ = pending([1, 2])
        self.assertEqual(json.loads(json.dumps(p)), {"a": 1})
        self.assertEqual(json.loads(json.dumps({"x": p, "y": [q]})), {"x": {"a": 1}, "y": [[1, 2]]})
        self.assertEqual(json.dumps(object, default=lambda o: "dflt"), '"dflt"')
        with self.assertRaises(TypeError):
            json.dumps(object())  # the hook keeps json's normal error for other objects

    def test_concurrent_first_use_waits_once(self) -> None:
        p, w = pending("v", delay=0.1)
        out = []
        threads = [threading.Thread(target=lambda: out.append(str(p))) for _ in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(out, ["v"] * 5)
        self.assertEqual(w.calls, 1)


class ForgedStateTest(unittest.TestCase):
    """The Python twin of _codemcp.PendingBase answers forged and re-entrant use as the C one
    does (tests/e2e/percall.test.mjs runs the same cases against the C core)."""

    def test_reentrant_read_raises_instead_of_deadlocking(self) -> None:
        holder = []
        p = Pending(lambda: holder[0].result())
        holder.append(p)
        for _ in range(2):
            with self.assertRaisesRegex(RuntimeError, "inside its own wait"):
                p.result()

    def test_forged_states(self) -> None:
        p = Pending(lambda: 1)
        p._state, p._error = 2, 5
        with self.assertRaisesRegex(TypeError, "BaseException"):
            p.result()
        p._error = ValueError
        with self.assertRaises(ValueError):
            p.result()
        p._state, p._value = 9, "v"
        self.assertEqual(p.result(), "v")
        q = Pending(5)
        with self.assertRaises(TypeError):
            q.result()
        r = Pending(lambda: 1)
        r._wait = None
        with self.assertRaisesRegex(TypeError, "nothing to wait for"):
            r.result()

    def test_done_never_raises_an_exception(self) -> None:
        class BadBool:
            def __bool__(self):
                raise ValueError("bool")

        def bad_poll():
            raise ValueError("poll")

        for poll in (bad_poll, lambda: BadBool(), BadBool()):
            self.assertFalse(Pending(lambda: 1, poll).done())

    def test_failure_other_than_toolerror_keeps_waiting_possible(self) -> None:
        w = Counting(error=ZeroDivisionError("x"))
        p = Pending(w)
        for _ in range(2):
            with self.assertRaises(ZeroDivisionError):
                p.result()
        self.assertEqual(w.calls, 2)


class GatherResolveTest(unittest.TestCase):
    def test_gather_one_failure(self) -> None:
        ok1, _ = pending({"v": 1})
        bad, _ = pending(error=ToolError("timeout", "slow", "s", "t", {"password": "x"}, 9))
        out = gather(ok1, bad, 42)
        self.assertEqual(out[0], {"ok": True, "value": {"v": 1}})
        self.assertEqual(out[1]["ok"], False)
        self.assertEqual(out[1]["error"]["kind"], "timeout")
        self.assertEqual(out[1]["error"]["args"], {"password": "***"})
        self.assertEqual(out[2], {"ok": True, "value": 42})
        json.dumps(out)

    def test_gather_list_and_settle_alias(self) -> None:
        a, _ = pending(1)
        b, _ = pending(2)
        self.assertEqual(gather([a, b]), [{"ok": True, "value": 1}, {"ok": True, "value": 2}])
        self.assertEqual(settle(x for x in (a,)), [{"ok": True, "value": 1}])
        self.assertIs(settle, gather)
        lst, _ = pending([1, 2])  # one Pending whose value is a list stays one item
        self.assertEqual(gather(lst), [{"ok": True, "value": [1, 2]}])
        self.assertEqual(gather(), [])

    def test_gather_reports_unexpected_exceptions(self) -> None:
        p, _ = pending(error=ToolError("auth", "x"))
        q = Pending(lambda: 1 / 0, None, "q")
        out = gather(p, q)
        self.assertEqual(out[0]["error"]["kind"], "auth")
        self.assertEqual(out[1]["ok"], False)
        self.assertIn("ZeroDivisionError", out[1]["error"]["message"])

    def test_resolve_nested(self) -> None:
        a, _ = pending({"inner": 1})
        b, _ = pending("k")
        c, _ = pending(3)
        value = {"a": a, "list": [a, (c, 4)], "set": {c}, b: "pending key", "deep": [[[{"x": c}]]]}
        out = resolve(value)
        self.assertEqual(out["a"], {"inner": 1})
        self.assertEqual(type(out["a"]), dict)
        self.assertEqual(out["list"], [{"inner": 1}, (3, 4)])
        self.assertEqual(type(out["list"][1][0]), int)
        self.assertEqual(out["set"], {3})
        self.assertEqual(out["k"], "pending key")
        self.assertEqual(type(out["deep"][0][0][0]["x"]), int)
        top, _ = pending([a])
        self.assertEqual(resolve(top), [{"inner": 1}])

    def test_resolve_cycles_and_failures(self) -> None:
        cyc: list = []
        cyc.append(cyc)
        self.assertIs(resolve(cyc), cyc)
        bad, _ = pending(error=ToolError("denied", "no"))
        with self.assertRaises(ToolError):
            resolve({"x": [bad]})


if __name__ == "__main__":
    unittest.main()
