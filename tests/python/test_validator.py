"""Tests for the pre-flight validator (python/codemcp_rt/validator.py) and shape checks
(python/codemcp_rt/shapes.py).

The SDK is built the way the worker builds it: sdkgen's golden output (tests/data/sdkgen/) is
compiled and executed, with `codemcp_rt.client` replaced by a recording stub, so the
validator sees real functions with real signatures. Then:
  * the corpus under tests/data/validator/: every faulty/*.py must produce, for each of
    its `# expect: <text>` header lines, a problem containing that text; every valid/*.py
    must produce no problem at all (and must compile);
  * direct tests for each kind of message and for the shape walk;
  * call sites are checked once per form: no site may get another site's verdict, and
    the shortcut for plain calls must agree with the general walk;
  * a micro-benchmark that prints timings (never asserts them: timing belongs in bench/).

Run: PYTHONPATH=python /usr/bin/python3 -m unittest tests/python/test_validator.py -v
     PYTHONPATH=python /usr/bin/python3 tests/python/test_validator.py bench
"""

from __future__ import annotations

import ast
import json
import os
import sys
import time
import types
import unittest
from unittest import mock

from codemcp_rt import shapes as shapes_mod
from codemcp_rt import validator

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "data", "validator")

GOLDEN = os.path.join(HERE, "..", "data", "sdkgen")
# The SDK as sdkgen emits it: the golden files of the sdkgen tests (tests/data/sdkgen/, checked
# against sdkgen's output by tests/unit/test_sdkgen.c), so a change of the generator reaches
# these tests too. Servers everything, memory and filesystem...
GOLDEN_SERVERS = ("everything", "memory", "filesystem")
# ...with the tools disabled in the gateway's configuration left out (absent from the SDK)...
DISABLED = ("everything_get_env", "filesystem_read_media_file")
# ...plus an HTTP server with no golden file: its name needs sanitizing and its search tool's
# schema allows additionalProperties (so the function forwards **extra).
EXTRA_SOURCE = '''

def github_enterprise_search_issues(q: str, per_page: int | None = None, *, timeout_ms: int | None = None, **extra: Any) -> dict[str, Any]:
    """Search issues and pull requests."""
    _args: dict[str, Any] = {**extra, "q": q}
    if per_page is not None:
        _args["per_page"] = per_page
    return _call("github-enterprise", "search_issues", _args, timeout_ms)


def github_enterprise_get_me(*, timeout_ms: int | None = None) -> dict[str, Any]:
    """Get the authenticated user."""
    _args: dict[str, Any] = {}
    return _call("github-enterprise", "get_me", _args, timeout_ms)
'''
EXTRA_META = {
    "github_enterprise_search_issues": {"server": "github-enterprise", "tool": "search_issues", "mutation": False},
    "github_enterprise_get_me": {"server": "github-enterprise", "tool": "get_me", "mutation": False},
}


def golden_sdk_source() -> str:
    """One SDK source, as the gateway would generate it for these servers: the golden files'
    functions (minus DISABLED) and one merged __codemcp_meta__."""
    bodies, meta, schemas = [], {}, {}
    for server in GOLDEN_SERVERS:
        with open(os.path.join(GOLDEN, server + ".py"), encoding="utf-8") as f:
            text = f.read()
        body, sep, rest = text.partition("\n__codemcp_meta__ = ")
        assert sep, "%s.py: no __codemcp_meta__" % server
        meta.update(ast.literal_eval(rest.split("\n}\n", 1)[0] + "\n}"))
        loads = rest.partition("__codemcp_schemas__ = _json.loads(")[2]
        if loads:  # input schemas (argcheck.py reads them), one JSON string literal
            schemas.update(json.loads(ast.literal_eval(loads.split(")\n", 1)[0])))
        for name in DISABLED:
            start = body.find("\ndef %s(" % name)
            if start >= 0:
                end = body.find("\n\n\ndef ", start + 1)
                body = body[:start] + (body[end + 2:] if end >= 0 else "")
                meta.pop(name, None)
        bodies.append(body.rstrip() + "\n\n")
    meta.update(EXTRA_META)
    for name in DISABLED:
        schemas.pop(name, None)
    return ("".join(bodies) + EXTRA_SOURCE + "\n\n__codemcp_meta__ = " + repr(meta)
            + "\n\n__codemcp_schemas__ = " + repr(schemas)
            + "\n\n__all__ = [name for name in __codemcp_meta__]\n")


SDK_SOURCE = golden_sdk_source()

LEAF = {"k": "leaf"}


