"""runner.run(): results, sessions, errors, envelopes, SDK swap, interrupts."""

import importlib.util
import json
import signal
import threading
import time
import unittest

from fake_transport import text_result
from support import DEFAULT_TOOLS, RuntimeTest, sdk_source

from codemcp_rt import runner, sdk, worker_main


def strict_json(envelope):
    """The envelope must serialize as strict JSON (no NaN) and round-trip."""
    return json.loads(runner.envelope_json(envelope), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))


class ResultTest(RuntimeTest):
    def test_last_expression_is_the_result(self) -> None:
        env = self.run_code("x = 20\nx * 2 + 2")
        self.assertEqual(env, {"ok": True, "result": 42, "calls": 0})

    def test_result_variable(self) -> None:
        self.assertEqual(self.run_code("result = {'a': 1}")["result"], {"a": 1})
        env = self.run_code("result = 5\nprint(result)")
        self.assertEqual((env["result"], env["stdout"]), (5, "5\n"))
        self.assertIsNone(self.run_code("y = 1")["result"])

    def test_result_cleared_between_runs(self) -> None:
        self.run_code("result = 'old'")
        self.assertIsNone(self.run_code("z = 2")["result"])

    def test_sdk_calls_and_nested_pendings(self) -> None:
        env = self.run_code("a = srv_get(n=1)\nb = srv_add(a=1, b=2)\n{'first': a, 'both': [a['args'], (b,)]}")
        self.assertTrue(env["ok"], env)
        self.assertEqual(env["calls"], 2)
        self.assertEqual(env["result"]["first"], {"server": "srv", "tool": "get", "args": {"n": 1}})
        self.assertEqual(env["result"]["both"][1][0]["tool"], "add")
        self.assertNotIn("trace", env)

    def test_json_dumps_of_pending_in_user_code(self) -> None:
        env = self.run_code("import json\njson.dumps(srv_get(n=2), sort_keys=True)")
        self.assertEqual(json.loads(env["result"])["args"], {"n": 2})

    def test_odd_values_give_valid_json(self) -> None:
        code = (
            "import datetime, math\n"
            "d = {'self': None}\nd['self'] = d\n"
            "class T: \n    def __repr__(self): return '<T>'\n"
            "[math.nan, math.inf, b'\\xff\\x01', {2, 1}, datetime.date(2020, 1, 2), T(), d]"
        )
        env = strict_json(self.run_code(code))
        self.assertEqual(env["result"], [None, None, {"base64": "/wE=", "bytes": 2}, [1, 2], "2020-01-02", "<T>",
                                         {"self": "<cycle>"}])

    def test_result_truncation(self) -> None:
        env = strict_json(self.run_code("[{'i': i} for i in range(10000)]", max_result_bytes=2000))
        self.assertTrue(env["ok"])
        self.assertIs(env["result"]["_truncated"], True)
        self.assertEqual(env["result"]["limit"], 2000)
        self.assertTrue(env["result"]["preview"].startswith('[{"i":0},{"i":1}'))

    def test_output_capture_and_cap(self) -> None:
        env = self.run_code("import sys\nprint('x' * 100)\nprint('warn', file=sys.stderr)\n1", max_output_bytes=10)
        self.assertEqual(env["stdout"], "xxxxxxxxxx\n…[codemcp: 91 more bytes of stdout cut]")
        self.assertEqual(env["stderr"], "warn\n")
        self.assertNotIn("stdout", self.run_code("1"))

    def test_input_does_not_block(self) -> None:
        env = self.run_code("input()")
        self.assertEqual(env["error_kind"], "exception")
        self.assertIn("EOFError", env["error"])

    def test_exit(self) -> None:
        self.assertEqual(self.run_code("result = 3\nimport sys\nsys.exit(0)\nresult = 4"), {"ok": True, "result": 3, "calls": 0})
        env = self.run_code("raise SystemExit(3)")
        self.assertEqual(env["error_kind"], "exception")

    def test_gc_paused_only_while_preparing(self) -> None:
        # The collector is off while the program is parsed, validated and compiled (its
        # tree is megabytes of objects), on again for the agent's code, and a run that
        # turned it off itself finds it off in the next run too.
        import gc

        from unittest import mock

        self.assertTrue(gc.isenabled())
        seen = []
        real_disable = gc.disable
        with mock.patch.object(runner.gc, "disable", side_effect=lambda: seen.append(1) or real_disable()):
            self.assertIs(self.run_code("import gc\ngc.isenabled()")["result"], True)
        self.assertEqual(seen, [1])
        self.assertIs(self.run_code("break", session="gc")["ok"], False)  # compile error path
        self.assertTrue(gc.isenabled())
        try:
            self.run_code("import gc\ngc.disable()", session="gc")
            self.assertIs(self.run_code("import gc\ngc.isenabled()", session="gc")["result"], False)
        finally:
            gc.enable()

    def test_bad_request(self) -> None:
        with self.assertRaises(runner.BadRequest):
            runner.run({"run_id": "r"})
        with self.assertRaises(runner.BadRequest):
            runner.run({"code": "1", "max_output_bytes": "lots"})

    def test_current_run_is_set_and_cleared(self) -> None:
        self.run_code("1", run_id="r77")
        self.assertEqual(self.t.current_runs, ["r77", None])


