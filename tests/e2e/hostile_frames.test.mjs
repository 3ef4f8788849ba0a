// Seeded, bounded random batches of hostile frames that agent code writes on the worker's
// control socket itself (raw bytes below the worker's WebSocket client): valid masked framing
// (sometimes fragmented, with pings and pongs between the fragments, sometimes binary or over
// the size cap) carrying malformed JSON-RPC — call_tool with wrong types, missing, null,
// duplicate, huge or odd ids, unknown methods, cancels for unknown runs, answers for runs that
// do not exist or for this run (twice), deep nesting, huge strings, invalid UTF-8 — and now and
// then a framing fault that ends the stream (unmasked, reserved bits or opcode, a close, a bad
// continuation, noise; never a frame cut short, which leaves nothing to read until the
// deadline). hostile_control and hostile_ext each send one frame kind at a time; this mixes them.
// For every case: the gateway stays up, the run gets a clear answer or a clear error in
// bounded time, never its deadline, and the next run calls a real upstream tool. A failing
// case names its seed: CODEMCP_HOSTILE_SEED=N reruns it alone.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';

import {
  connectClient, ms, pidAlive, PY_OWN_SOCKETS, servers, tempDir, writeConfig,
} from './lib.mjs';

const MAX_FRAME = 65536; // CODEMCP_CONTROL_MAX_FRAME: an oversized frame costs little
// What the ASan/UBSan build writes on stderr when it finds something (build-asan).
const SANITIZER = /runtime error:|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer/;

