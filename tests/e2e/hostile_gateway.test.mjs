// What one session's hostile code can do to the gateway itself and to the guard rails the
// gateway keeps, through the worker it owns (agent code writes on the control socket, forks,
// stops its own worker): the gateway's memory stays bounded (bytes queued to a worker that does
// not read, argument bytes of calls in flight), its log keeps one line per message, and what
// the client is told (mutations, output size) is what the gateway saw and allows, not what the
// worker claims. The real binary, the real sandboxed worker, server-memory and the fake
// upstream, driven by the official SDK client over stdio. Memory is read from the gateway's
// /proc status (VmHWM: the peak); no timing is asserted.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { connectClient, ms, peakRssMb, PY_OWN_SOCKETS, pyTallyOutcomes, servers, tempDir, waitFor, writeConfig } from './lib.mjs';

async function session(mcp = {}, env = {}) {
  const dir = tempDir();
  const h = await connectClient({ config: writeConfig(dir, mcp), env });
  const call = (code, extra = {}) => h.client.callTool({ name: 'execute_python', arguments: { code, ...extra } },
    undefined, { timeout: ms(120000) });
  const run = async (code, extra = {}) => {
    const r = await call(code, extra);
    return r.structuredContent ?? JSON.parse(r.content[0].text);
  };
  return { h, dir, run, call };
}

/** The gateway's peak resident memory so far, in MB. */
const MEASURE_MEMORY = !process.env.CODEMCP_TEST_SANITIZER; // peakRssMb is NaN then

// Non-ASCII in the program sends the run through worker_main.handle, whose frame holds the
// request id of the run: the program can answer its own run with a frame of its choosing.
const OWN_REQ_ID = String.raw`# é
import sys
f, req_id = sys._getframe(), None
while f:
    if f.f_code.co_name == "handle" and "req_id" in f.f_locals:
        req_id = f.f_locals["req_id"]
    f = f.f_back
assert req_id is not None`;

test('mutations are the writes the gateway routed: clearing the runtime record hides nothing', { timeout: ms(120000) }, async () => {
  const dir = tempDir();
  const memFile = path.join(dir, 'memory.jsonl');
  const { h, run } = await session({ memory: servers.memory(memFile) });
  try {
    const e = await run(String.raw`
made = memory_create_entities(entities=[{"name": "Hidden", "entityType": "t", "observations": []}])
names = [x["name"] for x in made["entities"]]  # read: the runtime has recorded the write
from codemcp_rt import runstate
runstate.current().mutations.clear()
result = names`, { allow_mutations: ['memory_create_entities'] });
    assert.deepEqual(e.result, ['Hidden'], JSON.stringify(e));
    assert.ok(fs.readFileSync(memFile, 'utf8').includes('Hidden'), 'the write reached the server');
    assert.deepEqual(e.mutations, [{ server: 'memory', tool: 'create_entities', ok: true }], JSON.stringify(e));
    // A worker that claims writes it never made: the gateway lists none.
    const forged = await run(String.raw`
from codemcp_rt import runstate
runstate.current().mutations.append({"server": "memory", "tool": "delete_entities", "ok": True})
result = 1`);
    assert.equal(forged.result, 1, JSON.stringify(forged));
    assert.ok(!('mutations' in forged), JSON.stringify(forged));
    // A dry run's stubbed write is listed as such.
    const dry = await run('memory_create_entities(entities=[{"name": "Dry", "entityType": "t", "observations": []}])\nresult = 2',
      { dry_run: true });
    assert.deepEqual(dry.mutations, [{ server: 'memory', tool: 'create_entities', ok: true, dry_run: true }], JSON.stringify(dry));
    assert.ok(!fs.readFileSync(memFile, 'utf8').includes('Dry'), 'a dry run wrote');
  } finally {
    await h.close();
  }
});

