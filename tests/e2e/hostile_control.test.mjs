// What hostile agent code can do to the gateway through the control channel (hand-written
// frames, raw bytes below the WebSocket client), and what it can make the gateway show
// (docs/review-extensions.md records how each case was found). Each test is one attack and
// failed on the code without its fix.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { connectClient, ms, servers, tempDir, writeConfig } from './lib.mjs';

async function session(mcp = {}, env = {}) {
  const dir = tempDir();
  const h = await connectClient({ config: writeConfig(dir, mcp), env });
  const call = (code, extra = {}) => h.client.callTool({ name: 'execute_python', arguments: { code, ...extra } },
    undefined, { timeout: ms(90000) });
  const run = async (code, extra = {}) => {
    const r = await call(code, extra);
    return r.structuredContent ?? JSON.parse(r.content[0].text);
  };
  return { h, run, call };
}

// A call_tool frame the gateway cannot decode is answered under the id its head
// names — but only when "method" came before the bad member: the
// frame-id reader stopped at the first member it could not read, took the frame for an
// answer, and the call waited until the run's deadline. Each frame below puts "method" last.
test('an undecodable call frame with "method" after the bad member is answered at once', { timeout: ms(120000) }, async () => {
  const { h, run } = await session({}, { CODEMCP_EXEC_TIMEOUT_MS: '30000' });
  try {
    let e = await run('kept = 5\nresult = 0');
    e = await run(String.raw`
import _codemcp, json, time
rid = '"r-any"'  # refused before any run lookup
bad = {
    "nul_key": '{"a\\u0000b":1}',
    "real_overflow": '{"x":1e999}',
    "too_deep": "[" * 3000 + "]" * 3000,
    "bad_escape": '{"x":"\\q"}',
}
out = {}
for i, (name, args) in enumerate(bad.items()):
    cid = "h%d" % i
    t = time.monotonic()
    _codemcp.send('{"jsonrpc":"2.0","id":"%s","params":{"run_id":%s,"server":"s","tool":"t","args":%s},"method":"call_tool"}' % (cid, rid, args))
    reply = _codemcp.wait_reply(cid, 8)
    out[name] = [reply is not None and json.loads(reply).get("error", {}).get("message"), round(time.monotonic() - t, 1)]
result = out`);
    assert.ok(e.result, JSON.stringify(e));
    for (const [name, [msg, s]] of Object.entries(e.result)) {
      assert.ok(typeof msg === 'string' && msg.length > 0, `${name}: no error reply (${JSON.stringify(e.result)})`);
      assert.ok(s < 8, `${name}: ${s} s`);
    }
    assert.match(e.result.nul_key[0], /NUL byte in object key/);
    e = await run('result = kept');
    assert.equal(e.result, 5, 'the worker was not restarted: ' + JSON.stringify(e));
  } finally {
    await h.close();
  }
});

// A WebSocket frame that declares 2^63 - 1 bytes, written by agent code on the
// control socket itself (below the worker's client), made the gateway take every later byte
// of the stream as that frame's payload: the run's answer and its calls were swallowed and
// the run ended only at its deadline, as a timeout. Now the frame is refused as soon as it
// is seen and the run ends at once saying why. (The stream cannot be read past such a frame,
// so the worker is restarted: see docs/review-extensions.md.)
const HUGE = String.raw`
import os, struct, time
mask = os.urandom(4)
header = bytes([0x81, 0x80 | 127]) + struct.pack(">Q", 2**63 - 1) + mask
for fd in os.listdir("/proc/self/fd"):
    try:
        if os.readlink("/proc/self/fd/" + fd).startswith("socket:"):
            os.write(int(fd), header)
    except OSError:
        pass
time.sleep(0.5)
THEN
result = "answered"`;

test('a frame declaring 2^63 - 1 bytes ends its run at once with the reason', { timeout: ms(180000) }, async () => {
  const { h, run } = await session({ fake: servers.fake() }, { CODEMCP_EXEC_TIMEOUT_MS: '60000' });
  try {
    for (const then of ['pass', 'fake_add(a=1, b=2)']) {
      const t0 = Date.now();
      const e = await run(HUGE.replace('THEN', then));
      const took = Date.now() - t0;
      assert.equal(e.error_kind, 'worker', `${then}: ${JSON.stringify(e)}`);
      assert.match(e.error, /control frame declaring 9223372036854775807 bytes/, JSON.stringify(e));
      assert.ok(took < 30000, `${then}: the run took ${took} ms`);
      const next = await run('result = 6 * 7');
      assert.equal(next.result, 42, `the run after: ${JSON.stringify(next)}`);
    }
  } finally {
    await h.close();
  }
});

