"""worker_main: the request loop answers every request and survives bad ones."""

import json
import os
import signal
import subprocess
import sys
import unittest

from support import RuntimeTest, sdk_source

from codemcp_rt import sdk, worker_main


class LoopTest(RuntimeTest):
    def serve(self) -> dict:
        self.t.close()
        saved = signal.getsignal(signal.SIGUSR1)
        try:
            self.assertEqual(worker_main.main(), 0)  # returns once the connection is gone
        finally:
            signal.signal(signal.SIGUSR1, saved)
        return {r["id"]: r for r in self.t.replies()}

    def test_dispatch(self) -> None:
        t = self.t
        t.push_request("load_sdk", {"source": sdk_source({"a_b": ("a", "b", False)}), "version": 5}, 1)
        t.push_request("run", {"run_id": "r1", "session": "s", "code": "a_b(x=1)['args']"}, 2)
        t.push_request("set_shapes", {"shapes": {"a_b": {"k": "object", "fields": {"args": {"k": "leaf"}}}}}, 3)
        t.push_request("load_sdk", {"source": "this is not python", "version": 6}, 4)
        t.push_request("run", {"run_id": "r2", "session": "s", "code": "1/0"}, 5)
        t.push_request("run", {"run_id": "r3"}, 6)
        t.push_request("frobnicate", {}, 7)
        t.push_request("frobnicate", {}, None)  # a notification: no reply
        t.requests.put("{broken json")
        t.requests.put(json.dumps({"jsonrpc": "2.0", "id": 9, "method": 5}))
        t.push_request("run", {"run_id": "r4", "session": "s", "code": "a_b()['tool']"}, 10)
        replies = self.serve()
        self.assertEqual(replies[1]["result"], {"ok": True, "functions": 1})
        self.assertEqual(replies[2]["result"], {"ok": True, "result": {"x": 1}, "calls": 1})
        self.assertEqual(replies[3]["result"], {"ok": True})
        self.assertIn("a_b", sdk.shapes())
        self.assertEqual(replies[4]["error"]["code"], -32000)
        self.assertIn("line 1", replies[4]["error"]["message"])
        self.assertEqual(replies[5]["result"]["error_kind"], "exception")
        self.assertEqual(replies[6]["error"]["code"], -32602)
        self.assertEqual(replies[7]["error"]["code"], -32601)
        self.assertEqual(replies[None]["error"]["code"], -32700)
        self.assertEqual(replies[9]["error"]["code"], -32600)
        self.assertEqual(replies[10]["result"]["result"], "b")  # the failed load kept version 5
        self.assertEqual(len(t.replies()), 10)
        self.assertEqual(sdk.current().version, 5)

    def test_drop_session_forgets_the_namespace(self) -> None:
        t = self.t
        t.push_request("run", {"run_id": "r1", "session": "s1", "code": "x = 41"}, 1)
        t.push_request("run", {"run_id": "r2", "session": "s2", "code": "y = 1"}, 2)
        t.push_request("drop_session", {"session": "s1"}, None)  # a notification, as workers.c sends it
        t.push_request("drop_session", {}, None)  # malformed: ignored, the loop goes on
        t.push_request("run", {"run_id": "r3", "session": "s1", "code": "result = 'x' in dir()"}, 3)
        t.push_request("run", {"run_id": "r4", "session": "s2", "code": "result = y"}, 4)
        replies = self.serve()
        self.assertEqual(replies[3]["result"]["result"], False)  # s1's x is gone
        self.assertEqual(replies[4]["result"]["result"], 1)  # s2 untouched
        self.assertEqual(len(t.replies()), 4)  # notifications get no reply

    def test_drop_namespace_forgets_one_namespace(self) -> None:
        t = self.t
        t.push_request("run", {"run_id": "r1", "namespace": "n1", "code": "x = 41"}, 1)
        t.push_request("run", {"run_id": "r2", "namespace": "n2", "code": "y = 1"}, 2)
        t.push_request("drop_namespace", {"namespace": "n1"}, None)
        t.push_request("run", {"run_id": "r3", "namespace": "n1", "code": "result = 'x' in dir()"}, 3)
        t.push_request("run", {"run_id": "r4", "namespace": "n2", "code": "result = y"}, 4)
        replies = self.serve()
        self.assertEqual(replies[3]["result"]["result"], False)  # n1's x is gone
        self.assertEqual(replies[4]["result"]["result"], 1)  # n2, in the same worker, untouched

    def test_replies_are_strict_json(self) -> None:
        self.t.push_request("run", {"run_id": "r1", "code": "float('nan')"}, 1)
        self.serve()
        raw = [m for m in self.t.sent if m.get("id") == 1]
        self.assertEqual(raw[0]["result"]["result"], None)

    def test_loop_survives_a_failing_send(self) -> None:
        sends = []
        real_send = self.t.send

        def flaky(text: str) -> None:
            sends.append(text)
            if len(sends) == 1:
                raise RuntimeError("queue full")
            real_send(text)

        self.t.send = flaky  # type: ignore[method-assign]
        self.t.push_request("run", {"code": "1"}, 1)
        self.t.push_request("run", {"code": "2"}, 2)
        replies = self.serve()
        self.assertEqual(list(replies), [2])
        self.assertEqual(replies[2]["result"]["result"], 2)


# What the worker's start leaves for first use: search_tools' modules (its tables are half the
# runtime's import) and the modules of the values a result may hold (bench/runtime_import.py).
_ON_USE = ("codemcp_rt.search", "codemcp_rt.thesaurus", "codemcp_rt.semantic", "codemcp_rt.encoder",
           "datetime", "decimal", "fractions", "dataclasses")
_START = """
import json, sys
from codemcp_rt import discovery, runner, sdk, worker_main
def run(code):
    return json.loads(runner.run_json({"run_id": "r", "session": "s", "validate": True, "code": code}))
r = run("result = 1 + 1")
before = [m for m in %r if m in sys.modules]
from support import sdk_source  # (unittest imports dataclasses)
sdk.load_sdk(sdk_source({"gh_list_issues": ("gh", "list_issues", False)}), 1)
found = discovery.bind(sdk.current())["search_tools"]("list the issues")
values = run("import datetime, decimal, fractions, dataclasses\\n"
             "P = dataclasses.make_dataclass('P', ['x'])\\n"
             "result = [datetime.date(2024, 1, 2), datetime.timedelta(seconds=90), decimal.Decimal('1.5'),"
             " fractions.Fraction(1, 4), P(3), {datetime.date(2024, 1, 2): 1}]")
print(json.dumps([r.get("result"), before, [f["name"] for f in found], "codemcp_rt.search" in sys.modules,
                  values.get("result")]))
""" % (_ON_USE,)


class StartPathTest(unittest.TestCase):
    def test_a_plain_run_imports_only_what_it_uses(self) -> None:
        """The worker's start and a first plain run leave search's modules and the value
        types' modules out (a fresh interpreter); search_tools imports its own on first use
        and finds the function, and a result holding those values converts as before."""
        here = os.path.dirname(os.path.abspath(__file__))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
        out = subprocess.run([sys.executable, "-c", _START], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr[-2000:])
        result, before, names, after, values = json.loads(out.stdout.strip().splitlines()[-1])
        self.assertEqual(result, 2)
        self.assertEqual(before, [])
        self.assertEqual(names, ["gh_list_issues"])
        self.assertTrue(after)
        self.assertEqual(values, ["2024-01-02", 90.0, 1.5, 0.25, {"x": 3}, {"2024-01-02": 1}])


if __name__ == "__main__":
    unittest.main()
