// Adversarial review of the C code agent code can reach (docs/review-extensions.md): the
// `_codemcp` module's types and functions (src/worker/pypending.c, pycall.c, pyfast.c,
// pyjson.c, pymod.c) called the wrong way from a real sandboxed worker, and hostile control
// frames for the gateway's decoder (src/json/jsonfast.c). Each test is one finding or one sweep:
// the worker must not crash where a Python object would not, a crash is a clear error that
// loses nothing else, and the gateway never dies.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { connectClient, ms, PY_OWN_SOCKETS, servers, tempDir, writeConfig } from './lib.mjs';

async function session(mcp = {}, env = {}) {
  const dir = tempDir();
  const h = await connectClient({ config: writeConfig(dir, mcp), env });
  const run = async (code, extra = {}) => {
    const r = await h.client.callTool({ name: 'execute_python', arguments: { code, ...extra } },
      undefined, { timeout: ms(90000) });
    return r.structuredContent ?? JSON.parse(r.content[0].text);
  };
  return { h, run };
}

// PendingBase and CallBase had no trashcan in their dealloc, so a long chain of
// them (p._value = q, or a CallBase holding the previous one) was freed recursively and
// overflowed the C stack: the worker died (SIGSEGV) where the same chain of Python objects
// is fine. Each run below crashed the worker before the fix.
test('a long chain of PendingBase / CallBase objects is freed without crashing the worker', { timeout: ms(180000) }, async () => {
  const { h, run } = await session();
  try {
    let e = await run('x = 41\nresult = "kept"');
    assert.equal(e.result, 'kept', JSON.stringify(e));
    e = await run('import _codemcp\np = None\nfor i in range(300000):\n' +
      '    q = _codemcp.PendingBase(None)\n    q._value = p\n    p = q\ndel p, q\nresult = "pending chain freed"');
    assert.equal(e.result, 'pending chain freed', JSON.stringify(e));
    e = await run('import _codemcp\np = None\nfor i in range(300000):\n' +
      '    p = _codemcp.CallBase(p, 1, 2, 3, 4, 5, 6, 7)\ndel p\nresult = "call chain freed"');
    assert.equal(e.result, 'call chain freed', JSON.stringify(e));
    // a chain through a subclass's __dict__ and a cycle collected by the GC
    e = await run('import _codemcp, gc\nclass P(_codemcp.PendingBase): pass\np = None\n' +
      'for i in range(300000):\n    q = _codemcp.PendingBase(None)\n    q._value = P(None)\n' +
      '    q._value.x = p\n    p = q\np._error = p\ndel p, q\ngc.collect()\nresult = "mixed chain freed"');
    assert.equal(e.result, 'mixed chain freed', JSON.stringify(e));
    e = await run('result = x + 1'); // the session's variables survived: no worker restart
    assert.equal(e.result, 42, JSON.stringify(e));
  } finally {
    await h.close();
  }
});

// A call_tool frame the gateway cannot decode (here a NUL in an argument's key,
// which jansson cannot hold) was answered with `"id": null`, so the worker never learnt which
// call failed and the call hung until the run's timeout. The gateway now answers with the id
// the frame's head names (jf_frame_id), and the call fails at once with the decoder's reason.
test('a call whose frame the gateway cannot decode fails at once instead of hanging', { timeout: ms(120000) }, async () => {
  const { h, run } = await session({ everything: servers.everything() }, { CODEMCP_EXEC_TIMEOUT_MS: '20000' });
  try {
    // The worker's own argument check (argguard) would refuse the nested case before sending;
    // agent code can switch it off, and what is tested here is the gateway's decoder.
    const e = await run(String.raw`
import time
from codemcp_rt import argguard, client
argguard.check = lambda *a: None
out = {}
t = time.monotonic()
for name, args in (("top", {"message": "x", "a\x00b": 1}), ("nested", {"message": {"k\x00": [1]}})):
    try:
        out[name] = resolve(client.call("everything", "echo", args))
    except ToolError as exc:
        out[name] = [exc.kind, exc.message]
out["seconds"] = time.monotonic() - t
out["after"] = everything_echo(message="still fine")
result = out`);
    assert.ok(e.result, JSON.stringify(e));
    for (const k of ['top', 'nested']) {
      assert.equal(e.result[k][0], 'transport', JSON.stringify(e.result));
      assert.match(e.result[k][1], /NUL byte in object key/, JSON.stringify(e.result));
    }
    assert.ok(e.result.seconds < 10, `the failed calls took ${e.result.seconds} s`);
    assert.match(JSON.stringify(e.result.after), /still fine/);
  } finally {
    await h.close();
  }
});