// Jsonfast keeps an integer beyond 64 bits as a string tagged "\0jf-integer:" and
// jf_dumps writes it back as digits. A string the program chose with
// that prefix (a NUL is allowed in JSON strings) was written as a number too: the client saw
// 12 where the program returned the string, and an upstream got numbers where the program
// passed strings (the fake's add() added them). Every string now comes back as it was.
test('strings that look like the big-integer tag stay strings, to the client and upstream', { timeout: ms(120000) }, async () => {
  const { h, call } = await session({ fake: servers.fake() }, { CODEMCP_EXEC_TIMEOUT_MS: '20000' });
  try {
    const forged = ['\u0000jf-integer:12', '\u0000jf-integer:-7', '\u0000jf-string:x', '\u0000jf-string:\u0000jf-integer:3', '\u0000jf-', '\u0000jf-integer:'];
    let r = await call(`result = {"s": ${JSON.stringify(forged)}, "big": 2**70}`);
    const env = r.structuredContent ?? JSON.parse(r.content[0].text);
    assert.deepEqual(env.result?.s, forged, JSON.stringify(env));
    assert.match(r.content[0].text, /"big":1180591620717411303424[,}]/, r.content[0].text);
    // The worker's own argument check would refuse strings for numbers before sending; agent
    // code can switch it off, and what is tested is what the gateway forwards.
    r = await call('from codemcp_rt import argguard, client\nargguard.check = lambda *a: None\nresult = resolve(client.call("fake", "add", {"a": "\\x00jf-integer:2", "b": "\\x00jf-integer:3"}))');
    const e2 = r.structuredContent ?? JSON.parse(r.content[0].text);
    assert.match(JSON.stringify(e2), /add needs numbers/, JSON.stringify(e2));
  } finally {
    await h.close();
  }
});

// The worker's C run loop (src/worker/pyrunset.c stream()) reuses the last
// run's stdout after clearing its __dict__, holding only a borrowed reference; a value's
// __del__ there (agent code) replaced capture._last's items, which freed the stream being
// reused: the run then wrote to whatever took its memory (here a J instance: the run failed,
// or the worker crashed when it was something else). Under the Python path it is harmless.
test('C run loop 1: a stream reused after its __dict__ is cleared (pyrunset.c stream)', { timeout: ms(120000) }, async () => {
  const { h, run } = await session();
  try {
    let e;
    // 1. pyrunset.c stream(): the last run's stdout is reused after clearing its __dict__; a
    //    value's __del__ there emptied capture._last and freed the stream being reused.
    e = await run(String.raw`
import sys
g = {}
exec('''
import codemcp_rt.capture as c
class J:  # the size of a CappedStream: takes the freed stream's memory
    pass
class E:
    def __del__(self):
        c._last[:] = [None, None]
        junk.extend(J() for i in range(20000))
junk = []
''', g)
sys.stdout.evil = g["E"]()
kept = 8
result = 1`);
    assert.equal(e.result, 1, JSON.stringify(e));
    e = await run('print("hello")\nresult = kept');
    assert.equal(e.result, 8, JSON.stringify(e));
    assert.equal(e.stdout, 'hello\n', JSON.stringify(e));
    e = await run('result = 6 * 7');
    assert.equal(e.result, 42, JSON.stringify(e));
  } finally {
    await h.close();
  }
});

// The C run loop added agent-reachable entry points to _codemcp: scan_run (a pure reader of
// the run request, for tests), serve_stats and serve. Agent code calling them with hostile
// arguments gets None, a dict or a clean exception, and the worker keeps answering.
test('_codemcp.scan_run / serve_stats / serve with hostile arguments: clean answers, worker intact', { timeout: ms(120000) }, async () => {
  const { h, run } = await session();
  try {
    let e = await run('kept = 7\nresult = 0');
    e = await run(String.raw`
import _codemcp
class S(str): pass
head = '{"jsonrpc":"2.0","id":1,"method":"run","params":{"code":"x","run_id":"r","namespace":"n"}}'
cases = [None, 1, b"{}", S(head), "", "{", "\ud800", "[" * 100000, '{"jsonrpc":"2.0"' * 5000,
         head.replace('"id":1', '"id":' + "9" * 400), head.replace('"x"', '"' + "\\" * 3 + '"'),
         head[:-1] + ',"params":{}}', head.replace("run", "r\u0000n"), "x" * 5_000_000, head]
out = []
for c in cases:
    try:
        r = _codemcp.scan_run(c)
        out.append("dict" if isinstance(r, dict) else repr(r))
    except Exception as exc:
        out.append(type(exc).__name__)
for args in ((), (1,), (None, None)):
    try:
        _codemcp.serve_stats(*args)
        out.append("stats")
    except Exception as exc:
        out.append(type(exc).__name__)
try:
    _codemcp.serve()
except Exception as exc:
    out.append(type(exc).__name__)
result = out`);
    const out = e.result;
    assert.ok(Array.isArray(out), JSON.stringify(e).slice(0, 2000));
    assert.equal(out.length, 19, JSON.stringify(out));
    assert.equal(out[14], 'dict', `the well-formed request is read: ${JSON.stringify(out)}`);
    for (const [i, v] of out.slice(0, 14).entries()) assert.ok(['None', 'dict'].includes(v), `case ${i}: ${v}`);
    assert.equal(out[3], 'None', 'a str subclass is not read by the C reader');
    assert.deepEqual(out.slice(15, 18), ['stats', 'TypeError', 'TypeError'], JSON.stringify(out));
    assert.ok(out[18] !== 'None', `serve() re-entered from agent code must raise: ${out[18]}`);
    e = await run('result = kept');
    assert.equal(e.result, 7, 'the worker and its namespace survive');
  } finally {
    await h.close();
  }
});

