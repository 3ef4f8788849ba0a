"""First-time-right programs, against the SDK sdkgen generates for the three
real servers (tests/data/sdkgen/{everything,memory,filesystem}.py, golden files) and result
shapes derived from their outputSchemas plus the text results the gateway learns:

  * the faulty corpus tests/data/firsttime/faulty/*.py is refused with every `# expect:`;
  * the valid corpus tests/data/firsttime/valid/*.py passes the validator;
  * literal argument checks, JS-style names, shape following and their false positives;
  * Pending is awaitable, top-level await / asyncio.gather / asyncio.run overlap calls;
  * writes keep program order per server; run-time errors on results get a hint.
"""

from __future__ import annotations

import glob
import json
import os
import time
import unittest

from fake_transport import FakeTransport, text_result
from support import RuntimeTest, sdk_source

from codemcp_rt import runner, runstate, sdk, transport, validator

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
SERVERS = ("everything", "memory", "filesystem")


def load_golden_sdk() -> tuple[dict, dict]:
    """Functions and meta (with input schemas) of the three golden SDK modules."""
    functions: dict = {}
    meta: dict = {}
    for name in SERVERS:
        with open(os.path.join(DATA, "sdkgen", name + ".py"), encoding="utf-8") as fh:
            loaded = sdk.load_sdk(fh.read(), name)
        assert loaded["ok"], loaded
        functions.update(sdk.current().functions)
        meta.update(sdk.current().meta)
    return functions, meta


def shape_of_schema(s: dict, depth: int = 0) -> dict:
    """src/catalog/shapes.c's shapes_of_schema, for the test's table."""
    if not isinstance(s, dict) or depth > 24:
        return {"k": "any"}
    t = s.get("type")
    if t == "object" or (t is None and isinstance(s.get("properties"), dict)):
        if not isinstance(s.get("properties"), dict):
            return {"k": "any"}
        out = {"k": "object", "fields": {k: shape_of_schema(v, depth + 1) for k, v in s["properties"].items()}}
        if s.get("additionalProperties") is not False:
            out["open"] = True
        return out
    if t == "array":
        items = s.get("items")
        return {"k": "array", "items": shape_of_schema(items, depth + 1)} if isinstance(items, dict) else {"k": "array"}
    leaf = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}.get(t)
    return {"k": "leaf", "t": leaf} if leaf else {"k": "any"}


def shapes_table() -> dict:
    table = {}
    for name in SERVERS:
        with open(os.path.join(DATA, "tools", name + ".json"), encoding="utf-8") as fh:
            dump = json.load(fh)
        for tool in dump["tools"]:
            fn = "%s_%s" % (name, "".join(c if c.isalnum() else "_" for c in tool["name"]))
            if "outputSchema" in tool:
                table[fn] = shape_of_schema(tool["outputSchema"])
    # What the gateway learns from one call of the text tools (shapes.c: text -> str).
    for fn in ("everything_echo", "everything_get_sum"):
        table[fn] = {"k": "leaf", "t": "str"}
    return table


FUNCTIONS, META = load_golden_sdk()
SHAPES = shapes_table()


def check(code: str, **opts) -> list[str]:
    return validator.validate(code, FUNCTIONS, META, shapes=SHAPES, **opts)


def read_case(path: str) -> tuple[str, list[str], str | None]:
    with open(path, encoding="utf-8") as fh:
        code = fh.read()
    expects = [l[len("# expect:"):].strip() for l in code.splitlines() if l.startswith("# expect:")]
    results = [l[len("# result:"):].strip() for l in code.splitlines() if l.startswith("# result:")]
    return code, expects, results[0] if results else None


def corpus(kind: str) -> list[str]:
    return sorted(glob.glob(os.path.join(DATA, "firsttime", kind, "*.py")))


class CorpusTest(unittest.TestCase):
    def setUp(self) -> None:
        validator.STRICT = True

    def tearDown(self) -> None:
        validator.STRICT = False

    def test_faulty_corpus_is_refused_with_the_fix(self) -> None:
        files = corpus("faulty")
        self.assertGreaterEqual(len(files), 60)
        for path in files:
            code, expects, _ = read_case(path)
            with self.subTest(os.path.basename(path)):
                self.assertTrue(expects, "a faulty case needs `# expect:` lines")
                report = "\n".join(check(code))
                for want in expects:
                    self.assertIn(want, report, "%s:\n%s" % (os.path.basename(path), report))

    def test_valid_corpus_passes(self) -> None:
        files = corpus("valid")
        self.assertGreaterEqual(len(files), 40)
        for path in files:
            code, expects, result = read_case(path)
            with self.subTest(os.path.basename(path)):
                self.assertEqual(expects, [])
                self.assertIsNotNone(result, "a valid case needs a `# result:` line")
                self.assertEqual(check(code), [])

    def test_old_corpus_keeps_its_verdicts_with_schemas(self) -> None:
        # The issue-4 corpus against the real SDK (now with input schemas): the valid
        # programs that only call the three servers stay valid.
        for path in sorted(glob.glob(os.path.join(DATA, "validator", "valid", "*.py"))):
            code, _, _ = read_case(path)
            if "github_enterprise" in code:
                continue
            with self.subTest(os.path.basename(path)):
                self.assertEqual(check(code), [])