// Redaction (src/catalog/redact.c, python/codemcp_rt/redact.py) ran its regular
// expressions over the whole of every string, and they cost O(n^2) on a long run of
// identifier characters: glibc's regexec took ~1 min for 150 kB of "xxx…" on the gateway's
// event loop (a refused call's arguments are redacted for the log: every session froze),
// and Python's re, which never checks for signals, kept a run that raised an exception with
// a long message from being interrupted (the worker was killed, the session lost). Now only
// the part that is shown is redacted (plus a margin), and redact_text cuts at 16 KiB.
test('long strings in a refused call, an exception or an oversized frame cost no more than short ones', { timeout: ms(240000) }, async () => {
  const mcp = { everything: servers.everything({ tools: { echo: { policy: 'deny' } } }) };
  const { h, run } = await session(mcp, { CODEMCP_EXEC_TIMEOUT_MS: '60000', CODEMCP_CONTROL_MAX_FRAME: '1000000' });
  try {
    let e = await run('kept = 7\nresult = 1');
    assert.equal(e.result, 1, JSON.stringify(e));
    e = await run(String.raw`
import time
from codemcp_rt import client
out = {}
for name, arg in (("refused", "x" * 150000), ("oversized", "y" * 1500000)):
    t = time.monotonic()
    try:
        out[name] = resolve(client.call("everything", "echo", {"message": arg}))
    except ToolError as exc:
        out[name] = [exc.kind, exc.message[:200], len(str(exc.call_args))]
    out[name + "_s"] = time.monotonic() - t
result = out`);
    assert.ok(e.result, JSON.stringify(e).slice(0, 2000));
    assert.equal(e.result.refused[0], 'denied', JSON.stringify(e.result));
    assert.match(e.result.oversized[1], /frame too large/, JSON.stringify(e.result));
    assert.ok(e.result.oversized[2] < 2000, 'call_args in the error are shortened');
    for (const k of ['refused_s', 'oversized_s']) assert.ok(e.result[k] < 20, `${k}: ${e.result[k]} s`);
    const t0 = Date.now();
    e = await run('raise ValueError("x" * 300000)');
    assert.equal(e.error_kind, 'exception', JSON.stringify(e).slice(0, 500));
    assert.ok(e.error.length < 100000, `error of ${e.error.length} chars`);
    assert.match(e.error.slice(0, 300), /ValueError: xxxx/);
    assert.ok(Date.now() - t0 < 30000, `the run took ${Date.now() - t0} ms`);
    e = await run('result = kept');
    assert.equal(e.result, 7, 'the worker was not restarted: ' + JSON.stringify(e));
  } finally {
    await h.close();
  }
});

// Checked, sound: jf_dumps refuses values nested deeper than JSON_PARSER_MAX_DEPTH + 1
// levels (its cycle guard; jansson has none), and the gateway wraps what it decoded one level
// deeper (a run's answer in the MCP response's structuredContent). A hostile program that
// sends its run's answer itself, as deep as the decoder allows, still gets it to the client.
test('a run answer nested up to the decoder limit still reaches the client', { timeout: ms(120000) }, async () => {
  const { h } = await session();
  try {
    // The usual run is answered by the C loop (src/worker/pyrun.c), where no Python frame holds
    // the request id: the "é" (non-ASCII code) sends this run down the Python path, whose
    // worker_main.handle() frame does.
    const code = String.raw`
# é
import sys, json, _codemcp
f, rid = sys._getframe(), None
while f:
    if f.f_code.co_name == "handle" and "req_id" in f.f_locals:
        rid = f.f_locals["req_id"]
    f = f.f_back
deep = "[" * 2045 + "1" + "]" * 2045
_codemcp.send('{"jsonrpc":"2.0","id":%s,"result":{"ok":true,"result":%s}}' % (json.dumps(rid), deep))
import time
time.sleep(1)
result = "late"`;
    const r = await h.client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(30000) });
    const e = r.structuredContent;
    let depth = 0;
    for (let v = e.result; Array.isArray(v); v = v[0]) depth++;
    assert.equal(depth, 2045, JSON.stringify(e).slice(0, 300));
    const again = await h.client.callTool({ name: 'execute_python', arguments: { code: 'result = 5' } }, undefined, { timeout: ms(30000) });
    assert.equal(again.structuredContent.result, 5, JSON.stringify(again));
  } finally {
    await h.close();
  }
});