// The agent program: SEED and MAX_FRAME are spliced in. It builds its batch from the seed
// alone, writes it on every socket it holds (the control socket is the only one in use), then
// makes a real call and reports what it sent.
const PROGRAM = String.raw`
# é (non-ASCII: the run goes through worker_main.handle, whose frame holds the run's request id)
import os, sys, struct, json, random, time
SEED = __SEED__
MAX_FRAME = __MAX_FRAME__
rng = random.Random(SEED)
f, req_id = sys._getframe(), None
while f:
    if f.f_code.co_name == "handle" and "req_id" in f.f_locals:
        req_id = f.f_locals["req_id"]
    f = f.f_back
try:
    from codemcp_rt import runstate
    run_id = runstate.current().run_id
except Exception:
    run_id = None
${PY_OWN_SOCKETS}

def frame(op, payload, fin=True, rsv=0, masked=True, length=None):
    n = len(payload) if length is None else length
    b0 = (0x80 if fin else 0) | rsv | op
    m = 0x80 if masked else 0
    if n < 126: h = bytes([b0, m | n])
    elif n < 65536: h = bytes([b0, m | 126]) + struct.pack(">H", n)
    else: h = bytes([b0, m | 127]) + struct.pack(">Q", n)
    if not masked:
        return h + payload
    key = bytes(rng.randrange(256) for _ in range(4))
    k = (key * (len(payload) // 4 + 1))[:len(payload)]
    return h + key + (int.from_bytes(payload, "big") ^ int.from_bytes(k, "big")).to_bytes(len(payload), "big")

def text_frames(payload, binary=False):
    """One message: a single frame, or fragments with control frames between them."""
    op = 2 if binary else 1
    if len(payload) < 8 or rng.random() < 0.6:
        return frame(op, payload)
    cuts = sorted(rng.sample(range(1, len(payload)), min(rng.randint(1, 4), len(payload) - 1)))
    parts = [payload[a:b] for a, b in zip([0] + cuts, cuts + [len(payload)])]
    out = b""
    for i, p in enumerate(parts):
        out += frame(op if i == 0 else 0, p, fin=i == len(parts) - 1)
        if i < len(parts) - 1 and rng.random() < 0.4:
            out += frame(rng.choice([9, 10]), bytes(rng.randrange(256) for _ in range(rng.randint(0, 125))))
    return out

def odd_value(d=0):
    r = rng.random()
    if d > 3 or r < 0.5:
        return rng.choice([None, True, False, 0, -1, 2**63, -2**64, 10**40, 1.5, 1e308, "", "x", "\u00e9",
                           "\ud800", "a\u0000b", "\U0001F600", "r1", "r-0", "9" * 300])
    if r < 0.75:
        return [odd_value(d + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["a", "id", "", "run_id", "\u0000", "k" * 50]): odd_value(d + 1) for _ in range(rng.randint(0, 3))}

def enc(v):
    return json.dumps(v, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass")

def rpc(obj):
    """Members in a random order (the gateway's fast paths key on the usual one)."""
    items = list(obj.items())
    if rng.random() < 0.5:
        rng.shuffle(items)
    return b"{" + b",".join(enc(k) + b":" + (v if isinstance(v, bytes) else enc(v)) for k, v in items) + b"}"

def past_id():
    """An integer id the gateway gave an earlier request, never this run's or a later one's: a
    frame the gateway takes for an answer under this run's id ends the run, and the batch's
    later bytes would then meet the session's next run (see own_answer)."""
    return rng.randrange(0, req_id) if isinstance(req_id, int) and req_id > 0 else 0

def some_id():
    return rng.choice(["h%d" % rng.randrange(5), rng.randrange(-3, 60), 2**63 - 1, 2**64, -2**63, 1.5, None,
                       True, [], {}, "", "c1", "\u0000", "\ud800", "i" * 5000, past_id()])

def real_run():
    return run_id if run_id is not None and rng.random() < 0.7 else odd_value()

def call_frame():
    params = {"run_id": real_run(), "server": rng.choice(["fake", "nope", 1, None, "", "fake\u0000"]),
              "tool": rng.choice(["echo", "add", "sleep", "nope", 7, None, "echo\ud800"]),
              "args": rng.choice([{"text": "hi"}, {"a": 1, "b": 2}, {"ms": 10}, [], "x", 3, None, odd_value()])}
    for k in list(params):
        if rng.random() < 0.15:
            del params[k]
    if rng.random() < 0.4:
        params["timeout_ms"] = rng.choice([-1, 0, 1, 10, 2**63 - 1, -2**63, 2**64, "5", 1e300, None, [1]])
    msg = {"jsonrpc": rng.choice(["2.0", "2.0", "2.0", "1.0", 2, None]), "id": some_id(), "method": "call_tool",
           "params": params if rng.random() < 0.9 else odd_value()}
    if rng.random() < 0.1:
        del msg["id"]
    if rng.random() < 0.05:
        del msg["jsonrpc"]
    return rpc(msg)

def dup_calls():
    """Calls that really start (the run's id, a real tool) under one id, sent twice."""
    i = some_id()
    tool, args = rng.choice([("echo", {"text": "dup"}), ("sleep", {"ms": rng.randint(1, 200)}), ("add", {"a": 1, "b": 2})])
    one = rpc({"jsonrpc": "2.0", "id": i, "method": "call_tool",
               "params": {"run_id": run_id, "server": "fake", "tool": tool, "args": args}})
    return [one] * rng.randint(2, 4)

def flood():
    """Real calls, more than a run may have in flight (the rest wait in its gate), some with
    a timeout shorter than the call: the run ends with them in flight or queued."""
    out = []
    for _ in range(rng.randint(20, 80)):
        params = {"run_id": run_id, "server": "fake", "tool": "sleep", "args": {"ms": rng.choice([1, 50, 300, 5000])}}
        if rng.random() < 0.5:
            params["timeout_ms"] = rng.choice([1, 10, 100, -1, 0, 2**63 - 1])
        out.append(rpc({"jsonrpc": "2.0", "id": rng.choice(["f%d" % rng.randrange(10), past_id(), "c1"]),
                        "method": "call_tool", "params": params}))
    return out

def other_request():
    return rpc({"jsonrpc": "2.0", "id": some_id(),
                "method": rng.choice(["cancel", "run", "load_sdk", "set_shapes", "tools/list", "", "call_tool ", 5, None]),
                "params": rng.choice([{"run_id": rng.choice(["r-404", run_id, 3])}, {}, [], odd_value()])})

def notification():
    return rpc({"jsonrpc": "2.0", "method": rng.choice(["cancel", "progress", "notifications/cancelled", "call_tool"]),
                "params": {"run_id": rng.choice(["r-404", run_id, None]), "requestId": some_id()}})

def answer(aid=None):
    """An answer to nothing or to an earlier request (sometimes twice)."""
    if aid is None:
        aid = rng.choice([past_id(), 2**63 - 1, -1, "1", None, 1.0])
    if rng.random() < 0.3:
        body = {"jsonrpc": "2.0", "id": aid, "error": rng.choice([{"code": 1, "message": "forged"}, {"message": 5}, "e", None, {}])}
    else:
        res = rng.choice([{"ok": True, "result": "forged"}, {"ok": False, "error": "forged", "error_kind": "worker"},
                          {"ok": True, "result": odd_value(), "stdout": odd_value()}, {"ok": "yes"}, [], "s", None, 7,
                          {"ok": True, "calls": odd_value(), "mutations": odd_value()},
                          {"ok": True, "result": 1, "recycle": rng.choice([True, 1, None])}, {"ok": True, "result": "[" * 3000}])
        body = {"jsonrpc": "2.0", "id": aid, "result": res}
    one = rpc(body)
    return [one, one] if rng.random() < 0.3 else [one]

def nested():
    """Deep args for the gateway's decoders. Not for a real tool: the fake upstream's json.loads
    (Python's recursion limit) cannot read what the gateway forwards, and would exit."""
    d = rng.choice([100, 2040, 2100, 20000])
    inner = rng.choice([b"[" * d + b"]" * d, b'{"a":' * d + b"1" + b"}" * d])
    params = b'{"run_id":' + enc(real_run()) + b',"server":"fake","tool":"nope","args":{"text":' + inner + b"}}"
    return rpc({"jsonrpc": "2.0", "id": some_id(), "method": "call_tool", "params": params})

def huge_string():
    n = rng.choice([MAX_FRAME - 200, MAX_FRAME + 10, 3 * MAX_FRAME])
    return rpc({"jsonrpc": "2.0", "id": some_id(), "method": "call_tool",
                "params": {"run_id": real_run(), "server": "fake", "tool": "echo", "args": {"text": "x" * n}}})

def bad_utf8():
    good = call_frame()
    bad = rng.choice([b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80"])
    i = rng.randrange(len(good))
    return good[:i] + bad + good[i:]

def mangled():
    s = bytearray(rng.choice([call_frame, other_request, lambda: answer()[0]])())
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(s) + 1)
        op = rng.random()
        if op < 0.4 and s:
            del s[min(i, len(s) - 1)]
        elif op < 0.8:
            s[i:i] = rng.choice([b"{", b"}", b"[", b'"', b",", b":", b"\\", b"\\u", b"\x00", b"null", b" "])
        else:
            s = s[:i]
    return bytes(s)

KINDS = [("call", call_frame), ("dup", dup_calls), ("flood", flood), ("request", other_request), ("notify", notification),
         ("answer", answer), ("nested", nested), ("huge", huge_string), ("utf8", bad_utf8), ("mangled", mangled)]

def terminal():
    """A framing fault the stream cannot be read past; the worker is replaced."""
    return rng.choice([
        ("unmasked", frame(1, b'{"jsonrpc":"2.0"}', masked=False)),
        ("rsv", frame(1, b"{}", rsv=rng.choice([0x10, 0x20, 0x40]))),
        ("opcode", frame(rng.choice([3, 4, 5, 6, 7, 11, 12, 13, 14, 15]), b"x")),
        ("close", frame(8, struct.pack(">H", rng.choice([1000, 1002, 0, 65535])) + b"bye")),
        ("lone_continuation", frame(0, b'{"x":1}')),
        ("text_mid_fragment", frame(1, b'{"a":', fin=False) + frame(1, b'1}')),
        ("long_ping", frame(9, b"p" * 126)),
        ("fragmented_ping", frame(9, b"p", fin=False) + frame(0, b"q")),
        ("noise", bytes(rng.randrange(256) for _ in range(rng.randint(1, 200)))),
    ])

def own_answer():
    """A forged answer to this very run, sent twice: the last bytes of a batch, since the run
    ends there and the gateway may start the session's next run on this worker at once."""
    return answer(req_id)

sent, messages = [], []
for _ in range(rng.randint(6, 24)):
    name, gen = rng.choice(KINDS)
    got = gen()
    for payload in (got if isinstance(got, list) else [got]):
        messages.append(text_frames(payload, binary=rng.random() < 0.05))
    sent.append(name)
fault = None
if rng.random() < 0.25:
    fault, raw = terminal()
    messages.insert(rng.randrange(len(messages) + 1), raw)
if req_id is not None and rng.random() < 0.2:
    one = own_answer()[0]
    messages += [text_frames(one), text_frames(one)]
    sent.append("own_answer")
blob = b"".join(messages)
for fd in socks:
    view = memoryview(blob)
    while view:
        view = view[os.write(fd, view):]
time.sleep(0.2)
try:
    after = str(fake_echo(text="after the batch"))
except Exception as exc:
    after = "%s: %s" % (type(exc).__name__, str(exc)[:200])
result = {"seed": SEED, "sent": sent, "fault": fault, "bytes": len(blob), "socks": len(socks), "after": after[:300]}
`;