class LiteralFalsePositiveTest(unittest.TestCase):
    """Computed values, spreads and unknown parts are never judged."""

    def test_computed_values_are_left_alone(self) -> None:
        for code in [
            "x = '1'\neverything_get_sum(a=x, b=2)",
            "everything_get_sum(a=int('1'), b=2)",
            "everything_get_sum(a=1 + 1, b=2.5)",
            "everything_get_sum(a=-1, b=1e3)",
            "everything_get_annotated_message(messageType=kind)" if False else "kind = 'error'\neverything_get_annotated_message(messageType=kind)",
            "ents = []\nmemory_create_entities(entities=ents)",
            "e = {'name': 'a'}\nmemory_create_entities(entities=[{**e, 'entityType': 't', 'observations': []}])",
            "memory_create_entities(entities=[{'name': n, 'entityType': t, 'observations': obs} for n, t, obs in []])",
            "memory_create_entities(entities=[*[], {'name': 'a', 'entityType': 't', 'observations': []}])",
            "filesystem_read_text_file(path=f'{1}.md')",
            "everything_get_resource_links(count=5)",
            "everything_get_resource_links(count=1.0)",
            "filesystem_read_multiple_files(paths=['a', 'b'])",
            "filesystem_read_text_file(path='x', head=2)",
            "memory_create_entities(entities=[{'name': 'a', 'entityType': 't', 'observations': [], 'extra': 1}])",
            "def everything_echo(message):\n    return message\neverything_echo(message=42)",
            "mcp = object()\nmcp.everything.echo(message='x')" if False else "class M:\n    pass\neverything = M()\neverything.echo = lambda **k: k\neverything.echo(message='x')",
            "import json\njson.dumps({'a': 1})",
            "import asyncio\nasyncio.run(asyncio.sleep(0))",
            "d = {'a': 1, 'b': 2}\neverything_get_sum(**d)",
            "everything_get_sum(*[1, 2])",
        ]:
            with self.subTest(code):
                self.assertEqual(check(code), [])

    def test_only_the_first_problems_of_an_argument(self) -> None:
        bad = [{"nme": i} for i in range(100)]
        problems = check("memory_create_entities(entities=%r)" % bad)
        self.assertEqual(len(problems), 3, problems)

    def test_true_is_not_a_number_but_an_integral_float_is_an_integer(self) -> None:
        self.assertIn("got bool False", check("everything_get_sum(a=False, b=1)")[0])
        self.assertEqual(check("everything_get_resource_links(count=2.0)"), [])


class ShapeFalsePositiveTest(unittest.TestCase):
    def test_conservative_cases(self) -> None:
        for code in [
            "g = memory_read_graph()\nfor e in g['entities']:\n    e['nme'] = 1\n    print(e['nme'])",
            "g = memory_read_graph()\nfor e in g['entities']:\n    print(e.get('nme'))",
            "g = memory_read_graph()\n[e['zz'] for e in [{'zz': 1}]]\n[e['name'] for e in g['entities']]",
            "g = memory_read_graph()\ng['entities'].append({'q': 1})\nfor e in g['entities']:\n    e['q']",
            "g = memory_read_graph()\nfor k in g:\n    print(k)",
            "g = memory_read_graph()\nfor e in g['entities']:\n    try:\n        e['nme']\n    except KeyError:\n        pass",
            "def f(e):\n    return e['nme']\ng = memory_read_graph()\nfor e in g['entities']:\n    f(e)",
            "g = memory_read_graph()\nfor e in g['entities']:\n    pass\nfor e in [{'x': 1}]:\n    e['x']",
            "g = memory_read_graph()\ne = g['entities']\ne = {'x': 1}\ne['x']",
            "r = everything_echo(message='x')\nr[0], r.upper(), r.split(':')",
            "r = everything_echo(message='x')\nr = {'text': r}\nr['text']",
            "g = memory_read_graph()\nkey = 'entities'\ng[key]",
            "g = memory_read_graph()\n[[o for o in e['observations']] for e in g['entities']]",
            "g = memory_read_graph()\nitems = g['entities'][:3]\n[i['name'] for i in items]",
        ]:
            with self.subTest(code):
                self.assertEqual(check(code), [])