// Session 8's new worker descriptors (wakewait): the eventfd that wakes the main thread and
// Python's signal wakeup pipe are in agent code's descriptor table. Agent code that closes
// the eventfd, puts /dev/null over it and removes the wakeup fd must not leave a wait that
// never ends: a reply still completes the call, the run deadline still ends a stuck wait,
// and the session's worker goes on answering.
test('agent code closing or replacing the worker\'s wake-up descriptors: waits still end', { timeout: ms(180000) }, async () => {
  const { h, run } = await session({ fake: servers.fake() }, { CODEMCP_EXEC_TIMEOUT_MS: '4000' });
  try {
    let e = await run('kept = 9\nresult = 0');
    e = await run(String.raw`
import os, signal
hit = []
for fd in os.listdir("/proc/self/fd"):
    try:
        t = os.readlink("/proc/self/fd/" + fd)
    except OSError:
        continue
    if "eventfd" in t:
        hit.append(int(fd))
null = os.open("/dev/null", os.O_RDONLY)
for i, fd in enumerate(hit):
    if i % 2:
        os.close(fd)
    else:
        os.dup2(null, fd)
signal.set_wakeup_fd(-1)
r = fake_sleep(ms=300).result()
result = {"eventfds": len(hit), "reply": str(r)[:40]}`);
    assert.ok(e.result && e.result.eventfds >= 1, JSON.stringify(e).slice(0, 1500));
    const t0 = Date.now();
    e = await run('fake_sleep(ms=60000).result()\nresult = "not reached"');
    assert.notEqual(e.result, 'not reached', JSON.stringify(e).slice(0, 1500));
    assert.ok(Date.now() - t0 < ms(60000), 'the run deadline ends a wait whose wake-up descriptor was replaced');
    e = await run('result = 41 + 1');
    assert.equal(e.result, 42, `the session still answers: ${JSON.stringify(e).slice(0, 1500)}`);
  } finally {
    await h.close();
  }
});

// Session 9 (wksys): the worker's control socket is blocking and its waits for the next request
// and for replies (several calls in flight) are one recv on it. Agent code shares the descriptor:
// making it non-blocking must only bring the poll back, never a busy loop, a lost reply or a
// wait the deadline cannot end; and one call, many calls and the next run still work.
test('agent code flipping the control socket to non-blocking: waits still end, nothing is lost', { timeout: ms(180000) }, async () => {
  const { h, run } = await session({ fake: servers.fake() }, { CODEMCP_EXEC_TIMEOUT_MS: '4000' });
  try {
    let e = await run(String.raw`
import os
flipped = []
for fd in os.listdir("/proc/self/fd"):
    try:
        if os.readlink("/proc/self/fd/" + fd).startswith("socket:"):
            os.set_blocking(int(fd), False)
            flipped.append(int(fd))
    except OSError:
        pass
one = str(fake_echo(text="one"))
many = [fake_echo(text="m%d" % i) for i in range(20)]
result = {"flipped": len(flipped), "one": "one" in one, "many": sum(("m%d" % i) in str(p) for i, p in enumerate(many))}`);
    assert.ok(e.result && e.result.flipped >= 1, JSON.stringify(e).slice(0, 1500));
    assert.equal(e.result.one, true, JSON.stringify(e).slice(0, 1500));
    assert.equal(e.result.many, 20, JSON.stringify(e).slice(0, 1500));
    e = await run('import time\nt = time.process_time()\nps = [fake_sleep(ms=1500) for _ in range(3)]\n' +
      '[p.result() for p in ps]\nresult = time.process_time() - t');
    assert.equal(typeof e.result, 'number', JSON.stringify(e).slice(0, 1500));
    assert.ok(e.result < 0.6, `waiting 1.5 s for three calls took ${e.result} s of CPU: a busy loop`);
    const t0 = Date.now();
    e = await run('ps = [fake_sleep(ms=60000) for _ in range(2)]\n[p.result() for p in ps]\nresult = "not reached"');
    assert.notEqual(e.result, 'not reached', JSON.stringify(e).slice(0, 1500));
    assert.ok(Date.now() - t0 < ms(60000), 'the run deadline ends a wait on a non-blocking control socket');
    e = await run('result = 41 + 1');
    assert.equal(e.result, 42, `the session still answers: ${JSON.stringify(e).slice(0, 1500)}`);
  } finally {
    await h.close();
  }
});