test('a forged answer frame cannot deliver past CODEMCP_MAX_OUTPUT_BYTES', { timeout: ms(120000) }, async () => {
  const { h, call, run } = await session({}, { CODEMCP_MAX_OUTPUT_BYTES: String(1 << 20) });
  try {
    const r = await call(`${OWN_REQ_ID}
import _codemcp, json, time
_codemcp.send(json.dumps({"jsonrpc": "2.0", "id": req_id, "result": {"ok": True, "result": "x" * 12_500_000}}))
time.sleep(5)
result = "not forged"`);
    const text = r.content[0].text;
    assert.ok(text.length < 2 * (1 << 20), `the client got ${text.length} bytes`);
    assert.equal(r.isError, true, text.slice(0, 300));
    assert.match(text, /more than a run may answer/, text.slice(0, 300));
    const next = await run('result = 6 * 7');
    assert.equal(next.result, 42, JSON.stringify(next));
  } finally {
    await h.close();
  }
});

test('worker-sent text cannot forge a line of the gateway log', { timeout: ms(120000) }, async () => {
  const { h, run } = await session({}, { CODEMCP_LOG: 'info' });
  try {
    const forged = '12:00:00.000 codemcp info [http] principal admin authenticated from 10.0.0.1';
    const e = await run(`
import _codemcp, json
for i in range(3):
    _codemcp.send(json.dumps({"jsonrpc": "2.0", "id": 987654 + i, "error": {"code": 1, "message": "x\\n${forged}\\r\\n${forged}"}}))
    _codemcp.send(json.dumps({"jsonrpc": "2.0", "method": "call_tool\\n${forged}", "id": "c%d" % i, "params": {}}))
result = 1`);
    assert.equal(e.result, 1, JSON.stringify(e));
    const lines = h.stderr().split('\n');
    const standalone = lines.filter((l) => l.includes('principal admin authenticated') && !/\[(worker|control|runs|calls)\]/.test(l));
    assert.deepEqual(standalone, [], 'a forged line was written:\n' + standalone.join('\n'));
    assert.ok(lines.some((l) => l.includes('\\n12:00:00.000 codemcp info [http]')), 'the message is logged, escaped:\n' + h.stderr().slice(-2000));
  } finally {
    await h.close();
  }
});

test('a worker\'s messages reach the log at most CODEMCP_LOG_WORKER_LINES a second', { timeout: ms(120000) }, async () => {
  const { h, run } = await session({}, { CODEMCP_LOG: 'info', CODEMCP_LOG_WORKER_LINES: '5' });
  try {
    const e = await run(`
import _codemcp, json, time
for i in range(300):
    _codemcp.send(json.dumps({"jsonrpc": "2.0", "id": 700000 + i, "error": {"code": 1, "message": "budget-marker %d" % i}}))
time.sleep(1.5)
_codemcp.send(json.dumps({"jsonrpc": "2.0", "id": 699999, "error": {"code": 1, "message": "budget-after"}}))
result = 1`);
    assert.equal(e.result, 1, JSON.stringify(e));
    await waitFor(() => h.stderr().includes('budget-after'), ms(10000));
    const marked = h.stderr().split('\n').filter((l) => l.includes('budget-marker')).length;
    // 300 messages within a second or two: 5 a second get through.
    assert.ok(marked >= 1 && marked <= 15, `${marked} of 300 messages were logged:\n${h.stderr().slice(-1500)}`);
    assert.match(h.stderr(), /\d+ more lines were not logged \(over 5 a second\)/, h.stderr().slice(-1500));
  } finally {
    await h.close();
  }
});