class AsyncTest(RuntimeTest):
    delay = 0.4

    def test_top_level_await(self) -> None:
        env = self.run_code("r = await srv_get(n=1)\nr['args']['n']")
        self.assertEqual(env.get("result"), 1, env)
        env = self.run_code("await srv_get(n=3)")
        self.assertEqual(env["result"]["args"], {"n": 3}, env)

    def test_gather_of_pendings_overlaps(self) -> None:
        t0 = time.monotonic()
        env = self.run_code("import asyncio\nrs = await asyncio.gather(*[srv_get(n=i) for i in range(10)])\n"
                            "[r['args']['n'] for r in rs]")
        self.assertEqual(env.get("result"), list(range(10)), env)
        self.assertLess(time.monotonic() - t0, 3.0)  # 10 x 0.4 s one after the other would be 4 s

    def test_async_helpers_under_asyncio_run_overlap(self) -> None:
        code = ("import asyncio\nasync def h(i):\n    r = await srv_get(n=i)\n    return r['args']['n'] * 2\n"
                "async def main():\n    return await asyncio.gather(*(h(i) for i in range(10)))\n"
                "result = asyncio.run(main())")
        t0 = time.monotonic()
        env = self.run_code(code)
        self.assertEqual(env.get("result"), [i * 2 for i in range(10)], env)
        self.assertLess(time.monotonic() - t0, 3.0)

    def test_pending_awaited_outside_a_loop_and_failed_calls(self) -> None:
        env = self.run_code("import asyncio\nasync def one():\n    return await srv_get(n=5)\n"
                            "c = one()\ntry:\n    c.send(None)\nexcept StopIteration as e:\n    result = e.value['args']")
        self.assertEqual(env.get("result"), {"n": 5}, env)


class WriteOrderTest(unittest.TestCase):
    """A call after an unanswered write to the same server waits for the write."""

    def setUp(self) -> None:
        self.order: list[str] = []

        def responder(params):
            self.order.append("start %s" % params["tool"])
            if params["tool"] == "create":
                time.sleep(0.3)
            self.order.append("end %s" % params["tool"])
            return ("result", text_result("ok"))

        self.t = FakeTransport(responder)
        transport.set_transport(self.t)
        runner._sessions.clear()
        tools = {"srv_get": ("srv", "get", False), "srv_create": ("srv", "create", True),
                 "other_peek": ("other", "peek", False)}
        self.assertTrue(sdk.load_sdk(sdk_source(tools), 1)["ok"])

    def tearDown(self) -> None:
        runstate.end()
        transport.set_transport(None)

    def test_read_after_write_waits_and_other_servers_overlap(self) -> None:
        env = runner.run({"run_id": "r1", "session": "s", "code": "a = srv_create()\nc = other_peek()\nb = srv_get()\n[a, b, c]"})
        self.assertTrue(env["ok"], env)
        self.assertLess(self.order.index("end create"), self.order.index("start get"), self.order)
        # other_peek (another server) was sent before the write finished: it does not wait.
        self.assertLess(self.order.index("start peek"), self.order.index("end create"), self.order)


class ErrorHintTest(RuntimeTest):
    def test_key_error_names_tool_path_and_keys(self) -> None:
        env = self.run_code("r = srv_get(n=1)\nfor a in [r['args']]:\n    a['zz']")
        self.assertIn("Hint: srv_get's result['args'] has no key 'zz'; its keys: n.", env["error"])

    def test_type_error_on_text(self) -> None:
        env = self.run_code("r = srv_get(n=1)\nr['tool']['x']")
        self.assertIn("Hint: srv_get's result['tool'] is text (str), not a dict: 'get'.", env["error"])

    def test_attribute_error(self) -> None:
        env = self.run_code("r = srv_get(n=1)\nr.args.nothing")
        self.assertIn("srv_get's result['args'] has no key or attribute 'nothing'", env["error"])

    def test_plain_errors_get_no_hint(self) -> None:
        env = self.run_code("d = {}\nd['x']")
        self.assertNotIn("Hint:", env["error"])