class EnvelopeTextTest(RuntimeTest):
    def test_run_json_is_the_envelope(self) -> None:
        for code in ("1", "print('hi')\n[1, {'a': 'é'}]", "None", "srv_get(n=1)", "1/0", "srv_create(x=1)", "x = ("):
            with self.subTest(code=code):
                text = runner.run_json({"run_id": "r1", "session": "s1", "code": code})
                env = json.loads(text)
                self.assertEqual(env, strict_json(self.run_code(code, session="s2")) | (
                    {"error": env["error"]} if "error" in env else {}) | (
                    {"trace": env["trace"]} if "trace" in env else {}))
                self.assertEqual(next(iter(env)), "ok")

    def test_envelope_json_splices_the_result_text(self) -> None:
        env = {"ok": True, "result": [1], "calls": 0, "stdout": "x"}
        self.assertEqual(runner.envelope_json(env, "[1]"), '{"ok":true,"result":[1],"calls":0,"stdout":"x"}')
        self.assertEqual(runner.envelope_json({"ok": True, "result": 2}, "2"), '{"ok":true,"result":2}')
        self.assertEqual(runner.envelope_json(env), '{"ok":true,"result":[1],"calls":0,"stdout":"x"}')


class SessionTest(RuntimeTest):
    def test_persistence_and_reset(self) -> None:
        self.run_code("x = 41\ndef helper(v):\n    return v + 1")
        self.assertEqual(self.run_code("helper(x)")["result"], 42)
        other = self.run_code("x", session="s2")
        self.assertEqual(other["error_kind"], "exception")
        self.assertIn("NameError", other["error"])
        env = self.run_code("x", reset=True)
        self.assertIn("NameError", env["error"])

    def test_injected_names_refresh(self) -> None:
        self.run_code("srv_get = 'mine'\ngather = 1")
        env = self.run_code("callable(srv_get) and callable(gather) and Pending is not None and ToolError is not None")
        self.assertIs(env["result"], True)  # injected fresh at each run
        self.assertTrue(sdk.load_sdk(sdk_source({"other_fn": ("o", "t", False)}), 2)["ok"])
        env = self.run_code("[name in globals() for name in ('srv_get', 'other_fn', 'resolve', 'settle')]")
        self.assertEqual(env["result"], [False, True, True, True])

    def test_user_rebinding_survives_sdk_removal(self) -> None:
        self.run_code("keep = srv_get")
        self.assertTrue(sdk.load_sdk(sdk_source({"other_fn": ("o", "t", False)}), 2)["ok"])
        self.assertIs(self.run_code("callable(keep)")["result"], True)


class NamespaceTest(RuntimeTest):
    """Many namespaces in one worker, named by the gateway's key ("n7", never the handle)."""

    def test_namespaces_are_separate_and_dropped_one_by_one(self) -> None:
        self.run_code("x = 1", namespace="n1")
        self.run_code("y = 2", namespace="n2")
        self.assertEqual(self.run_code("x", namespace="n1")["result"], 1)
        self.assertIn("NameError", self.run_code("x", namespace="n2")["error"])
        # A run lists the namespaces the gateway dropped: they go before it runs.
        self.assertEqual(self.run_code("y", namespace="n2", drop_namespaces=["n1", "n9"])["result"], 2)
        self.assertIn("NameError", self.run_code("x", namespace="n1")["error"])

    def test_lost_namespace_is_named_in_the_name_error(self) -> None:
        env = self.run_code("z", namespace="n5", namespace_fresh=False)
        self.assertIn("NameError", env["error"])
        self.assertIn("variables were lost: its Python worker was restarted", env["error"])
        fresh = self.run_code("z", namespace="n6", namespace_fresh=True)
        self.assertNotIn("were lost", fresh["error"])