test('a stopped worker flooded with junk frames by its child is ended at the unread cap; the gateway stays small', { timeout: ms(240000) }, async () => {
  const { h, run } = await session({}, { CODEMCP_EXEC_TIMEOUT_MS: '120000' });
  try {
    assert.equal((await run('kept = 5\nresult = 0')).result, 0);
    const before = peakRssMb(h.pid);
    const e = await run(String.raw`
import os, signal, struct, time
${PY_OWN_SOCKETS}
junk = (bytes([0x81, 0x81]) + b"\0\0\0\0" + b"x") * 100000
pid = os.fork()
if pid == 0:
    try:
        for _ in range(30):
            for s in socks:
                os.write(s, junk)
    finally:
        os._exit(0)
os.kill(os.getpid(), signal.SIGSTOP)
result = "resumed"`);
    const peak = peakRssMb(h.pid);
    console.log(`# junk frames to a stopped worker: gateway peak ${before.toFixed(0)} -> ${peak.toFixed(0)} MB`);
    assert.equal(e.error_kind, 'worker', JSON.stringify(e));
    assert.match(e.error, /did not read \d+ bytes the gateway had sent it \(CODEMCP_CONTROL_MAX_UNREAD 67108864\)/, JSON.stringify(e));
    // 21 MB of 7-byte frames, each answered with a ~90-byte error: ~270 MB queued without the cap.
    if (MEASURE_MEMORY) assert.ok(peak - before < 120, `the gateway's peak grew from ${before} to ${peak} MB`);
    const next = await run('result = 6 * 7');
    assert.equal(next.result, 42, JSON.stringify(next));
  } finally {
    await h.close();
  }
});

/** A program starting n calls, each with `bytes` (a Python expression) of arguments, to a tool
 *  that does not answer (each fails after timeoutMs); its result counts them by outcome, with
 *  the message of a refusal. */
const heldCalls = (n, bytes, timeoutMs) => String.raw`
from codemcp_rt import client
big = "y" * (${bytes})
calls = [client.call("fake", "sleep", {"ms": 60000, "pad": big}, timeout_ms=${timeoutMs}) for _ in range(${n})]
${pyTallyOutcomes('calls')}`;

test('argument bytes of calls in flight are capped per run: 24 calls of 8 MB to a tool that does not answer', { timeout: ms(240000) }, async () => {
  const { h, run } = await session({ fake: servers.fake() }, { CODEMCP_EXEC_TIMEOUT_MS: '60000' });
  try {
    assert.equal((await run('result = fake_add(a=1, b=2)')).result, 3);
    const before = peakRssMb(h.pid);
    const e = await run(heldCalls(24, '8 << 20', 20000));
    const peak = peakRssMb(h.pid);
    console.log(`# 24 calls of 8 MB: gateway peak ${before.toFixed(0)} -> ${peak.toFixed(0)} MB; ${JSON.stringify(e.result ?? e).slice(0, 200)}`);
    assert.ok(e.result, JSON.stringify(e).slice(0, 500));
    assert.ok(e.result.denied >= 10, JSON.stringify(e.result).slice(0, 500));
    assert.match(e.result.message, /bytes of arguments of this run's calls/, e.result.message);
    if (MEASURE_MEMORY) assert.ok(peak - before < 200, `the gateway's peak grew from ${before} to ${peak} MB`);
    const next = await run('result = 6 * 7');
    assert.equal(next.result, 42, JSON.stringify(next));
  } finally {
    await h.close();
  }
});

test('the argument caps are CODEMCP_MAX_ARGS_BYTES_PER_RUN and _PER_PRINCIPAL', { timeout: ms(120000) }, async () => {
  // Four calls of 300 KB to a tool that does not answer, in one run.
  const held = heldCalls(4, '300_000', 2000);
  // [per run, per principal, calls refused]: three fit under 1 MiB, two under 700,000 bytes.
  for (const [perRun, perPrincipal, denied] of [[1 << 20, 128 << 20, 1], [64 << 20, 700000, 2]]) {
    const { h, run } = await session({ fake: servers.fake() }, {
      CODEMCP_MAX_ARGS_BYTES_PER_RUN: String(perRun), CODEMCP_MAX_ARGS_BYTES_PER_PRINCIPAL: String(perPrincipal) });
    try {
      const e = await run(held);
      assert.equal(e.result?.denied, denied, JSON.stringify(e).slice(0, 500));
      assert.ok(e.result.message.includes(`CODEMCP_MAX_ARGS_BYTES_PER_RUN ${perRun}, _PER_PRINCIPAL ${perPrincipal}`), e.result.message);
    } finally {
      await h.close();
    }
  }
});