class RealisticCorpusTest(unittest.TestCase):
    """tests/data/realistic: multi-step programs (fetch, loop, filter, join). Every
    preflight/*.py is refused with each `# expect:`; no valid/*.py and no runtime/*.py (a
    mistake only a run can show) is refused by the validator. The e2e test realistic.test.mjs
    runs all three through the binary."""

    def setUp(self) -> None:
        validator.STRICT = True

    def tearDown(self) -> None:
        validator.STRICT = False

    def test_preflight_mistakes_are_refused_with_the_fix(self) -> None:
        files = sorted(glob.glob(os.path.join(DATA, "realistic", "preflight", "*.py")))
        self.assertGreaterEqual(len(files), 20)
        for path in files:
            code, expects, _ = read_case(path)
            with self.subTest(os.path.basename(path)):
                self.assertTrue(expects)
                report = "\n".join(check(code))
                for want in expects:
                    self.assertIn(want, report, "%s:\n%s" % (os.path.basename(path), report))

    def test_valid_and_runtime_programs_pass(self) -> None:
        files = sorted(glob.glob(os.path.join(DATA, "realistic", "valid", "*.py")))
        files += sorted(glob.glob(os.path.join(DATA, "realistic", "runtime", "*.py")))
        self.assertGreaterEqual(len(files), 50)
        for path in files:
            code, _, _ = read_case(path)
            with self.subTest(os.path.basename(path)):
                self.assertEqual(check(code), [])


class RealisticConservativeTest(unittest.TestCase):
    """What the checks of the realistic corpus's classes must leave alone."""

    def setUp(self) -> None:
        validator.STRICT = True

    def tearDown(self) -> None:
        validator.STRICT = False

    def test_helper_results_misused(self) -> None:
        self.assertIn("describe: result is text (str), not a dict, so result['signature'] fails (line 2).",
                      "\n".join(check("d = describe('memory_read_graph')\nsig = d['signature']")))

    def test_result_without_call_on_a_name(self) -> None:
        self.assertIn("`.result` (line 2) is a method: write `.result()`",
                      "\n".join(check("p = everything_echo(message='a')\nprint(p.result.upper())")))

    def test_valid_forms_pass(self) -> None:
        for code in [
            # keys of a dict result used as text
            "r = memory_search_nodes(query='a')\nfor k in r:\n    print(k.upper(), len(r[k]))",
            # text joined to text, numbers added to numbers
            "s = everything_get_sum(a=1, b=2)\ntotal = ''\ntotal = total + s\nn = 0\nn = n + len(s)",
            # a filtered list the program then grows with its own items
            "g = memory_read_graph()\nxs = [e for e in g['entities'] if e['name']]\nxs.append({'foo': 1})\n"
            "for x in xs:\n    print(x['foo'] if 'foo' in x else x['name'])",
            # a helper also called with the program's own dict
            "def f(e):\n    return e['zzz']\ng = memory_read_graph()\n[f(e) for e in g['entities']]\nf({'zzz': 1})",
            # names the program defines itself
            "true = True\nnull = None\nx = [true, null]",
            "import json as JSON\nv = JSON.loads('1')",
            "class P:\n    def then(self, cb):\n        return cb(1)\nP().then(print)",
            # asyncio.run without a top-level await; awaiting asyncio.gather
            "import asyncio\nasync def main():\n    return await memory_read_graph()\nr = asyncio.run(main())",
            "import asyncio\nrs = await asyncio.gather(memory_read_graph())",
            # isinstance-guarded subscript of a text result
            "s = everything_get_sum(a=1, b=2)\nv = s['sum'] if isinstance(s, dict) else s",
            # json.loads of the text field
            "import json\nr = filesystem_read_text_file(path='c.json')\ncfg = json.loads(r['content'])",
            # a dict method and Pending's API on a result
            "r = memory_read_graph()\nks = list(r.keys())\nr.result()",
            # search_tools entries read as data
            "hits = search_tools('read file')\nnames = [h['name'] for h in hits]",
            "d = describe('memory_read_graph')\nfirst = d.splitlines()[0]",
            "p = everything_echo(message='a')\nf = p.result\ntext = f()",
        ]:
            with self.subTest(code):
                self.assertEqual(check(code), [])


