// The worker's C cores and their Python twins behave the same. Pending's state, result(), str()
// and format() (src/worker/pypending.c, `_codemcp.PendingBase`) and a call's take()
// (src/worker/pycall.c, `_codemcp.CallBase`) are written in C for speed; python/codemcp_rt
// keeps a Python twin of each (`pending._PyPendingBase`, `client._PyCallBase`) that plain
// python3 runs. Inside a real sandboxed worker, both are driven through the same scenarios and
// the same corpus of replies; every outcome (value, exception type and message, the fields
// left behind, the wait asked of the transport: the grace each adds to a call's timeout_ms)
// must be equal, so a change made to one twin alone fails here.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ms, runCodemcp, servers, tempDir, writeConfig } from './lib.mjs';

const PENDING = String.raw`
import _codemcp, threading
from codemcp_rt import pending
from codemcp_rt.errors import ToolError

C = type("C", (_codemcp.PendingBase,), {"__slots__": ()})
P = type("P", (pending._PyPendingBase,), {"__slots__": ()})

def outcome(fn):
    try:
        return ["ok", repr(fn())]
    except BaseException as exc:
        return ["raise", type(exc).__name__, str(exc)]

def fields(p):
    return [p._state, repr(p._value), repr(p._error), p._wait is None, p._poll is None,
            p._block is None, p._label]

def err():
    raise ToolError("upstream_error", "boom", server="s", tool="t")

def other():
    raise ValueError("not a tool error")

calls = {"n": 0}
def counted():
    calls["n"] += 1
    if calls["n"] == 1:
        raise KeyError("first")
    return calls["n"]

def scenarios(cls):
    out = {}
    def run(name, make, *steps):
        calls["n"] = 0
        p = make()
        out[name] = [outcome(lambda: step(p)) for step in steps] + [fields(p)]
    res = lambda p: p.result()
    done = lambda p: p.done()
    run("value", lambda: cls(lambda: {"a": [1, 2]}), done, res, res, done)
    run("none value", lambda: cls(lambda: None, None, "lbl"), res, done)
    run("tool error", lambda: cls(err, lambda: True), done, res, res, done)
    run("other error", lambda: cls(other), res, done, res)
    run("error then value", lambda: cls(counted), res, res, res)
    run("no wait", lambda: cls(None), res, done)
    run("poll true", lambda: cls(lambda: 1, lambda: True), done, res)
    run("poll false", lambda: cls(lambda: 1, lambda: False), done, res, done)
    run("poll truthy", lambda: cls(lambda: 1, lambda: [0]), done)
    run("poll falsy", lambda: cls(lambda: 1, lambda: ""), done)
    run("poll raises", lambda: cls(lambda: 1, lambda: 1 / 0), done)
    run("poll not callable", lambda: cls(lambda: 1, 5), done)
    run("label and block kept", lambda: cls(lambda: 2, None, "x/y", lambda s: True), done, res)
    st = lambda p: str(p)
    run("str and format", lambda: cls(lambda: 42), st, lambda p: format(p, ">6"), lambda p: f"{p:x}", done)
    run("str of a failure", lambda: cls(err), st, lambda p: format(p, ""), res)
    run("str of no wait", lambda: cls(None), st, done)
    run("format refused", lambda: cls(lambda: 42), lambda p: format(p, "q"), lambda p: p.__format__(3), st)
    run("str of a str subclass", lambda: cls(lambda: type("S", (str,), {"__str__": lambda s: "sub"})("x")), st)
    box = {}
    def reenter():
        return box["p"].result()
    def make_reentrant():
        box["p"] = cls(reenter)
        return box["p"]
    run("re-entrant read", make_reentrant, res, done)
    def make_forged_done():
        p = cls(lambda: "never")
        p._state, p._value = 1, "forged"
        return p
    run("set done by hand", make_forged_done, res, done)
    def make_forged_failed():
        p = cls(lambda: "never")
        p._state, p._error = 2, ToolError("timeout", "kept")
        return p
    run("set failed by hand", make_forged_failed, res, done)
    def threads(p):
        got = []
        ts = [threading.Thread(target=lambda: got.append(p.result())) for _ in range(4)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        return sorted(got)
    run("four threads read once", lambda: cls(lambda: calls.__setitem__("n", calls["n"] + 1) or calls["n"]),
        threads, res)
    return out

c, p = scenarios(C), scenarios(P)
result = {"scenarios": len(p), "diff": {k: {"c": c[k], "py": p[k]} for k in p if c[k] != p[k]}}
`;