def obj(**fields):
    return {"k": "object", "fields": fields}


def arr(items):
    return {"k": "array", "items": items}


ENTITY = obj(name=LEAF, entityType=LEAF, observations=arr(LEAF))
RELATION = obj(**{"from": LEAF, "to": LEAF, "relationType": LEAF})
GRAPH = obj(entities=arr(ENTITY), relations=arr(RELATION))
CONTENT = obj(content=LEAF)
ISSUE = obj(
    number=LEAF,
    title=LEAF,
    state=LEAF,
    body=LEAF,
    user=obj(login=LEAF, id=LEAF),
    labels=arr(obj(name=LEAF, color=LEAF)),
)
# As the gateway ships them: seeded from outputSchema (memory, filesystem, everything's
# structured content) or learned from real results (github).
SHAPES = {
    "memory_read_graph": GRAPH,
    "memory_search_nodes": GRAPH,
    "memory_open_nodes": GRAPH,
    "memory_create_entities": obj(entities=arr(ENTITY)),
    "memory_create_relations": obj(relations=arr(RELATION)),
    "memory_add_observations": obj(results=arr(obj(entityName=LEAF, addedObservations=arr(LEAF)))),
    "memory_delete_entities": obj(success=LEAF, message=LEAF),
    "filesystem_read_text_file": CONTENT,
    "filesystem_write_file": CONTENT,
    "filesystem_list_directory": CONTENT,
    "filesystem_get_file_info": CONTENT,
    "everything_get_structured_content": obj(temperature=LEAF, conditions=LEAF, humidity=LEAF),
    "everything_get_sum": LEAF,
    "everything_echo": {"k": "any"},
    "github_enterprise_search_issues": obj(total_count=LEAF, incomplete_results=LEAF, items=arr(ISSUE)),
    "github_enterprise_get_me": obj(login=LEAF, id=LEAF, name=LEAF, email=LEAF),
}


class _StubClient(types.ModuleType):
    """Stands in for codemcp_rt.client while the SDK is built; records every call so the
    tests can prove validation never runs anything."""

    def __init__(self) -> None:
        super().__init__("codemcp_rt.client")
        self.calls: list[tuple] = []

    def call(self, server, tool, args=None, timeout_ms=None):
        self.calls.append((server, tool, args, timeout_ms))
        return {}


def build_sdk(source: str = SDK_SOURCE):
    """Compile and run the SDK source like the worker does; returns (module, stub)."""
    stub = _StubClient()
    module = types.ModuleType("codemcp_sdk")
    with mock.patch.dict(sys.modules, {"codemcp_rt.client": stub}):
        exec(compile(source, "<codemcp_sdk>", "exec"), module.__dict__)
    return module, stub


SDK, STUB = build_sdk()
FUNCTIONS = {name: getattr(SDK, name) for name in SDK.__all__}
META = SDK.__codemcp_meta__


def check(code: str, **opts) -> list[str]:
    opts.setdefault("shapes", SHAPES)
    opts.setdefault("disabled", DISABLED)
    return validator.validate(code, FUNCTIONS, META, **opts)


def read_case(path: str) -> tuple[str, list[str], dict]:
    """A corpus file: its code, its `# expect:` lines and its `# options: {json}`."""
    with open(path, encoding="utf-8") as fh:
        code = fh.read()
    expects: list[str] = []
    options: dict = {}
    for line in code.splitlines():
        if line.startswith("# expect:"):
            expects.append(line[len("# expect:") :].strip())
        elif line.startswith("# options:"):
            options = json.loads(line[len("# options:") :])
    return code, expects, options


def corpus(kind: str) -> list[str]:
    d = os.path.join(CORPUS, kind)
    return sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(".py"))


class CorpusTest(unittest.TestCase):
    def setUp(self) -> None:
        validator.STRICT = True  # an internal error must fail the test, not pass the code
        STUB.calls.clear()

    def tearDown(self) -> None:
        validator.STRICT = False
        self.assertEqual(STUB.calls, [], "validation must never call a tool")

    def test_faulty_corpus(self) -> None:
        files = corpus("faulty")
        self.assertGreaterEqual(len(files), 40)
        for path in files:
            code, expects, options = read_case(path)
            with self.subTest(case=os.path.basename(path)):
                self.assertTrue(expects, "faulty case without `# expect:` lines")
                problems = check(code, **options)
                for want in expects:
                    self.assertTrue(
                        any(want in p for p in problems),
                        "expected a problem containing %r, got:\n%s" % (want, "\n".join(problems)),
                    )
                report = validator.format_report(problems)
                self.assertTrue(report.startswith(validator.HEADER + "\n- "))

    def test_valid_corpus(self) -> None:
        files = corpus("valid")
        self.assertGreaterEqual(len(files), 40)
        for path in files:
            code, expects, options = read_case(path)
            with self.subTest(case=os.path.basename(path)):
                self.assertEqual(expects, [])
                compile(code, path, "exec")  # a valid case must really be valid Python
                self.assertEqual(check(code, **options), [])
                # previewing must never add a problem either
                self.assertEqual(check(code, **{**options, "enforce_mutations": True, "dry_run": True}), [])