class RealisticRuntimeTest(RuntimeTest):
    """Runtime messages of the realistic corpus's classes, through the runner with the
    golden memory SDK (input schemas included) and a fake upstream."""

    def setUp(self) -> None:
        super().setUp()
        with open(os.path.join(DATA, "sdkgen", "memory.py"), encoding="utf-8") as fh:
            loaded = sdk.load_sdk(fh.read(), 2)
        self.assertTrue(loaded["ok"], loaded)

    def test_built_arguments_are_checked_before_sending(self) -> None:
        env = self.run_code("ents = []\nfor n in ['a', 'b']:\n    ents.append({'name': n, 'type': 'p', 'observations': []})\n"
                            "memory_create_entities(entities=ents)")
        self.assertEqual(env["error_kind"], "exception", env)
        self.assertIn("memory_create_entities(...) was not sent: `entities[0]` has `type` where the key is "
                      "`entityType`", env["error"])
        self.assertIn("line 4", env["error"])
        self.assertEqual(self.t.calls(), [])

    def test_valid_built_arguments_are_sent(self) -> None:
        self.t.responder = lambda p: ("result", text_result({"entities": []}))
        env = self.run_code("ents = [{'name': n, 'entityType': 'p', 'observations': [n]} for n in 'ab']\n"
                            "r = memory_create_entities(entities=ents)\nresult = r['entities']")
        self.assertTrue(env["ok"], env)
        self.assertEqual(len(self.t.calls()), 1)

    def test_error_result_used_as_data_raises_with_the_server_text(self) -> None:
        self.t.responder = lambda p: ("result", text_result("ENOENT: no such file, open 'x'", is_error=True))
        env = self.run_code("g = memory_read_graph()\nnames = [e['name'] for e in g['entities']]")
        self.assertEqual(env["error_kind"], "tool_error", env)
        err = json.loads(env["error"])["tool_error"]
        self.assertIn("memory_read_graph answered with an error", err["message"])
        self.assertIn("ENOENT: no such file, open 'x'", err["message"])
        self.assertTrue(err["at"].startswith("(line 2) "), err)

    def test_error_result_is_still_text(self) -> None:
        self.t.responder = lambda p: ("result", text_result("ENOENT: gone", is_error=True))
        env = self.run_code("import json\ng = memory_read_graph()\nresult = [isinstance(g, str), 'ENOENT' in g, g[:6], str(g), "
                            "hasattr(g, 'nothing')]\ne = g.result()\nresult += [e[True], e[-1], e + '!', json.dumps(e), type(e[0]).__name__]\ntry:\n    g['x']\nexcept TypeError:\n    result.append('caught')")
        self.assertTrue(env["ok"], env)
        self.assertEqual(env["result"], [True, True, "ENOENT", "ENOENT: gone", False, "N", "e", "ENOENT: gone!",
                                         '"ENOENT: gone"', "str", "caught"])

    def test_failed_gather_entry_names_ok(self) -> None:
        self.t.responder = lambda p: ("error", {"code": -32000, "message": "upstream down",
                                                "data": {"kind": "upstream_error"}})
        env = self.run_code("outs = gather([memory_read_graph()])\nfor o in outs:\n    o['value']")
        self.assertIn("Hint: o is a gather() entry whose call failed (upstream_error): upstream down. "
                      "Check entry['ok']", env["error"])

    def test_zero_division_after_an_empty_search(self) -> None:
        self.t.responder = lambda p: ("result", text_result({"entities": [], "relations": []}))
        env = self.run_code("found = memory_search_nodes(query='zz')['entities']\n"
                            "counts = [len(e['observations']) for e in found]\navg = sum(counts) / len(counts)")
        self.assertIn("Hint: counts is empty, so the division is by zero. It comes from "
                      "memory_search_nodes(query='zz') (line 1): the search returned no matches.", env["error"])

    def test_key_error_on_parsed_data_lists_keys(self) -> None:
        env = self.run_code("import json\ncfg = json.loads('{\"retries\": 3, \"name\": \"x\"}')\ncfg['retry']")
        self.assertIn("Hint: cfg has no key 'retry'; its keys: retries, name. Did you mean 'retries'?", env["error"])

    def test_timeout_names_timeout_ms_and_line(self) -> None:
        self.t.responder = lambda p: ("error", {"code": -32001, "message": "memory did not answer within 5 ms",
                                                "data": {"kind": "timeout", "elapsed_ms": 5}})
        env = self.run_code("x = 1\ng = memory_read_graph(timeout_ms=5).result()")
        err = json.loads(env["error"])["tool_error"]
        self.assertIn("(line 2)", err["fix"])
        self.assertIn("timeout_ms=", err["fix"])

    def test_computed_name_gets_the_function_with_that_meaning(self) -> None:
        env = self.run_code("verb = 'add_relations'\nfn = globals()['memory_' + verb]")
        self.assertIn("Did you mean `memory_create_relations`?", env["error"])
        self.assertNotIn("delete", env["error"].split("Hint:")[1])


if __name__ == "__main__":
    unittest.main()