class ThreadRecycleTest(RuntimeTest):
    def test_threads_left_under_enforcement_ask_for_a_fresh_worker(self) -> None:
        code = "import threading, time\nthreading.Thread(target=time.sleep, args=(0.3,), daemon=True).start()"
        env = self.run_code(code, enforce_mutations=True)
        self.assertIs(env.get("recycle"), True, env)
        self.assertIn("left 1 thread(s) running", env.get("stderr", ""))
        self.assertNotIn("recycle", self.run_code(code))  # enforcement off: nothing to protect
        self.assertNotIn("recycle", self.run_code("result = 1", enforce_mutations=True))


class ErrorTest(RuntimeTest):
    def test_syntax_error(self) -> None:
        env = self.run_code("x = 1\nfoo(1, 2\n")
        self.assertEqual(env["error_kind"], "syntax")
        self.assertTrue(env["error"].startswith("Pre-flight validation failed (code was not executed)"),
                        env["error"])
        self.assertIn("- SyntaxError: '(' was never closed (line 2, col 4).", env["error"])
        self.assertIn("\n      foo(1, 2", env["error"])
        self.assertEqual(self.t.calls(), [])
        env = self.run_code("def f():\nreturn 1")
        self.assertEqual(env["error_kind"], "syntax")
        self.assertIn("expected an indented block", env["error"])
        self.assertEqual(self.run_code("x = '\0'[0]\n\0")["error_kind"], "syntax")

    def test_traceback_shows_only_user_frames(self) -> None:
        env = self.run_code("print('before')\nd = srv_get()\ndef f():\n    return d['missing']\nf()")
        self.assertFalse(env["ok"])
        self.assertEqual(env["error_kind"], "exception")
        err = env["error"]
        self.assertTrue(err.startswith("Traceback (most recent call last):"), err)
        self.assertIn('File "<codemcp>", line 5, in <module>\n    f()', err)
        self.assertIn('File "<codemcp>", line 4, in f\n    return d[\'missing\']', err)
        # The exception line, then errhint's line naming the result's keys.
        self.assertTrue(err.endswith("KeyError: 'missing'\nHint: srv_get's result has no key 'missing'; "
                                     "its keys: server, tool, args."), err)
        self.assertNotIn("runner.py", err)
        self.assertNotIn("pending.py", err)
        self.assertEqual(env["stdout"], "before\n")
        self.assertEqual(env["trace"], [{"server": "srv", "tool": "get", "ok": True,
                                         "elapsed_ms": env["trace"][0]["elapsed_ms"], "mutation": False}])

    def test_chained_exception(self) -> None:
        env = self.run_code("try:\n    1/0\nexcept Exception as e:\n    raise ValueError('wrapped') from e")
        self.assertIn("ZeroDivisionError", env["error"])
        self.assertIn("direct cause", env["error"])
        self.assertTrue(env["error"].endswith("ValueError: wrapped"))

    def test_function_from_earlier_run_shows_its_own_source(self) -> None:
        self.run_code("def boom():\n    raise RuntimeError('x')")
        env = self.run_code("a = 1\nboom()")
        self.assertIn('File "<codemcp>", line 2, in <module>\n    boom()', env["error"])
        self.assertIn('File "<codemcp>", line 2, in boom\n    raise RuntimeError(\'x\')', env["error"])

    def test_tool_error_line_hides_credentials(self) -> None:
        # The report quotes the program's line ("at"); a token written in it is not shown.
        self.t.responder = lambda p: ("error", {"code": -32000, "message": "rate limited",
                                                "data": {"kind": "upstream_error"}})
        env = self.run_code("r = srv_get(token='ghp_abcdefghijklmnopqrstuvwxyz0123456789')['items']")
        err = json.loads(env["error"])["tool_error"]
        self.assertTrue(err["at"].startswith("(line 1) r = srv_get("), err)
        self.assertNotIn("ghp_abcdefghijklmnopqrstuvwxyz0123456789", env["error"])

    def test_uncaught_tool_error(self) -> None:
        self.t.responder = lambda p: ("error", {"code": -32000, "message": "rate limited",
                                                "data": {"kind": "upstream_error", "elapsed_ms": 7}})
        env = self.run_code("r = srv_get(q='x', password='hunter2')\nr['items']")
        self.assertEqual(env["error_kind"], "tool_error")
        err = json.loads(env["error"])["tool_error"]
        self.assertEqual(err, {"kind": "upstream_error", "server": "srv", "tool": "get",
                               "args": {"q": "x", "password": "***"}, "message": "rate limited", "elapsed_ms": 7,
                               "at": "(line 2) r['items']"})  # the program's line that used the failed call
        self.assertEqual(env["trace"], [{"server": "srv", "tool": "get", "ok": False, "elapsed_ms": 7,
                                         "mutation": False, "kind": "upstream_error"}])

    def test_caught_tool_error_and_gather(self) -> None:
        def responder(p):
            if p["args"].get("fail"):
                return ("error", {"code": -32000, "message": "nope", "data": {"kind": "not_found"}})
            return ("result", text_result({"n": p["args"]["n"]}))

        self.t.responder = responder
        code = (
            "out = gather(srv_get(n=1), srv_get(n=2, fail=True), srv_get(n=3))\n"
            "try:\n    srv_get(n=4, fail=True).result()\n    caught = None\n"
            "except ToolError as e:\n    caught = [e.kind, e.server, e.tool, e.call_args]\n"
            "[out, caught]"
        )
        env = self.run_code(code)
        self.assertTrue(env["ok"], env)
        out, caught = env["result"]
        self.assertEqual([o["ok"] for o in out], [True, False, True])
        self.assertEqual(out[1]["error"]["kind"], "not_found")
        self.assertEqual(out[2]["value"], {"n": 3})
        self.assertEqual(caught, ["not_found", "srv", "get", {"n": 4, "fail": True}])

    def test_failed_result_resolution_is_a_tool_error(self) -> None:
        self.t.responder = lambda p: ("error", {"code": -32000, "message": "x", "data": {"kind": "auth"}})
        env = self.run_code("result = {'v': srv_get()}")
        self.assertEqual(env["error_kind"], "tool_error")
        self.assertEqual(json.loads(env["error"])["tool_error"]["kind"], "auth")