function program(seed) {
  return PROGRAM.replace('__SEED__', String(seed)).replace('__MAX_FRAME__', String(MAX_FRAME));
}

// 120 seeds by default (about 0.2 s each); CODEMCP_HOSTILE_SEED=N runs one, CODEMCP_HOSTILE_SEEDS=a-b a range.
function seeds() {
  const one = process.env.CODEMCP_HOSTILE_SEED;
  if (one) return [Number(one)];
  const [a, b] = (process.env.CODEMCP_HOSTILE_SEEDS || '1-120').split('-').map(Number);
  return Array.from({ length: b - a + 1 }, (_, i) => a + i);
}

test('seeded batches of hostile control frames: the gateway stays up and keeps answering', { timeout: ms(300000) }, async () => {
  const dir = tempDir();
  const h = await connectClient({
    config: writeConfig(dir, { fake: servers.fake() }),
    env: { CODEMCP_EXEC_TIMEOUT_MS: '6000', CODEMCP_CONTROL_MAX_FRAME: String(MAX_FRAME) },
  });
  const call = async (code) => {
    const r = await h.client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(30000) });
    return { isError: r.isError, ...(r.structuredContent ?? JSON.parse(r.content[0].text)) };
  };
  try {
    const warm = await call('result = fake_add(a=1, b=2)');
    assert.equal(warm.result, 3, JSON.stringify(warm));
    let sawResult = 0;
    for (const seed of seeds()) {
      const t0 = Date.now();
      let e;
      try {
        e = await call(program(seed));
      } catch (err) {
        assert.fail(`seed ${seed}: the run got no answer (${err.message}); stderr:\n${h.stderr().slice(-3000)}`);
      }
      const took = Date.now() - t0;
      const what = `seed ${seed} (${took} ms): ${JSON.stringify(e).slice(0, 1500)}`;
      if (process.env.CODEMCP_HOSTILE_VERBOSE) {
        const rss = fs.readFileSync(`/proc/${h.pid}/status`, 'utf8').match(/VmRSS:\s*(\d+)/)?.[1];
        console.log(`[gateway rss ${rss} kB] ${what.slice(0, 600)}`);
      }
      assert.ok(pidAlive(h.pid), `seed ${seed}: the gateway died; stderr:\n${h.stderr().slice(-3000)}`);
      assert.doesNotMatch(h.stderr(), SANITIZER, `seed ${seed}: a sanitizer report`);
      if (e.result && typeof e.result === 'object' && e.result.seed === seed) {
        sawResult++;
        assert.ok(e.result.socks >= 1, what);
        if (!e.result.fault) assert.match(e.result.after, /after the batch|ToolError/, what);
      } else {
        // Ended otherwise: a forged answer to this very run (whatever it said: a success
        // without a result is what a program that sets none gets), or a worker replaced after
        // a framing fault. Never at the run's deadline: the program itself takes well under a
        // second, so a timeout means a frame or a call was lost.
        const clear = e.isError === false || (e.isError === true && typeof e.error === 'string' && e.error.length > 0);
        assert.ok(clear, `seed ${seed}: neither a result nor an error: ${what}`);
        assert.notEqual(e.error_kind, 'exception', `the program itself failed: ${what}`);
        assert.notEqual(e.error_kind, 'timeout', what);
      }
      assert.ok(took < ms(20000), `seed ${seed}: the run took ${took} ms`);
      const next = await call(`result = fake_add(a=${seed}, b=1)`);
      assert.equal(next.result, seed + 1, `seed ${seed}, the run after: ${JSON.stringify(next).slice(0, 1500)}\n${what}\nstderr:\n${h.stderr().slice(-2500)}`);
    }
    assert.ok(pidAlive(h.pid), 'the gateway is alive at the end');
    if (!process.env.CODEMCP_HOSTILE_SEED) assert.ok(sawResult > 0, 'some batches ran to their end');
  } finally {
    await h.close();
  }
  assert.doesNotMatch(h.stderr(), SANITIZER, 'a sanitizer report at exit');
});