class MessageTest(unittest.TestCase):
    def setUp(self) -> None:
        validator.STRICT = True

    def tearDown(self) -> None:
        validator.STRICT = False

    def test_syntax_error_names_line_column_and_text(self) -> None:
        problems = check("a = 1\nif a == 1\n    print(a)\n")
        self.assertEqual(len(problems), 1)
        first, text, caret = problems[0].split("\n")
        self.assertRegex(first, r"^SyntaxError: .+ \(line 2, col \d+\)\.$")
        self.assertEqual(text.strip(), "if a == 1")
        self.assertTrue(caret.strip() == "^")
        report = validator.format_report(problems)
        self.assertIn("\n- SyntaxError:", report)
        self.assertIn("\n      if a == 1", report)  # continuation lines stay under their item

    def test_syntax_error_nul_byte(self) -> None:
        problems = check("x = 1\0")
        self.assertEqual(len(problems), 1)
        self.assertTrue(problems[0].startswith("SyntaxError:"))

    def test_unknown_function_with_suggestion(self) -> None:
        self.assertEqual(
            check("memory_read_grph()\n"),
            ["`memory_read_grph` is not a known SDK function (line 1). Did you mean `memory_read_graph`?"],
        )

    def test_unknown_function_prefix_only_lists_server(self) -> None:
        (p,) = check("x = 1\ngithub_enterprise_zzz_qqq_www()\n")
        self.assertTrue(p.startswith("`github_enterprise_zzz_qqq_www` is not a known SDK function (line 2)."))
        self.assertIn("github_enterprise_get_me", p)

    def test_unknown_function_wrong_server_suggests_right_tool(self) -> None:
        (p,) = check("filesystem_search_nodes(query='x')\n")
        self.assertIn("`memory_search_nodes`", p)

    def test_unrelated_undefined_name_is_not_flagged(self) -> None:
        self.assertEqual(check("helper_thing(1)\nfrobnicate()\n"), [])

    def test_disabled_tool(self) -> None:
        self.assertEqual(
            check("x = everything_get_env()\n"),
            ["`everything_get_env` is disabled in this gateway's configuration (line 1)."],
        )

    def test_unknown_keyword_with_suggestion(self) -> None:
        self.assertEqual(
            check("everything_echo(mesage='hi')\n"),
            ["unknown argument `mesage` for everything_echo (line 1). Did you mean `message`?"],
        )

    def test_unknown_keyword_lists_valid_arguments(self) -> None:
        self.assertEqual(
            check("everything_get_sum(a=1, b=2, zzz=3)\n"),
            ["unknown argument `zzz` for everything_get_sum (line 1). Valid arguments: a, b, timeout_ms."],
        )

    def test_timeout_ms_always_valid_and_extra_allowed(self) -> None:
        self.assertEqual(check("everything_get_sum(1, 2, timeout_ms=5)\n"), [])
        self.assertEqual(check("github_enterprise_search_issues(q='x', sort='updated', order='asc')\n"), [])

    def test_missing_required(self) -> None:
        self.assertEqual(
            check("\neverything_get_sum()\n"),
            ["everything_get_sum: missing required argument(s) `a`, `b` (line 2)."],
        )
        self.assertEqual(check("everything_get_sum(*[1, 2])\neverything_get_sum(**{'a': 1, 'b': 2})\n"), [])

    def test_too_many_positional(self) -> None:
        self.assertEqual(
            check("everything_get_sum(1, 2, 3)\n"),
            ["everything_get_sum takes 2 positional argument(s) but 3 were given (line 1)."],
        )

    def test_multiple_values(self) -> None:
        self.assertEqual(
            check("everything_get_sum(1, 2, b=3)\n"),
            ["everything_get_sum got multiple values for argument `b` (line 1)."],
        )

    def test_mutation_refused_once_per_function(self) -> None:
        code = "memory_create_entities(entities=[])\nmemory_create_entities(entities=[])\n"
        want = (
            'memory_create_entities is a write tool and was not authorized (line 1). Re-send with '
            '"allow_mutations": ["memory_create_entities"], or preview it with "dry_run": true.'
        )
        self.assertEqual(check(code, enforce_mutations=True), [want])
        self.assertEqual(check(code, enforce_mutations=True, allow_mutations=["memory_create_entities"]), [])
        self.assertEqual(check(code, enforce_mutations=True, dry_run=True), [])
        self.assertEqual(check(code), [])
        self.assertEqual(check("memory_read_graph()\n", enforce_mutations=True), [])

    def test_mutation_allow_forms(self) -> None:
        code = "memory_create_entities(entities=[])\n"
        for form in ("memory_create_entities", "memory/create_entities", "memory.create_entities", "memory/*", "*"):
            with self.subTest(form=form):
                self.assertEqual(check(code, enforce_mutations=True, allow_mutations=[form]), [])
        for form in ("memory_create_relations", "filesystem/*", "create"):
            with self.subTest(form=form):
                self.assertEqual(len(check(code, enforce_mutations=True, allow_mutations=[form])), 1)

    def test_stdlib_sources_never_crash_or_flag(self) -> None:
        # Real-world code of every shape: parsed and walked without an error, no finding.
        import dataclasses, difflib, inspect, json.decoder, argparse, tarfile, http.client, unittest.case
        import email.message, pathlib, typing, asyncio.base_events, collections, re._parser
        for mod in (dataclasses, difflib, inspect, json.decoder, argparse, tarfile, http.client, unittest.case,
                    email.message, pathlib, typing, asyncio.base_events, collections, re._parser, ast):
            with self.subTest(module=mod.__name__), open(mod.__file__, encoding="utf-8") as fh:
                self.assertEqual(check(fh.read(), enforce_mutations=True), [])

    def test_problems_sorted_by_line(self) -> None:
        code = "x = 1\neverything_echo()\neverythng_echo(message='a')\neverything_get_sum(1, 2, 3)\n"
        lines = [int(p.split("(line ")[1].split(")")[0]) for p in check(code)]
        self.assertEqual(lines, [2, 3, 4])

    def test_shadowed_names_are_left_alone(self) -> None:
        for code in (
            "def everything_echo(**k):\n    return k\neverything_echo(foo=1)\n",
            "everything_echo = print\neverything_echo(foo=1)\n",
            "for memory_read_grph in [print]:\n    memory_read_grph()\n",
            "from os import getcwd as filesystem_cwd\nfilesystem_cwd()\n",
            "import json as memory_json\nmemory_json()\n",
        ):
            with self.subTest(code=code):
                self.assertEqual(check(code, enforce_mutations=True), [])

    def test_dynamic_programs_are_left_alone(self) -> None:
        for code in (
            "globals()['everythng_echo'] = everything_echo\neverythng_echo(message='x')\n",
            "exec('memory_x = print')\nmemory_x()\n",
            "import sys\nsys.modules[__name__].memory_y = print\nmemory_y()\n",
        ):
            with self.subTest(code=code):
                self.assertEqual(check(code), [])

    def test_shared_tree_gives_the_same_problems(self) -> None:
        code = "everythng_echo(message='x')\neverything_get_sum(1)\ng = memory_read_graph()\ng['zz']\n"
        self.assertEqual(len(check(code)), 3)
        self.assertEqual(check(code, tree=ast.parse(code)), check(code))

    def test_known_names_are_not_unknown(self) -> None:
        # e.g. a helper a session defined in an earlier run
        self.assertEqual(len(check("memory_summary()\n")), 1)
        self.assertEqual(check("memory_summary()\n", known_names=["memory_summary"]), [])

    def test_format_report_caps_length(self) -> None:
        report = validator.format_report(["p%d" % i for i in range(45)])
        lines = report.split("\n")
        self.assertEqual(lines[0], validator.HEADER)
        self.assertEqual(len(lines), 1 + 40 + 1)
        self.assertIn("5 more", lines[-1])

    def test_signature_cache_follows_reloaded_sdk(self) -> None:
        # A reload replaces the function objects; the new signature must be used.
        src = SDK_SOURCE.replace(
            "def everything_echo(message: str, *,", "def everything_echo(message: str, loud: bool | None = None, *,"
        )
        module, _ = build_sdk(src)
        functions = {n: getattr(module, n) for n in module.__all__}
        code = "everything_echo(message='x', loud=True)\n"
        self.assertEqual(validator.validate(code, functions, META), [])
        self.assertEqual(len(validator.validate(code, FUNCTIONS, META)), 1)

    def test_internal_error_never_blocks_outside_tests(self) -> None:
        code = "everything_echo(message='x')\n"
        with self.assertRaises(TypeError):  # STRICT (set in setUp): our bug surfaces
            validator.validate(code, None, None)  # type: ignore[arg-type]
        validator.STRICT = False
        self.assertEqual(validator.validate(code, None, None), [])  # type: ignore[arg-type]
        # a function whose signature cannot be read is still callable: no argument checks
        self.assertEqual(validator.validate("everything_echo(zzz=1)\n", {"everything_echo": max}, {}), [])