class MutationTest(RuntimeTest):
    @staticmethod
    def responder(p):
        write = p["tool"] == "create"
        return ("result", {"content": [{"type": "text", "text": '{"id": 1}'}],
                           "_meta": {"codemcp": {"mutation": write, "dry_run": False}}}, 0.05)

    def test_unread_writes_complete_and_are_reported(self) -> None:
        env = self.run_code("srv_create(name='a')\nsrv_create(name='b')\nsrv_get()\n'done'")
        self.assertEqual(env["result"], "done")
        self.assertEqual(env["calls"], 3)
        self.assertEqual(env["mutations"], [{"server": "srv", "tool": "create", "ok": True}] * 2)
        self.assertEqual(self.t.forgotten, set())

    def test_no_mutations_key_without_writes(self) -> None:
        self.assertNotIn("mutations", self.run_code("srv_get()['id']"))


class SdkSwapTest(RuntimeTest):
    def test_swap_during_run_keeps_old_functions(self) -> None:
        swapped = threading.Event()

        def responder(p):
            if not swapped.is_set():  # a reload lands while the run is in flight
                ok = sdk.load_sdk(sdk_source({"new_fn": ("new", "t", False)}), 2)
                assert ok["ok"], ok
                swapped.set()
            return ("result", text_result({"tool": p["tool"]}))

        self.t.responder = responder
        env = self.run_code("a = srv_get()['tool']\nb = srv_add()['tool']\n[a, b, 'new_fn' in globals()]")
        self.assertTrue(env["ok"], env)
        self.assertEqual(env["result"], ["get", "add", False])
        self.assertTrue(swapped.is_set())
        env = self.run_code("[name in globals() for name in ('srv_get', 'new_fn')]")
        self.assertEqual(env["result"], [False, True])

    def test_broken_sdk_keeps_the_old_one(self) -> None:
        bad = sdk.load_sdk("def broken(:\n", 9)
        self.assertFalse(bad["ok"])
        self.assertIn("line 1", bad["error"])
        failing = sdk.load_sdk("raise RuntimeError('half-built')\n", 10)
        self.assertFalse(failing["ok"])
        self.assertIn("half-built", failing["error"])
        self.assertEqual(sdk.current().version, 1)
        self.assertTrue(self.run_code("srv_get()")["ok"])

    def test_meta(self) -> None:
        self.assertEqual(sorted(sdk.functions()), sorted(DEFAULT_TOOLS))
        self.assertEqual(sdk.meta()["srv_create"], {"server": "srv", "tool": "create", "mutation": True})
        self.assertTrue(sdk.is_mutation("srv", "create"))
        self.assertFalse(sdk.is_mutation("srv", "get"))


