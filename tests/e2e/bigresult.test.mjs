// Big tool results through the real gateway and a sandboxed worker: a result larger than the
// control channel's frame limit fails the call with ToolError(kind="too_large") naming the
// limit, and the session's variables survive (the worker used to drop the connection and die
// with them); results of several MB, written to the worker over many partial sends, arrive
// with content identical to what the upstream sent, as JSON text and as structuredContent
// (strings with escapes and non-ASCII, reals, nested and empty containers). A raised frame
// limit holds for the worker too: it reads what the gateway may send. Results queued by
// reference to a worker that stops reading go with its connection when it is ended.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

import { PYTHON, TESTS, connectClient, ms, peakRssMb, tempDir, writeConfig } from './lib.mjs';

const FIXTURE = path.join(TESTS, 'fixtures', 'big_upstream.py');
const MEASURE_MEMORY = !process.env.CODEMCP_TEST_SANITIZER; // peakRssMb is NaN then

async function session(env = {}) {
  const dir = tempDir();
  const h = await connectClient({ config: writeConfig(dir, { big: { type: 'local', command: [PYTHON, FIXTURE] } }), env });
  const run = async (code) => {
    const r = await h.client.callTool({ name: 'execute_python', arguments: { code } },
      undefined, { timeout: ms(120000) });
    return r.structuredContent ?? JSON.parse(r.content[0].text);
  };
  return { h, run };
}

test('a result over the frame limit raises too_large naming the limit; the variables survive', { timeout: ms(240000) }, async () => {
  const { h, run } = await session();
  try {
    assert.equal((await run('kept = [41]\nresult = len(kept)')).result, 1);
    const r = await run(String.raw`
try:
    len(big_blob(bytes=70 * 1024 * 1024))
    result = "no error"
except ToolError as e:
    result = {"kind": e.kind, "message": str(e), "kept": kept[0]}
`);
    assert.equal(r.result?.kind, 'too_large', JSON.stringify(r).slice(0, 2000));
    assert.match(r.result.message, /67108864 bytes/);
    assert.match(r.result.message, /CODEMCP_CONTROL_MAX_FRAME/);
    assert.equal(r.result.kept, 41);
    // The next run of the session: same interpreter, same variables; calls still work.
    const after = await run('kept.append(1)\nresult = [sum(kept), len(big_blob(bytes=10))]');
    assert.deepEqual(after.result, [42, 10], JSON.stringify(after).slice(0, 2000));
  } finally {
    await h.close();
  }
});

test('a lower CODEMCP_CONTROL_MAX_FRAME is the limit named', { timeout: ms(120000) }, async () => {
  const { h, run } = await session({ CODEMCP_CONTROL_MAX_FRAME: String(2 << 20) });
  try {
    const r = await run(String.raw`
v = 7
try:
    len(big_blob(bytes=3 << 20))
    result = "no error"
except ToolError as e:
    result = {"kind": e.kind, "message": str(e), "v": v, "small": len(big_blob(bytes=1 << 20))}
`);
    assert.equal(r.result?.kind, 'too_large', JSON.stringify(r).slice(0, 2000));
    assert.match(r.result.message, /2097152 bytes/);
    assert.equal(r.result.v, 7);
    assert.equal(r.result.small, 1 << 20);
  } finally {
    await h.close();
  }
});

test('a raised CODEMCP_CONTROL_MAX_FRAME reaches the worker: a result over the default cap arrives whole', { timeout: ms(240000) }, async () => {
  // 70 MiB is over the 64 MiB default and under the raised cap; the worker reads frames up to
  // the cap the gateway passes it, so the result arrives instead of ending the worker.
  const { h, run } = await session({ CODEMCP_CONTROL_MAX_FRAME: String(96 << 20), CODEMCP_CONTROL_MAX_UNREAD: String(192 << 20) });
  try {
    const r = await run(String.raw`
v = 7
try:
    b = big_blob(bytes=70 * 1024 * 1024)
    result = {"len": len(b), "v": v}
except ToolError as e:
    result = {"kind": e.kind, "message": str(e), "v": v}
`);
    assert.deepEqual(r.result, { len: 70 * 1024 * 1024, v: 7 }, JSON.stringify(r).slice(0, 2000));
    const after = await run('result = [v, len(big_blob(bytes=10))]');
    assert.deepEqual(after.result, [7, 10], JSON.stringify(after).slice(0, 2000));
  } finally {
    await h.close();
  }
});

test('results relayed by reference to a worker that stopped reading are dropped with its connection; the gateway lives on', { timeout: ms(240000) }, async () => {
  // Compact results go to the worker as the bytes the upstream sent, queued where they were
  // read (not copied). Six of 30 MB reach a worker that stopped itself: past
  // CODEMCP_CONTROL_MAX_UNREAD its connection is ended with those blocks still queued, and
  // they go with it (under the sanitizers: no use after free, no double free).
  const { h, run } = await session();
  try {
    assert.equal((await run('kept = 5\nresult = 0')).result, 0);
    const e = await run(String.raw`
import os, signal, time
from codemcp_rt import client
calls = [client.call("big", "blob", {"bytes": 30 * 1024 * 1024, "compact": True}) for _ in range(6)]
time.sleep(0.2)
os.kill(os.getpid(), signal.SIGSTOP)
result = "resumed"`);
    assert.equal(e.error_kind, 'worker', JSON.stringify(e).slice(0, 2000));
    assert.match(e.error, /did not read \d+ bytes the gateway had sent it \(CODEMCP_CONTROL_MAX_UNREAD 67108864\)/);
    const next = await run(String.raw`
from codemcp_rt import client
from codemcp_rt.pending import resolve
calls = [client.call("big", "blob", {"bytes": 20 * 1024 * 1024, "compact": True}) for _ in range(3)]
result = [len(resolve(c)) for c in calls]`);
    assert.deepEqual(next.result, [20 << 20, 20 << 20, 20 << 20], JSON.stringify(next).slice(0, 2000));
  } finally {
    await h.close();
  }
});