class CallFormTest(unittest.TestCase):
    """Call sites are checked once per form (callcheck): name, positional count, keyword
    names, *spread. The grouping must never hand one site another's verdict."""

    def setUp(self) -> None:
        validator.STRICT = True

    def tearDown(self) -> None:
        validator.STRICT = False

    def test_every_site_of_a_faulty_form_is_reported_with_its_line(self) -> None:
        lines = ["p%d = everything_get_sum(a=%d, b=1)" % (i, i) for i in range(300)]
        lines[7] = "p7 = everything_get_sum(a=7)"
        lines[250] = "p250 = everything_get_sum(a=250)"
        lines[100] = "p100 = everything_get_sum(a=100, bb=1)"
        self.assertEqual(
            check("\n".join(lines)),
            [
                "everything_get_sum: missing required argument(s) `b` (line 8).",
                "unknown argument `bb` for everything_get_sum (line 101). Did you mean `b`?",
                "everything_get_sum: missing required argument(s) `b` (line 251).",
            ],
        )

    def test_each_call_shape_gets_its_own_verdict(self) -> None:
        ok = ["everything_get_sum(a=1, b=2)", "everything_get_sum(b=2, a=1)", "everything_get_sum(1, b=2)",
              "everything_get_sum(1, 2)", "everything_get_sum(*xs)", "everything_get_sum(1, *xs)",
              "everything_get_sum(**kw)", "everything_get_sum(a=1, **kw)", "everything_get_sum(1, 2, timeout_ms=5)"]
        bad = {
            "everything_get_sum(a=1)": "missing required argument(s) `b`",
            "everything_get_sum(1)": "missing required argument(s) `b`",
            "everything_get_sum(1, 2, 3)": "takes 2 positional argument(s) but 3 were given",
            "everything_get_sum(1, a=2, b=3)": "got multiple values for argument `a`",
            "everything_get_sum(*xs, c=1)": "unknown argument `c`",
        }
        for n in range(len(ok) + 1):  # every mix of fine forms around the faulty ones
            code = "\n".join(ok[:n] + list(bad) + ok[n:] + list(bad))
            problems = check(code)
            self.assertEqual(len(problems), 2 * len(bad), problems)
            for i, (line, want) in enumerate(bad.items()):
                self.assertIn(want, problems[i])
                self.assertIn("(line %d)" % (n + i + 1), problems[i])

    def test_write_is_reported_once_at_its_first_site_before_its_argument_problems(self) -> None:
        code = (
            "def later():\n"
            "    memory_create_entities(entities=[], extra=1)\n"
            "memory_create_entities()\n"
            "memory_create_entities(entities=[])\n"
        )
        problems = check(code, enforce_mutations=True)
        self.assertEqual(len(problems), 3, problems)
        self.assertTrue(problems[0].startswith("memory_create_entities is a write tool and was not authorized (line 2)"))
        self.assertIn("unknown argument `extra` for memory_create_entities (line 2)", problems[1])
        self.assertIn("missing required argument(s) `entities` (line 3)", problems[2])

    def test_decorator_sites_are_left_out_but_not_their_form(self) -> None:
        code = "@everything_echo(mesage='x')\ndef f():\n    pass\neverything_echo(mesage='x')\n"
        (p,) = check(code)
        self.assertIn("(line 4)", p)

    def test_a_name_bound_anywhere_silences_all_its_forms(self) -> None:
        code = "everything_echo(mesage='x')\neverything_echo()\neverything_echo = print\n"
        self.assertEqual(check(code), [])

    def test_nothing_is_kept_between_calls_for_another_sdk(self) -> None:
        # The same program (the same forms) against an SDK whose function changed between
        # two validations: the second verdict is the new SDK's, never the first one's.
        code = "\n".join("r%d = everything_echo(message='m%d')" % (i, i) for i in range(50))
        self.assertEqual(check(code), [])
        module, _ = build_sdk(SDK_SOURCE.replace("def everything_echo(message: str,", "def everything_echo(text: str,"))
        functions = {n: getattr(module, n) for n in module.__all__}
        problems = validator.validate(code, functions, module.__codemcp_meta__)
        self.assertEqual(len(problems), 100, problems[:3])  # unknown `message` + missing `text`, each site
        self.assertEqual(check(code), [])  # and back

    def test_nothing_is_kept_between_calls_for_other_shapes(self) -> None:
        code = "r = memory_read_graph()\nprint(r['entities'], r['nodes'])\n"
        (p,) = check(code)
        self.assertIn("no field `nodes`", p)
        table = dict(SHAPES, memory_read_graph=obj(entities=arr(ENTITY), nodes=LEAF))
        self.assertEqual(check(code, shapes=table), [])
        (p,) = check(code, shapes=dict(SHAPES, memory_read_graph=obj(nodes=LEAF)))
        self.assertIn("no field `entities`", p)

    def test_plain_call_shortcut_matches_the_general_walk(self) -> None:
        # Calls whose arguments are all constants or names skip the general walk. Making
        # every argument non-plain (x -> (x if True else None)) forces the general walk:
        # the verdict of every corpus program must not change.
        class Unplain(ast.NodeTransformer):
            def visit_Call(self, node: ast.Call) -> ast.Call:
                self.generic_visit(node)
                wrap = lambda v: ast.copy_location(ast.IfExp(ast.Constant(True), v, ast.Constant(None)), v)
                node.args = [a if isinstance(a, ast.Starred) else wrap(a) for a in node.args]
                for k in node.keywords:
                    k.value = wrap(k.value)
                return node

        # What the shortcut must do itself: strings it passes count as mentioned keys (no
        # field check on them), names it passes may make the program dynamic (no checks).
        quiet = {
            'r = memory_read_graph()\nlog("zz")\nprint(r["zz"])\n': "log(1)",
            'r = memory_read_graph()\nx = log(1, k="zz")\nprint(r["zz"])\n': 'log(1, k="z")',
            'r = memory_read_graph()\nlog(eval)\nprint(r["zz"])\n': "log(e)",
            'r = memory_read_graph()\nx = log(k=globals)\nprint(r["zz"])\n': "log(k=g)",
        }
        for code, plain in quiet.items():
            with self.subTest(code=code):
                self.assertEqual(check(code), [])
                loud = code.split("\n")
                loud[1] = plain
                self.assertEqual(len(check("\n".join(loud))), 1)  # r["zz"] is flagged
        cases = [(code, {}) for code in quiet]
        for path in corpus("faulty") + corpus("valid"):
            code, _, options = read_case(path)
            cases.append((code, options))
        for code, options in cases:
            try:
                tree = ast.parse(code)
            except SyntaxError:
                continue
            with self.subTest(code=code[:60]):
                general = ast.fix_missing_locations(Unplain().visit(ast.parse(code)))
                self.assertEqual(check(code, tree=general, **options), check(code, tree=tree, **options))

    def test_form_of_plain_calls(self) -> None:
        from codemcp_rt import callcheck

        for src in ("f()", "f(1, 'a', x)", "f(a=1, b=x)", "f(1, b='x', timeout_ms=3)"):
            call = ast.parse(src).body[0].value
            f = validator._Facts()
            self.assertEqual(validator._plain_form(f, call, "f"), callcheck.form_of(call, "f"))
        for src in ("f(*a)", "f(**k)", "f(g(1))", "f(a=[1])"):
            call = ast.parse(src).body[0].value
            self.assertIsNone(validator._plain_form(validator._Facts(), call, "f"))
        self.assertNotEqual(
            callcheck.form_of(ast.parse("f(*a)").body[0].value, "f"), callcheck.form_of(ast.parse("f(a)").body[0].value, "f")
        )