class InterruptTest(RuntimeTest):
    def setUp(self) -> None:
        super().setUp()
        self.saved = signal.getsignal(signal.SIGUSR1)
        worker_main.install_interrupt_handler()
        self.main = threading.main_thread().ident

    def tearDown(self) -> None:
        signal.signal(signal.SIGUSR1, self.saved)
        super().tearDown()

    def interrupt_after(self, seconds: float, reason: str) -> threading.Timer:
        def fire() -> None:
            self.t.reason = reason
            signal.pthread_kill(self.main, signal.SIGUSR1)

        timer = threading.Timer(seconds, fire)
        timer.start()
        return timer

    def test_busy_loop_times_out(self) -> None:
        self.interrupt_after(0.2, "timeout")
        start = time.monotonic()
        env = self.run_code("print('started')\nwhile True:\n    try:\n        pass\n    except Exception:\n        pass",
                            timeout_ms=200)
        self.assertLess(time.monotonic() - start, 10)
        self.assertEqual(env["error_kind"], "timeout")
        # The limit, the line the run was on, and the setting that raises the limit.
        self.assertTrue(env["error"].startswith("execution timed out after 200 ms at line "), env["error"])
        self.assertIn("timeout_ms", env["error"])
        self.assertEqual(env["stdout"], "started\n")

    def test_cancel_while_waiting_for_a_call(self) -> None:
        self.t.responder = lambda p: ("none", None)  # the reply never comes
        self.interrupt_after(0.2, "cancelled")
        env = self.run_code("srv_get()['x']")
        self.assertEqual(env["error_kind"], "cancelled")
        self.assertEqual(env["error"], "execution cancelled")
        self.assertEqual(env["trace"][0]["kind"], "unfinished")
        self.assertEqual(self.t.forgotten, {self.t.calls()[0]["id"]})

    def test_raised_once(self) -> None:
        self.interrupt_after(0.1, "timeout")
        self.interrupt_after(0.4, "timeout")
        code = (
            "import time\n"
            "try:\n    time.sleep(5)\nexcept BaseException as e:\n    first = type(e).__name__\n"
            "time.sleep(0.6)\n"  # the second signal arrives here and must not raise
            "first"
        )
        env = self.run_code(code)
        self.assertEqual(env, {"ok": True, "result": "RunInterrupted", "calls": 0})

    def test_ignored_outside_a_run(self) -> None:
        self.t.reason = "timeout"
        signal.pthread_kill(self.main, signal.SIGUSR1)
        time.sleep(0.05)  # the handler ran (between bytecodes) and did not raise
        self.assertIsNone(self.t.reason)
        self.assertTrue(self.run_code("1")["ok"])

    def test_cancel_before_the_code_starts(self) -> None:
        def set_current_run(run_id):
            self.t.current_runs.append(run_id)
            if run_id is not None:  # the cancel lands while the run is still starting
                self.t.reason = "cancelled"
                signal.pthread_kill(self.main, signal.SIGUSR1)

        self.t.set_current_run = set_current_run  # type: ignore[method-assign]
        env = self.run_code("print('ran')\n1")
        self.assertEqual(env, {"ok": False, "error": "execution cancelled", "error_kind": "cancelled"})

    def test_no_reason_no_raise(self) -> None:
        timer = threading.Timer(0.1, lambda: signal.pthread_kill(self.main, signal.SIGUSR1))
        timer.start()
        self.assertEqual(self.run_code("import time\ntime.sleep(0.3)\n'fine'")["result"], "fine")