test('results of several MB arrive identical, as text and as structuredContent', { timeout: ms(240000) }, async () => {
  const { h, run } = await session();
  try {
    for (const [n, seed] of [[3000, 1], [18000, 2]]) {
      const want = execFileSync(PYTHON, [FIXTURE, '--digest', String(n), String(seed)], { encoding: 'utf8' }).trim();
      const r = await run(String.raw`
import hashlib, json
def digest(v):
    return hashlib.sha256(json.dumps(v, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
t = big_records(n=${n}, seed=${seed})
s = big_records_structured(n=${n}, seed=${seed})
result = [digest(t), digest(s["records"]), len(t), type(t[0]["real"]).__name__]
`);
      assert.deepEqual(r.result, [want, want, n, 'float'], JSON.stringify(r).slice(0, 2000));
    }
    // The shape is learned from the big structured results too (from their first elements).
    const d = await run('describe("big_records_structured")');
    assert.match(String(d.result), /Returns \(learned\): \{records: \[\{id: int, .*real: float/, JSON.stringify(d));
  } finally {
    await h.close();
  }
});

// The reply's text read from its bytes (JSON parsed in C, or the text itself) gives what
// json.loads of the text gives, else the text: escapes, non-ASCII, reals, a lone surrogate (json.loads
// keeps it), invalid JSON, prose with escapes, a text starting with white space, a big one, numbers at
// the edges, NaN, every escape, nesting around the C reader's depth, what strict JSON refuses.
test('text results read from the reply bytes: the value json.loads gives, else the text', { timeout: ms(120000) }, async () => {
  const { h, run } = await session();
  try {
    const r = await run(String.raw`
import json
def expect(t):
    try:
        return json.loads(t)
    except ValueError:
        return t
cases = [r'[1, 2.5, -3e-7, "a\"b\\c\n\u00e9\ud83d\ude00"]', r'{"k": "\ud800"}', '[1, 2',
         r'plain "quoted" text\nwith\tescapes \\ and \u00e9', ' [1]', '{"a": {"b": [true, null, {}]}}',
         '"just a string"', '[' + ','.join([r'{"x": "y\"z", "n": 1.25}'] * 20000) + ']', '[1] trailing',
         '{"big": 123456789012345678901234567890}', '[' * 70 + ']' * 70, 'caf\u00e9 \U0001F600',
         r'{"n": [1.5, -0.0, 1e400, -1e-400, 1E5, 12345678901234567890, -9223372036854775808, -0]}',
         '[NaN, Infinity, -Infinity]', r'{"pair": "\ud83d\ude00", "esc": "\/\b\f\r\t"}', r'["\udc00x"]',
         '[' * 64 + ']' * 64, '[' * 65 + ']' * 65, '["a\tb"]', '{"a": 1, "a": 2}', '[01]', '[1,]', '  {}  ']
got = [resolve(big_echo(text=t)) for t in cases]
bad = [i for i, t in enumerate(cases) if repr(got[i]) != repr(expect(t)) or type(got[i]) is not type(expect(t))]
reps = resolve(big_echo(text=r'{"q": "\"", "r": 0.1},', repeat=3))
result = {"bad": bad, "reps": reps}
`);
    assert.deepEqual(r.result, { bad: [], reps: String.raw`{"q": "\"", "r": 0.1},`.repeat(3) },
      JSON.stringify(r).slice(0, 2000));
  } finally {
    await h.close();
  }
});

// What a big text result costs the gateway at the peak. Relayed as bytes (compact JSON from
// the upstream): one payload, the line it was read into, written to the worker from there (not
// copied into the output beside it), and a text too long to learn a shape from (over 256 KB) is
// not also sampled and parsed for learning (five payloads before, on every call: a function
// whose results are all that long never gets a shape). Through a tree (an upstream writing JSON
// with spaces): two, the tree and the frame; the line is freed once the tree is made, the frame
// is encoded straight into the output (not a text then a copy of it), and learning does not
// copy the text to find it too long (four before).
for (const [compact, payloads] of [[true, 1], [false, 2]]) {
  test(`a big text result costs the gateway ${payloads} payload(s) at the peak (${compact ? 'relayed as bytes' : 'through a tree'})`, { timeout: ms(240000) }, async () => {
    // meson test sets MALLOC_PERTURB_, which fills every buffer's whole capacity (a 32 MB text
    // in a buffer grown to 64 MB would count 64): off, the peak is what is used.
    const { h, run } = await session({ MALLOC_PERTURB_: '0' });
    try {
      assert.equal((await run('result = 1')).result, 1);
      const before = peakRssMb(h.pid);
      const mb = 32;
      const call = `len(big_blob(bytes=${mb} << 20${compact ? ', compact=True' : ''}))`;
      const r = await run(`result = [${call} for _ in range(2)]`);
      assert.deepEqual(r.result, [mb << 20, mb << 20], JSON.stringify(r).slice(0, 2000));
      const peak = peakRssMb(h.pid);
      console.log(`# ${mb} MB text results: gateway peak ${before.toFixed(0)} -> ${peak.toFixed(0)} MB`);
      if (MEASURE_MEMORY) assert.ok(peak - before < (payloads + 0.6) * mb, `the gateway's peak grew from ${before} to ${peak} MB`);
    } finally {
      await h.close();
    }
  });
}