class ShapeTest(unittest.TestCase):
    def setUp(self) -> None:
        validator.STRICT = True

    def tearDown(self) -> None:
        validator.STRICT = False

    def test_top_level_and_deep_fields(self) -> None:
        code = (
            "r = github_enterprise_search_issues(q='is:open')\n"
            "print(r['total_cont'])\n"
            "print(r['items'][0]['numbr'])\n"
            "print(r.items)\n"
            "print(r['items'][-1]['user']['logn'])\n"
        )
        self.assertEqual(
            check(code),
            [
                "github_enterprise_search_issues: result has no field `total_cont` (line 2). Did you mean `total_count`?",
                "github_enterprise_search_issues: result['items'][0] has no field `numbr` (line 3). Did you mean `number`?",
                "github_enterprise_search_issues: result['items'][-1]['user'] has no field `logn` (line 5). "
                "Did you mean `login`?",
            ],
        )

    def test_attribute_access_and_result_call(self) -> None:
        code = (
            "g = memory_read_graph().result()\n"
            "a = g.entites\n"
            "w = everything_get_structured_content(location='Chicago')\n"
            "b = w.result()['humidty']\n"
            "c = w.keys(), w.get('nope'), w.copy()\n"
        )
        self.assertEqual(
            check(code),
            [
                "memory_read_graph: result has no field `entites` (line 2). Did you mean `entities`?",
                "everything_get_structured_content: result has no field `humidty` (line 4). Did you mean `humidity`?",
            ],
        )

    def test_no_close_match_lists_fields(self) -> None:
        (p,) = check("w = everything_get_structured_content(location='Chicago')\nw['temp']\n")
        self.assertEqual(
            p,
            "everything_get_structured_content: result has no field `temp` (line 2). "
            "Fields: conditions, humidity, temperature.",
        )

    def test_conservative_cases(self) -> None:
        cases = {
            "rebound": "r = memory_read_graph()\nr = {'x': 1}\nr['x']\n",
            "loop target": "r = memory_read_graph()\nfor r in [{}]:\n    pass\nr['x']\n",
            "augassign": "r = memory_read_graph()\nr |= {'zz': 1}\nr['zz']\n",
            "deleted": "r = memory_read_graph()\ndel r\n",
            "param elsewhere": "r = memory_read_graph()\ndef f(r):\n    return r['x']\n",
            "guarded by in": "r = memory_read_graph()\nif 'extra' in r:\n    print(r['extra'])\n",
            "try KeyError": "r = memory_read_graph()\ntry:\n    r['extra']\nexcept KeyError:\n    pass\n",
            "written key": "r = memory_read_graph()\nr['note'] = 1\nprint(r['note'])\n",
            "computed key write": "r = memory_read_graph()\nk = input()\nr[k] = 1\nprint(r['zz'])\n",
            "update": "r = memory_read_graph()\nr.update(other)\nprint(r['zz'])\n",
            "list growth": (
                "r = memory_read_graph()\nr['entities'].append(other)\nprint(r['entities'][-1]['zz'])\n"
            ),
            "replaced subtree": "r = memory_read_graph()\nr['entities'] = other\nprint(r['entities'][0]['zz'])\n",
            "before binding": "def f():\n    return r['zz']\nr = memory_read_graph()\n",
            "shadowed fn": "def memory_read_graph():\n    return {}\nr = memory_read_graph()\nr['zz']\n",
            "leaf": "c = filesystem_read_text_file(path='/a')\nc['content'][0]\nc['content'].splitlines()\n",
            "unknown shape": "e = everything_echo(message='x')\ne['whatever']\n",
            "no shape": "e = everything_get_tiny_image()\ne['whatever']\n",
            "computed index": "r = memory_read_graph()\ni = 0\nr['entities'][i]['zz']\n",
            "class scope": "class C:\n    r = memory_read_graph()\n    z = r['zz']\n",
            "dunder attr": "r = memory_read_graph()\nr.__class__\nr._private\n",
            "method on array": "r = memory_read_graph()\nr['entities'].count(1)\n",
            "exec": "r = memory_read_graph()\nexec('r = {}')\nr['zz']\n",
        }
        for name, code in cases.items():
            with self.subTest(case=name):
                self.assertEqual(check(code), [])

    def test_fresh_containers_keep_checks_on(self) -> None:
        code = (
            "r = memory_read_graph()\n"
            "counts = {}\n"
            "names = []\n"
            "for e in r['entities']:\n"
            "    counts[e['entityType']] = counts.get(e['entityType'], 0) + 1\n"
            "    names.append(e['name'])\n"
            "print(r['entities'][0]['nam'])\n"
        )
        (p,) = check(code)
        self.assertIn("result['entities'][0] has no field `nam` (line 7)", p)

    def test_shapes_off(self) -> None:
        self.assertEqual(check("r = memory_read_graph()\nr['zz']\n", shapes=None), [])

    def test_map_like_objects_are_open(self) -> None:
        table = {"memory_read_graph": obj(**{"2024-01-01": LEAF, "2024-01-02": LEAF})}
        self.assertEqual(check("r = memory_read_graph()\nr['2024-02-01']\n", shapes=table), [])
        table = {"memory_read_graph": {"k": "object", "fields": {"a": LEAF}, "open": True}}
        self.assertEqual(check("r = memory_read_graph()\nr['b']\n", shapes=table), [])

    def test_check_path_directly(self) -> None:
        steps = [("key", "items", 3), ("slice", None, 3), ("key", 0, 3), ("attr", "titel", 3)]
        self.assertEqual(
            shapes_mod.check_path("gh", SHAPES["github_enterprise_search_issues"], steps),
            "gh: result['items'][0] has no field `titel` (line 3). Did you mean `title`?",
        )
        self.assertIsNone(shapes_mod.check_path("gh", SHAPES["github_enterprise_search_issues"], steps[:3]))
        self.assertIsNone(
            shapes_mod.check_path("gh", SHAPES["github_enterprise_search_issues"], steps, arrays_grow=True)
        )
        self.assertIsNone(shapes_mod.check_path("gh", {"k": "any"}, steps))
        self.assertIsNone(shapes_mod.check_path("gh", {"k": "strange"}, steps))

    def test_set_shapes_keeps_well_formed_entries(self) -> None:
        try:
            n = shapes_mod.set_shapes(
                {
                    "ok": GRAPH,
                    "bad_kind": {"k": 3},
                    "bad_fields": {"k": "object", "fields": [1]},
                    "bad_nested": obj(x={"nope": 1}),
                    7: GRAPH,
                }
            )
            self.assertEqual(n, 1)
            self.assertEqual(list(shapes_mod.current()), ["ok"])
            self.assertEqual(shapes_mod.set_shapes("garbage"), 0)
            self.assertEqual(shapes_mod.current(), {})
        finally:
            shapes_mod.set_shapes({})


