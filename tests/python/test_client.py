"""client.call(): request shape, overlap, reply unwrapping, errors, mutations."""

import json
import threading
import time
import unittest

from fake_transport import FakeTransport, text_result
from support import DEFAULT_TOOLS, sdk_source

from codemcp_rt import client, content, runstate, sdk, transport
from codemcp_rt.errors import ToolError
from codemcp_rt.pending import Pending


class ClientTest(unittest.TestCase):
    def use(self, responder, delay=0.0) -> FakeTransport:
        t = FakeTransport(responder, delay)
        transport.set_transport(t)
        return t

    def setUp(self) -> None:
        self.assertTrue(sdk.load_sdk(sdk_source(DEFAULT_TOOLS), 1)["ok"])
        self.state = runstate.RunState("r9")
        runstate.begin(self.state)

    def tearDown(self) -> None:
        runstate.end()
        transport.set_transport(None)

    def reply_with(self, result):
        return self.use(lambda p: ("result", result))

    def test_request_is_sent_at_once(self) -> None:
        gate = threading.Event()

        def slow(params):
            gate.wait(5)
            return ("result", text_result("done"))

        t = self.use(slow)
        p = client.call("srv", "get", {"a": 1, "when": {1, 2}}, timeout_ms=1500)
        self.assertIsInstance(p, Pending)
        sent = t.calls()
        self.assertEqual(len(sent), 1)  # on the wire before anyone waits
        msg = sent[0]
        self.assertEqual(msg["jsonrpc"], "2.0")
        self.assertRegex(msg["id"], r"^c\d+$")
        self.assertEqual(msg["params"], {"run_id": "r9", "server": "srv", "tool": "get",
                                         "args": {"a": 1, "when": [1, 2]}, "timeout_ms": 1500})
        self.assertFalse(p.done())
        gate.set()
        self.assertEqual(p, "done")
        self.assertTrue(p.done())
        q = client.call("srv", "get")
        self.assertNotEqual(t.calls()[1]["id"], msg["id"])
        self.assertIsNone(t.calls()[1]["params"]["timeout_ms"])
        q.result()

    def test_overlap(self) -> None:
        t = self.use(lambda p: ("result", text_result({"i": p["args"]["i"]})), delay=0.2)
        start = time.monotonic()
        ps = [client.call("srv", "get", {"i": i}) for i in range(10)]
        self.assertEqual(len(t.calls()), 10)
        values = [p["i"] for p in ps]
        elapsed = time.monotonic() - start
        self.assertEqual(values, list(range(10)))
        self.assertLess(elapsed, 1.5, "10 calls of 0.2 s did not overlap")

    def test_out_of_order_replies_match_ids(self) -> None:
        self.use(lambda p: ("result", text_result(p["args"]["i"]), 0.05 * (5 - p["args"]["i"])))
        ps = [client.call("srv", "get", {"i": i}) for i in range(5)]
        self.assertEqual([p.result() for p in ps], [0, 1, 2, 3, 4])

    def test_unwrap_order(self) -> None:
        u = client.unwrap
        self.assertEqual(u({"structuredContent": {"s": 1}, "content": [{"type": "text", "text": '{"t": 1}'}]}), {"s": 1})
        self.assertEqual(u({"structuredContent": None, "content": [{"type": "text", "text": '{"t": 1}'}]}), {"t": 1})
        # images, audio, resources: every block in order, the others as Content objects
        mixed = u({"content": [{"type": "text", "text": "[1,"}, {"type": "image", "data": "x"},
                               {"type": "text", "text": "2]"}]})
        self.assertEqual(mixed, ["[1,", {"type": "image", "data": "x"}, "2]"])
        self.assertIsInstance(mixed[1], content.Content)
        self.assertEqual(u({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}), "a\nb")
        self.assertEqual(u({"content": [{"type": "text", "text": "42"}]}), 42)
        raw = {"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}
        img = u(raw)
        self.assertEqual(img, raw["content"][0])
        self.assertEqual((img.type, img.mime_type, img.bytes()), ("image", "image/png", b"\0\0\0"))
        self.assertEqual(repr(img), "<image image/png, 4 bytes>")
        self.assertEqual(u({"content": [{"type": "widget", "x": 1}]}), {"content": [{"type": "widget", "x": 1}]})
        self.assertEqual(u({"content": []}), {"content": []})
        self.assertEqual(u("not a dict"), "not a dict")

    def test_structured_content_through_call(self) -> None:
        self.reply_with({"content": [{"type": "text", "text": "ignored"}], "structuredContent": {"sum": 3}})
        self.assertEqual(client.call("srv", "add", {"a": 1, "b": 2})["sum"], 3)

    def test_is_error_result_is_a_value(self) -> None:
        self.reply_with(text_result("Error: repository not found", is_error=True))
        p = client.call("srv", "get", {})
        self.assertEqual(p.result(), "Error: repository not found")
        self.assertEqual(self.state.trace[0]["ok"], True)

    def test_error_reply_becomes_tool_error(self) -> None:
        self.use(lambda p: ("error", {"code": -32000, "message": "upstream timed out",
                                      "data": {"kind": "timeout", "elapsed_ms": 1234}}))
        p = client.call("srv", "get", {"q": "x", "api_token": "secret-value"})
        with self.assertRaises(ToolError) as ctx:
            p["anything"]
        e = ctx.exception
        self.assertEqual((e.kind, e.server, e.tool, e.elapsed_ms), ("timeout", "srv", "get", 1234))
        self.assertEqual(e.message, "upstream timed out")
        self.assertEqual(e.call_args, {"q": "x", "api_token": "***"})
        self.assertNotIn("secret-value", json.dumps(e.to_dict()))
        self.assertEqual(self.state.trace[0]["ok"], False)
        self.assertEqual(self.state.trace[0]["kind"], "timeout")

    def test_default_kinds(self) -> None:
        cases = [
            ({"code": -32000, "message": "boom"}, "upstream_error"),
            ({"code": -32000, "message": "x", "data": {"kind": "bogus"}}, "upstream_error"),
            ({"code": -32601, "message": "no such method"}, "transport"),
            ({"code": -32000, "message": "nope", "data": {"kind": "denied"}}, "denied"),
            ({"code": -32000, "message": "who", "data": {"kind": "not_found"}}, "not_found"),
        ]
        for err, kind in cases:
            self.use(lambda p, err=err: ("error", err))
            with self.assertRaises(ToolError) as ctx:
                client.call("srv", "get").result()
            self.assertEqual(ctx.exception.kind, kind, err)
            self.assertIsInstance(ctx.exception.elapsed_ms, int)

    def test_malformed_reply(self) -> None:
        self.use(lambda p: ("raw", "{not json"))
        with self.assertRaises(ToolError) as ctx:
            client.call("srv", "get").result()
        self.assertEqual(ctx.exception.kind, "transport")

    def test_send_failure_and_lost_connection(self) -> None:
        t = self.use(lambda p: ("none", None))
        t._closed = True
        p = client.call("srv", "get")  # never raises at call time
        with self.assertRaises(ToolError) as ctx:
            p.result()
        self.assertEqual(ctx.exception.kind, "transport")
        t = self.use(lambda p: ("none", None))
        p = client.call("srv", "get")
        threading.Timer(0.05, lambda: setattr(t, "_closed", True)).start()
        with self.assertRaises(ToolError) as ctx:
            p.result()
        self.assertEqual(ctx.exception.kind, "transport")

    def test_local_deadline_when_no_reply(self) -> None:
        t = self.use(lambda p: ("none", None))
        saved = client._GRACE_S
        client._GRACE_S = 0.05
        try:
            p = client.call("srv", "get", timeout_ms=10)
            with self.assertRaises(ToolError) as ctx:
                p.result()
        finally:
            client._GRACE_S = saved
        self.assertEqual(ctx.exception.kind, "timeout")
        self.assertIn(t.calls()[0]["id"], t.forgotten)

    def test_mutations_from_gateway_meta(self) -> None:
        def responder(p):
            meta = {"codemcp": {"mutation": p["tool"] == "create", "dry_run": p["args"].get("dry", False)}}
            return ("result", {"content": [{"type": "text", "text": "{}"}], "_meta": meta})

        self.use(responder)
        client.call("srv", "create", {}).result()
        client.call("srv", "create", {"dry": True}).result()
        client.call("srv", "get", {}).result()
        self.assertEqual(self.state.mutations, [
            {"server": "srv", "tool": "create", "ok": True},
            {"server": "srv", "tool": "create", "ok": True, "dry_run": True},
        ])
        self.assertEqual([e["mutation"] for e in self.state.trace], [True, True, False])

    def test_failed_write_is_reported(self) -> None:
        self.use(lambda p: ("error", {"code": -32000, "message": "500", "data": {"kind": "upstream_error"}}))
        with self.assertRaises(ToolError):
            client.call("srv", "create", {}).result()  # srv/create is a write in the SDK meta
        self.assertEqual(self.state.mutations, [{"server": "srv", "tool": "create", "ok": False}])
        self.use(lambda p: ("error", {"code": -32000, "message": "no", "data": {"kind": "denied"}}))
        with self.assertRaises(ToolError):
            client.call("srv", "create", {}).result()
        self.assertEqual(len(self.state.mutations), 1)  # a refused write did not happen

    def test_settle_open_calls(self) -> None:
        t = self.use(lambda p: ("result", text_result(1), 0.05))
        client.call("srv", "get")
        client.call("srv", "get")
        self.assertEqual(len(self.state.open_calls), 2)
        client.settle_open_calls(self.state, wait=True)
        self.assertEqual(self.state.open_calls, {})
        self.assertEqual([e["ok"] for e in self.state.trace], [True, True])
        slow = self.use(lambda p: ("result", text_result(1), 5))
        p = client.call("srv", "get")
        client.settle_open_calls(self.state, wait=False)
        self.assertIn(slow.calls()[0]["id"], slow.forgotten)
        self.assertEqual(self.state.trace[-1]["kind"], "unfinished")
        with self.assertRaises(ToolError):  # a later read does not hang
            p.result()
        del t


class ArgumentEncodingTest(ClientTest):
    """Plain arguments skip jsonsafe; whatever path they take, the wire carries exactly
    what to_jsonable(resolve(args)) gives."""

    def sent_args(self, args):
        t = self.use(lambda p: ("result", text_result(1)))
        client.call("srv", "get", args).result()
        return t.calls()[-1]["params"]["args"]

    def test_same_as_jsonsafe(self) -> None:
        import collections
        import datetime
        import math

        from codemcp_rt.jsonsafe import to_jsonable

        Point = collections.namedtuple("Point", "x y")
        deep: list = []
        for _ in range(120):
            deep = [deep]
        cyclic: list = [1]
        cyclic.append(cyclic)
        cases = [
            {}, {"a": 1, "b": "x", "c": 1.5, "d": True, "e": None, "f": "é\u2028\"\\"},
            {"l": [1, [2, {"k": "v"}]], "t": (1, 2)}, {"p": Point(1, 2)}, {"n": math.nan, "i": [math.inf]},
            {"s": {3, 1}}, {"when": datetime.date(2020, 1, 2)}, {"k": {1: "one", None: 2}},
            {"big": 1 << 13001, "ok": (1 << 12999)}, {"deep": deep}, {"cyc": cyclic}, {"b": b"\xff"},
        ]
        for args in cases:
            with self.subTest(args=repr(args)[:60]):
                want = json.loads(json.dumps(to_jsonable(args)))
                self.assertEqual(self.sent_args(args), want)

    def test_pendings_inside_arguments(self) -> None:
        t = self.use(lambda p: ("result", text_result(p["args"])))
        first = client.call("srv", "get", {"n": 1})
        nested = client.call("srv", "get", {"a": first, "l": [first, {"x": first}]})
        self.assertEqual(nested.result(), {"a": {"n": 1}, "l": [{"n": 1}, {"x": {"n": 1}}]})
        self.assertEqual(t.calls()[-1]["params"]["args"]["l"][1], {"x": {"n": 1}})
        odd = client.call("srv", "get", {"v": Pending.of({1, 2})})  # a value jsonsafe converts
        self.assertEqual(odd.result(), {"v": [1, 2]})

    def test_failed_pending_argument_raises_at_call_time(self) -> None:
        self.use(lambda p: ("error", {"code": -32000, "message": "boom"}))
        bad = client.call("srv", "get", {})
        with self.assertRaises(ToolError):
            client.call("srv", "get", {"x": bad})

    def test_arguments_are_a_snapshot(self) -> None:
        self.use(lambda p: ("error", {"code": -32000, "message": "no", "data": {"kind": "denied"}}))
        args = {"items": [1, 2], "password": "hunter2"}
        p = client.call("srv", "get", args)
        args["items"].append(3)
        with self.assertRaises(ToolError) as ctx:
            p.result()
        self.assertEqual(ctx.exception.call_args, {"items": [1, 2], "password": "***"})

    def test_text_results(self) -> None:
        for text, want in [("The sum of 1 and 2 is 3.", "The sum of 1 and 2 is 3."), ("  [1]", [1]),
                           ("\n{\"a\": 2}\n", {"a": 2}), ("3 apples", "3 apples"), ("null", None),
                           ("true", True), ("", ""), ("-", "-"), ("Infinity", float("inf"))]:
            with self.subTest(text=text):
                self.assertEqual(client.unwrap({"content": [{"type": "text", "text": text}]}), want)

    def test_odd_names_fail_on_use_not_at_call_time(self) -> None:
        t = self.use(lambda p: ("result", text_result(1)))
        for server, tool in ((object(), "t"), ({"x"}, "t"), ("srv", {"x": object()})):
            p = client.call(server, tool, {})
            with self.assertRaises(ToolError) as ctx:
                p.result()
            self.assertEqual(ctx.exception.kind, "transport")
        self.assertEqual(client.call(["srv"], 7).result(), 1)  # JSON, just unusual: sent
        self.assertEqual(t.calls()[-1]["params"]["server"], ["srv"])

    def test_records_do_not_keep_values(self) -> None:
        self.reply_with(text_result({"big": "x" * 1000}))
        p = client.call("srv", "get")
        self.assertEqual(p["big"], "x" * 1000)
        self.assertIsNone(self.state.made[0].value)  # the Pending has it
        self.assertEqual(p["big"], "x" * 1000)
        self.assertEqual(self.state.calls, 1)


if __name__ == "__main__":
    unittest.main()