// Sweep (no finding): _codemcp.loads_fast against json.loads on random documents and
// mutations of request-shaped ones (escapes, surrogates, NULs, huge integers, truncations),
// bounded in time: every value it returns is json.loads's, everything else is Ellipsis.
const LOADS_FUZZ = String.raw`
import _codemcp, json, random, time
rng = random.Random(int(time.time()))
seeds = ['{"jsonrpc":"2.0","id":7,"method":"run","params":{"code":"print(1)\\nx = \\"q\\"","run_id":"r-1","timeout_ms":30000,"validate":true,"unavailable":[],"drop_namespaces":["n1","n2"]}}',
         '[1,-0,12345678901234567,123456789012345678,1234567890123456789,0.5,1e5,true,false,null,"a\\u00e9\\ud83d\\ude00\\n\\t\\"\\\\\\/"]',
         '{"a":{"b":[{"c":{}}]},"a":[],"":""," ":[[[[]]]]}', '"\\u0000\\u001f\\u007f\\u0080\\uffff"', '  \r\n\t{} ',
         '{"k\\u0041y":1,"caf\u00e9":"\U0001F600"}']
alphabet = list('{}[]",:\\/ \t\n\r-+.eE0123456789abfnrtuTFNI') + ['\\u', '\\ud83d', '\\ude00', '\u00e9', '\x00', '\x1f', 'true', 'null', '"k":', '\ud800']
def mutate(s):
    s = list(s)
    for _ in range(rng.randint(1, 4)):
        op = rng.random()
        i = rng.randint(0, len(s))
        if op < 0.4 and s:
            del s[min(i, len(s) - 1)]
        elif op < 0.8:
            s.insert(i, rng.choice(alphabet))
        elif s:
            j = rng.randint(0, len(s))
            s[i:j] = s[i:j][::-1]
    return "".join(s)
def gen(d=0):
    r = rng.random()
    if d > 6 or r < 0.3:
        return rng.choice([0, -1, 2**63, -2**63 - 1, 10**18, 10**17, 1.5, True, False, None, "", "x\u00e9\n\"\\", "\U0001F600", "\x00"])
    if r < 0.65:
        return [gen(d + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(["a", "id", "", "\u00e9", "k" * 30, "\x01"]): gen(d + 1) for _ in range(rng.randint(0, 4))}
pool = list(seeds)
n = mism = fast = 0
bad = []
deadline = time.monotonic() + 8
while time.monotonic() < deadline:
    if rng.random() < 0.3:
        doc = json.dumps(gen(), ensure_ascii=rng.random() < 0.5)
    else:
        doc = mutate(rng.choice(pool))
        if len(pool) < 500:
            pool.append(doc)
    n += 1
    try:
        want = ("ok", json.loads(doc))
    except (ValueError, RecursionError) as exc:
        want = ("err", type(exc).__name__)
    got = _codemcp.loads_fast(doc)
    if got is Ellipsis:
        continue
    fast += 1
    if want[0] != "ok" or repr(got) != repr(want[1]):
        mism += 1
        if len(bad) < 5:
            bad.append([doc[:120], repr(got)[:80], repr(want)[:80]])
result = {"n": n, "fast": fast, "mismatches": mism, "examples": bad}
`;

test('loads_fast agrees with json.loads on random and mutated documents', { timeout: ms(120000) }, async () => {
  const { h, run } = await session();
  try {
    const e = await run(LOADS_FUZZ);
    assert.ok(e.result, JSON.stringify(e).slice(0, 1000));
    assert.equal(e.result.mismatches, 0, JSON.stringify(e.result.examples));
    assert.ok(e.result.fast > 1000, JSON.stringify(e.result));
  } finally {
    await h.close();
  }
});

// Sweep (no finding): raw bytes a hostile program writes on the control socket itself,
// below the WebSocket client (invalid UTF-8 in a text frame, a binary frame, reserved bits
// or opcode, a 2^63-byte length, a broken fragment sequence, a close, noise): the gateway
// stays up, the run ends with a clear error (or its result), and the session goes on.
const RAW = String.raw`
import os, struct, socket, time, json
KIND = "KIND"
def frame(op, payload, fin=True, rsv=0, length=None):
    b0 = (0x80 if fin else 0) | rsv | op
    n = len(payload) if length is None else length
    mask = os.urandom(4)
    if n < 126: h = bytes([b0, 0x80 | n])
    elif n < 65536: h = bytes([b0, 0x80 | 126]) + struct.pack(">H", n)
    else: h = bytes([b0, 0x80 | 127]) + struct.pack(">Q", n)
    return h + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload))
${PY_OWN_SOCKETS}
body = b'{"jsonrpc":"2.0","id":"c9","method":"call_tool","params":{"run_id":"\xff\xfe","server":"s","tool":"t","args":{}}}'
frames = {
    "badutf8": frame(1, body),
    "binary": frame(2, body),
    "rsv": frame(1, b'{}', rsv=0x40),
    "opcode3": frame(3, b'x'),
    "hugelen": frame(1, b'', length=2**63 - 1),
    "frag": frame(1, b'{"jsonrpc":', fin=False) + frame(1, b'"2.0"}'),   # continuation with a new text opcode
    "ping": frame(9, b'p' * 125),
    "close": frame(8, b'\x03\xe8bye'),
    "garbage": os.urandom(64),
}
for fd in socks:
    os.write(fd, frames[KIND])
time.sleep(1)
result = {"socks": socks, "kind": KIND}
`;