const CALLS = String.raw`
import _codemcp, json, re
from codemcp_rt import client, transport

body = {k: v for k, v in vars(client._Call).items()
        if k not in ("__slots__", "__dict__", "__weakref__", "__module__", "__doc__", "__qualname__")}
C = type("C", (_codemcp.CallBase,), dict(body, __slots__=()))
P = type("P", (client._PyCallBase,), dict(body, __slots__=()))

texts = ["The sum of 1 and 2 is 3.", "", "caf\u00e9 \U0001F600", 'say "hi"', "a\\b", "line\nbreak",
         '{"json": [1, 2]}', " [1, 2]", "42", "null", "true", "x" * 3000, '"}]}}', "\t{\"a\": 1}",
         "{not json", "[1, 2"]
# JSON texts for the reply readers (pyjson.c's pyj_text_value / pyj_parse / pyj_unescape, and
# json.loads in client._text_value): numbers at the edges, escapes, nesting at and past the depth
# the C reader takes, what json.loads accepts and strict JSON does not, and what neither takes.
texts += ['{"n": [1.5, -0.0, 1e400, -1e-400, 1E5, 0.1, 2.5e-3, 123456789012345678]}',
          '[12345678901234567890, -9223372036854775808, 9223372036854775807, -0, 10000000000000000000000]',
          '[NaN, Infinity, -Infinity]', '{"a": 1, "a": 2}', "[" * 63 + "]" * 63, "[" * 64 + "]" * 64,
          "[" * 65 + "]" * 65, '{"\\ud83d\\ude00": "\\u00e9\\n\\t\\"\\\\\\/\\b\\f\\r"}',
          '{"lone": "\\ud800"}', '{"pair": "\\ud83d\\ude00", "low": "\\udc00x"}', '["\\x"]', '["\\u12"]',
          '["a\tb"]', '["a\u0001"]', '[1,]', '{"a" 1}', '[01]', '[1.]', '[.5]', '[-]', '[+1]', '[1e]',
          '[true, false, null]', "{}", "[]", "  {}  \n", "[1] x", '{"k": "caf\u00e9 \U0001F600"}',
          '{"jsonrpc": "2.0", "id": "c1", "params": {"run_id": "r"}}', '{"": [{"": {}}]}',
          '[' + ", ".join('{"id": %d, "name": "n%d", "tags": ["a", "b"], "score": %s}' % (i, i, i / 7)
                          for i in range(300)) + ']', "\ud800 lone in prose", '{"s": "\ud800"}']
def reply(cid, text, tail="", ascii=False):
    res = {"content": [{"type": "text", "text": text}]}
    if tail == "sc":
        res["structuredContent"] = {"v": 1}
    if tail == "err":
        res["isError"] = True
    if tail == "two":
        res["content"].append({"type": "text", "text": "second"})
    if tail == "meta":
        res["_meta"] = {"codemcp": {"mutation": True}}
    return json.dumps({"jsonrpc": "2.0", "id": cid, "result": res}, ensure_ascii=ascii, separators=(",", ":"))
raws = [reply("c1", t, tail) for t in texts for tail in ("", "sc", "err", "two", "meta")]
raws += [reply("c1", t, ascii=True) for t in texts]  # \uXXXX escapes (pairs, lone halves) in the reply
raws += [reply("c1", t).replace(":", ": ", 1) for t in texts]
raws += ['{"jsonrpc":"2.0","id":"c1","error":{"code":-32000,"message":"x"}}',
         '{"jsonrpc":"2.0","id":"c1","result":{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}}',
         '{"jsonrpc":"2.0","id":"c1","result":{}}', '{"jsonrpc":"2.0","id":"c1","result":[]}']

def outcome(fn):
    try:
        v = fn()
        return ["ok", type(v).__name__, repr(v)[:300]]
    except BaseException as exc:
        # the elapsed time a message names is each twin's own clock, not a reading of the reply
        return ["raise", type(exc).__name__, re.sub(r"\[after \d+ ms\]", "[after N ms]", str(exc))[:300]]

class Wire:
    """The transport a call waits on: gives one reply (or None: no reply in time; or a
    ConnectionError) and records the wait it was asked for, so the grace both add to a
    call's timeout_ms is compared too."""
    def __init__(self, raw):
        self.raw, self.asked = raw, []
    def wait_reply(self, cid, timeout):
        self.asked.append([cid, timeout])
        if isinstance(self.raw, BaseException):
            raise self.raw
        return self.raw
    def forget(self, cid):
        self.asked.append(["forget", cid])

def drive(cls, raw, early, timeout_ms):
    wire, kept = Wire(raw), transport._transport
    transport._transport = wire
    try:
        call = cls("c1", "srv", "tool", {"a": 1}, None, timeout_ms, None, False)
        if early:
            call.early = raw
        seen = []
        for _ in range(2):
            seen += [outcome(call.take), call.ok, call.finished, call.early is None, call.kind,
                     repr(call.value)[:100], type(call.elapsed_ms).__name__]
        return seen + [wire.asked]
    finally:
        transport._transport = kept

diff, compared = [], 0
for raw in raws + [None, ConnectionError("gone"), b"not text", 42]:
    for early in (False, True):
        if early and not isinstance(raw, str):
            continue
        for timeout_ms in (1000, None, 0):
            compared += 1
            a, b = drive(C, raw, early, timeout_ms), drive(P, raw, early, timeout_ms)
            if a != b:
                diff.append({"raw": repr(raw)[:120], "early": early, "c": a, "py": b})
result = {"replies": compared, "diff": diff}
`;

async function smoke(code) {
  const dir = tempDir();
  const config = writeConfig(dir, { everything: servers.everything() });
  const r = await runCodemcp({ config, env: { CODEMCP_SMOKE: code } }, ms(80000));
  assert.equal(r.code, 0, `smoke failed:\n${r.stdout}\n${r.stderr.slice(-3000)}`);
  return JSON.parse(r.stdout).result;
}

test('Pending: the C core and the Python twin give the same outcome in every scenario', { timeout: ms(90000) }, async () => {
  const got = await smoke(PENDING);
  assert.ok(got.scenarios >= 17, `only ${got.scenarios} scenarios ran`);
  assert.deepEqual(got.diff, {}, JSON.stringify(got.diff, null, 1));
});

test("a call's take(): the C core and the Python twin read every reply the same way", { timeout: ms(90000) }, async () => {
  const got = await smoke(CALLS);
  assert.ok(got.replies > 500, `only ${got.replies} replies compared`);
  assert.deepEqual(got.diff, [], JSON.stringify(got.diff, null, 1));
});