# -- micro-benchmark (prints, never asserts) -------------------------------------------------


def _program_200_lines() -> str:
    parts = []
    for i in range(25):
        parts.append(
            (
                "g{i} = memory_search_nodes(query='q{i}')\n"
                "names{i} = [e['name'] for e in g{i}['entities'] if e['entityType'] == 'person']\n"
                "if g{i}['relations']:\n"
                "    first{i} = g{i}['relations'][0]['from']\n"
                "else:\n"
                "    first{i} = None\n"
                "out{i} = {{'n': len(names{i}), 'first': first{i}, 'sum': everything_get_sum(a={i}, b=2)}}\n"
                "print(out{i})\n"
            ).format(i=i)
        )
    return "".join(parts)


def _program_500_calls() -> str:
    lines = ["results = []"]
    for i in range(500):
        lines.append("results.append(everything_get_sum(%d, b=%d, timeout_ms=1000))" % (i, i + 1))
    lines.append("result = [r for r in results]")
    return "\n".join(lines) + "\n"


def _program_500_sites() -> str:
    """bench/validation.mjs's worst case: 500 call sites, one per line, then all read."""
    lines = ["p%d = everything_get_sum(a=%d, b=1)" % (i, i) for i in range(500)]
    lines.append("vals = [%s]" % ", ".join("p%d" % i for i in range(500)))
    return "\n".join(lines) + "\n"