test('raw frames written on the control socket never take the gateway down', { timeout: ms(240000) }, async () => {
  const { h, run } = await session({}, { CODEMCP_EXEC_TIMEOUT_MS: '6000' });
  try {
    for (const kind of ['badutf8', 'binary', 'rsv', 'opcode3', 'frag', 'ping', 'close', 'garbage', 'hugelen']) {
      const e = await run(RAW.replace('"KIND"', JSON.stringify(kind)));
      if (e.result) assert.equal(e.result.kind, kind);
      else assert.match(e.error_kind, /^(worker|timeout)$/, `${kind}: ${JSON.stringify(e)}`);
      const next = await run('result = 6 * 7');
      assert.equal(next.result, 42, `${kind}, the run after: ${JSON.stringify(next)}`);
    }
  } finally {
    await h.close();
  }
});

// CallBase.take() read self->id again after wait_reply returned and handed it to
// text_result as is; Python code that ran during the wait (a signal handler, a transport
// agent code installed) could `del call.id`, and the NULL was dereferenced: the worker died.
test('CallBase.take() survives its id being deleted while it waits', { timeout: ms(120000) }, async () => {
  const { h, run } = await session();
  try {
    let e = await run('kept = 3\nresult = 0');
    e = await run(String.raw`
import _codemcp
from codemcp_rt import transport
saved = transport._transport
class T:
    def wait_reply(self, id, timeout):
        del c.id
        return '{"jsonrpc":"2.0","id":"c1","result":{"content":[{"type":"text","text":"x"}]}}'
class C(_codemcp.CallBase):
    def _finish(self, raw):
        return ("finished by Python", hasattr(self, "id"))
c = C("c1", "s", "t", {}, None, None, None, False)
transport._transport = T()
try:
    result = list(c.take())
finally:
    transport._transport = saved`);
    assert.deepEqual(e.result, ['finished by Python', true], JSON.stringify(e));
    e = await run('result = kept');
    assert.equal(e.result, 3, 'the worker was not restarted: ' + JSON.stringify(e));
  } finally {
    await h.close();
  }
});

// A run's answer the gateway could not decode was dropped and
// the run timed out (the worker was killed): `result = 2**64` (beyond jansson's json_int_t)
// or a NUL in a key of the result. Integers of any size now reach the client digit for digit
// (JF_BIG_INTEGERS), and an answer that still does not decode ends its run at once with the
// decoder's reason, the session intact.
test('big integers in a run answer reach the client exactly; an undecodable answer fails its run at once', { timeout: ms(120000) }, async () => {
  const { h } = await session({ fake: servers.fake() }, { CODEMCP_EXEC_TIMEOUT_MS: '20000' });
  const call = (code) => h.client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(60000) });
  try {
    await call('kept = 11');
    let t0 = Date.now();
    let r = await call('result = [2**64, -2**70, 10**80 + 1, 2**63 - 1, -2**63, {"n": 3**100}]');
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.equal(r.content[0].text.replace(/,"namespace":"[^"]*"/, ''), '{"result":[18446744073709551616,-1180591620717411303424,' +
      '1' + '0'.repeat(79) + '1,9223372036854775807,-9223372036854775808,' +
      `{"n":${3n ** 100n}}]}`);
    assert.ok(Date.now() - t0 < 15000, `${Date.now() - t0} ms`);
    // through a tool call too: the frame's big integers go upstream digit for digit
    r = await call('from codemcp_rt import client\nresult = resolve(client.call("fake", "add", {"a": 2**64, "b": 1}))');
    assert.equal(r.content[0].text.replace(/,"namespace":"[^"]*"/, ''), '{"result":18446744073709551617}', JSON.stringify(r));
    t0 = Date.now();
    r = await call('result = {"a\\x00b": 1}');
    const e = r.structuredContent;
    assert.equal(e.error_kind, 'worker', JSON.stringify(e));
    assert.match(e.error, /the worker's answer could not be read: NUL byte in object key/);
    assert.ok(Date.now() - t0 < 15000, `the run took ${Date.now() - t0} ms`);
    r = await call('result = kept');
    assert.equal(r.structuredContent.result, 11, 'the worker was not restarted: ' + JSON.stringify(r));
  } finally {
    await h.close();
  }
});