// Found by the batches above (UBSan: signed overflow in lp_timer_start): a call's timeout_ms
// near 2^63 (the worker passes what the program asked) overflowed the timer's microseconds,
// and the call timed out at once ("did not answer within 0 ms") in the plain build. A timeout
// further out than any clock now waits like one that is merely long.
test('a call asking for a timeout_ms near 2^63 waits for its answer', { timeout: ms(120000) }, async () => {
  const dir = tempDir();
  const h = await connectClient({ config: writeConfig(dir, { fake: servers.fake() }), env: { CODEMCP_EXEC_TIMEOUT_MS: '20000' } });
  try {
    const r = await h.client.callTool({ name: 'execute_python', arguments: { code:
      'result = [str(fake_sleep(ms=200, timeout_ms=t)) for t in (2**63 - 1, 2**62, 2**53, 10**15)]' } },
    undefined, { timeout: ms(60000) });
    const e = r.structuredContent ?? JSON.parse(r.content[0].text);
    assert.deepEqual(e.result, Array(4).fill('slept 200 ms'), JSON.stringify(e).slice(0, 1500));
    assert.doesNotMatch(h.stderr(), SANITIZER);
  } finally {
    await h.close();
  }
  assert.doesNotMatch(h.stderr(), SANITIZER, 'a sanitizer report at exit');
});