class ValidateHookTest(RuntimeTest):
    def test_validation_failure_stops_the_run(self) -> None:
        if importlib.util.find_spec("codemcp_rt.validator") is None:
            self.skipTest("no validator module")
        env = self.run_code("srv_gett()", validate=True)
        self.assertEqual(env["error_kind"], "validation", env)
        self.assertIn("srv_gett", env["error"])
        self.assertEqual(self.t.calls(), [])
        self.assertEqual(self.run_code("srv_get()['tool']", validate=True)["result"], "get")

    def test_compiler_syntax_errors_win_over_validation(self) -> None:
        # The runner validates between parsing and compiling; an error only the compiler
        # finds must still be reported as the syntax error it is, and nothing cached.
        if importlib.util.find_spec("codemcp_rt.validator") is None:
            self.skipTest("no validator module")
        for code in ("srv_gett()\nbreak\n", "srv_gett()\nnonlocal x\n", "srv_gett()\nreturn 1\n"):
            with self.subTest(code=code):
                env = self.run_code(code, validate=True)
                self.assertEqual(env["error_kind"], "syntax", env)
                self.assertNotIn(code, runner._compiled)
        env = self.run_code("srv_gett()\nx = 1\n", validate=True)
        self.assertEqual(env["error_kind"], "validation", env)
        self.assertEqual(self.t.calls(), [])

    def test_cached_verdicts_follow_what_they_depend_on(self) -> None:
        if importlib.util.find_spec("codemcp_rt.validator") is None:
            self.skipTest("no validator module")
        code = "srv_gett(n=1)"
        for _ in range(2):  # the second time from the cache
            self.assertEqual(self.run_code(code, validate=True)["error_kind"], "validation")
        self.run_code("def srv_gett(n): return n + 6")  # the session now has that name
        self.assertEqual(self.run_code(code, validate=True)["result"], 7)
        self.assertEqual(self.run_code(code, validate=True, reset=True)["error_kind"], "validation")
        self.assertTrue(sdk.load_sdk(sdk_source({"srv_gett": ("srv", "gett", False)}), 2)["ok"])
        self.assertEqual(self.run_code(code + "['tool']", validate=True)["result"], "gett")
        write = "srv_create(x=1)['tool']"
        self.assertTrue(sdk.load_sdk(sdk_source(DEFAULT_TOOLS), 3)["ok"])
        self.assertEqual(self.run_code(write, validate=True)["result"], "create")
        env = self.run_code(write, validate=True, enforce_mutations=True)
        self.assertEqual(env["error_kind"], "validation", env)
        self.assertEqual(self.run_code(write, validate=True, enforce_mutations=True,
                                       allow_mutations=["srv_create"])["result"], "create")

    def test_cached_verdict_ignores_names_the_program_does_not_spell(self) -> None:
        # A verdict depends on the namespace only through the program's own identifiers, so
        # a session gaining other names keeps the cached verdict (no revalidation per run).
        if importlib.util.find_spec("codemcp_rt.validator") is None:
            self.skipTest("no validator module")
        for code in ("srv_gett(n=1)", "srv_gett(n=1)  # caf\u00e9: non-ASCII code"):
            with self.subTest(code=code):
                self.run_code("srv_gett = None\ndel srv_gett", reset=True)
                self.assertEqual(self.run_code(code, validate=True)["error_kind"], "validation")
                module = runner._validator
                real, calls = module.validate, []
                module.validate = lambda *a, **k: calls.append(1) or real(*a, **k)
                try:
                    self.run_code("unrelated_name = 1")
                    self.assertEqual(self.run_code(code, validate=True)["error_kind"], "validation")
                    self.assertEqual(len(calls), 0 if code.isascii() else 1)
                    self.run_code("def srv_gett(n): return n + 6")
                    self.assertEqual(self.run_code(code, validate=True)["result"], 7)
                finally:
                    module.validate = real


class CompileCacheTest(RuntimeTest):
    def test_same_code_runs_again_with_fresh_state(self) -> None:
        code = "n = globals().get('n', 0) + 1\ndef f():\n    return 1 / 0\nn"
        self.assertEqual([self.run_code(code)["result"] for _ in range(3)], [1, 2, 3])
        self.assertIs(runner._compiled.get(code), runner._compiled.get(code))
        env = self.run_code(code + "\nf()")
        self.assertIn('line 3, in f\n    return 1 / 0', env["error"])
        self.assertEqual(self.run_code(code, session="other")["result"], 1)

    def test_lru_bound(self) -> None:
        for i in range(runner.CACHE_SIZE + 10):
            self.assertEqual(self.run_code("%d" % i)["result"], i)
        self.assertEqual(len(runner._compiled), runner.CACHE_SIZE)
        self.assertNotIn("0", runner._compiled)
        self.assertIn("%d" % (runner.CACHE_SIZE + 9), runner._compiled)

    def test_syntax_errors_are_not_cached(self) -> None:
        self.assertEqual(self.run_code("1 +")["error_kind"], "syntax")
        self.assertNotIn("1 +", runner._compiled)

    def test_last_expression_tree_is_not_modified(self) -> None:
        code = "x = 2\nx * 3"
        self.assertEqual(self.run_code(code, validate=True)["result"], 6)
        runner._compiled.clear()
        self.assertEqual(self.run_code(code, validate=True)["result"], 6)


if __name__ == "__main__":
    unittest.main()