def bench(rounds: int = 30) -> dict[str, float]:
    """Median milliseconds, per program, of: ast.parse alone; compile() of the source
    (what a run costs without validation); validate() parsing itself; validate() given
    the caller's tree (the runner parses anyway)."""
    out: dict[str, float] = {}
    programs = (("200 lines", _program_200_lines()), ("500 SDK calls", _program_500_calls()),
                ("500 call sites", _program_500_sites()))
    for label, code in programs:
        assert len(code.splitlines()) >= 200
        times: dict[str, list[float]] = {"ast.parse": [], "compile": [], "validate": [], "validate(tree=)": []}
        for _ in range(rounds):
            t0 = time.perf_counter()
            tree = ast.parse(code)
            t1 = time.perf_counter()
            compile(code, "<bench>", "exec")
            t2 = time.perf_counter()
            problems = check(code, enforce_mutations=True)
            t3 = time.perf_counter()
            again = check(code, enforce_mutations=True, tree=tree)
            t4 = time.perf_counter()
            assert problems == again == [], problems
            for key, dt in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                times[key].append(dt * 1e3)
        for key, values in times.items():
            out["%s: %s" % (label, key)] = sorted(values)[rounds // 2]
    return out


class BenchTest(unittest.TestCase):
    def test_benchmark_prints(self) -> None:
        for label, ms in bench(rounds=15).items():
            print("\n  validator bench %-28s %.2f ms (median)" % (label, ms), end="")
        print()


if __name__ == "__main__":
    if sys.argv[1:] == ["bench"]:
        for label, ms in bench().items():
            print("%-30s %.2f ms (median)" % (label, ms))
    else:
        unittest.main()
