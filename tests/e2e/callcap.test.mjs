// A run's calls in flight are bounded (CODEMCP_MAX_CALLS_PER_RUN, src/run/calls.c): a program that
// starts a thousand SDK calls without waiting (each a Pending) gets every answer, in order,
// but the upstream never sees more than the bound at once; calls past it wait in order and
// start as earlier ones end; the ones still waiting when the run ends are never sent; a normal
// program's 100 concurrent calls still overlap. The fake upstream writes the most tools/call
// requests it handled at once (--peak-file). Timing bounds are generous: behaviour, not speed.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

import { connectClient, ms, readFakeLog, servers, sleep, tempDir, writeConfig } from './lib.mjs';

function run(h, code, extra = {}) {
  return h.client.callTool({ name: 'execute_python', arguments: { code, ...extra } }, undefined,
    { timeout: ms(120000) });
}

async function gateway(env = {}) {
  const dir = tempDir('codemcp-callcap-');
  const peak = path.join(dir, 'peak');
  const log = path.join(dir, 'fake.log');
  const config = writeConfig(dir, { fake: servers.fake(['--peak-file', peak, '--log-file', log]) });
  const h = await connectClient({ config, env });
  await h.client.listTools();
  return { h, peak: () => Number(fs.existsSync(peak) ? fs.readFileSync(peak, 'utf8') : 0), log };
}

const ALL_AT_ONCE = (n, sleepMs) => `
ps = [fake_sleep(ms=${sleepMs}) for _ in range(${n})]  # none waited for yet
texts = [str(p.result()) for p in ps]
result = {"n": len(texts), "ok": sum("slept ${sleepMs} ms" in t for t in texts)}
`;

function sleepCalls(log) {
  return readFakeLog(log).filter((m) => m.method === 'tools/call' && m.params?.name === 'sleep').length;
}

describe('calls in flight per run', () => {
  test('with a bound of 4, 40 calls started at once all answer, at most 4 at the upstream', async () => {
    const g = await gateway({ CODEMCP_MAX_CALLS_PER_RUN: '4' });
    const r = await run(g.h, ALL_AT_ONCE(40, 150), { timeout_ms: 60000 });
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.deepEqual(r.structuredContent.result, { n: 40, ok: 40 });
    const peak = g.peak();
    assert.ok(peak >= 1 && peak <= 4, `upstream saw ${peak} calls at once (bound 4)`);
    // order: the arguments reached the upstream in the order the program made the calls
    const ordered = `
ps = [fake_echo(text=str(i)) for i in range(30)]
result = [str(p.result()) for p in ps]
`;
    const o = await run(g.h, ordered, { timeout_ms: 60000 });
    assert.equal(o.isError, false, JSON.stringify(o));
    const echoes = readFakeLog(g.log).filter((m) => m.method === 'tools/call' && m.params?.name === 'echo')
      .map((m) => m.params.arguments.text);
    assert.deepEqual(echoes, Array.from({ length: 30 }, (_, i) => String(i)));
    await g.h.close();
  });

  test('calls still waiting when the run ends are never sent; the next run works', async () => {
    const g = await gateway({ CODEMCP_MAX_CALLS_PER_RUN: '2' });
    const r = await run(g.h, ALL_AT_ONCE(30, 3000), { timeout_ms: 4000 });
    assert.equal(r.isError, true, JSON.stringify(r));
    await sleep(ms(4000)); // a wrongly started waiting call would reach the upstream by now
    const sent = sleepCalls(g.log);
    assert.ok(sent >= 1 && sent <= 4, `${sent} of 30 calls reached the upstream (bound 2, run of 4 s, calls of 3 s)`);
    const next = await run(g.h, 'str(fake_sleep(ms=10).result())', { timeout_ms: 30000 });
    assert.equal(next.isError, false, JSON.stringify(next));
    assert.match(JSON.stringify(next.structuredContent.result), /slept 10 ms/);
    assert.equal(sleepCalls(g.log), sent + 1);
    await g.h.close();
  });

  test('default bound: 100 concurrent calls overlap; 1000 started at once stay at 256 or fewer', async () => {
    const g = await gateway();
    const r = await run(g.h, ALL_AT_ONCE(100, 1500), { timeout_ms: 60000 });
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.deepEqual(r.structuredContent.result, { n: 100, ok: 100 });
    assert.ok(g.peak() >= 20, `only ${g.peak()} of 100 concurrent calls overlapped`);
    const hostile = await run(g.h, ALL_AT_ONCE(1000, 600), { timeout_ms: 90000 });
    assert.equal(hostile.isError, false, JSON.stringify(hostile));
    assert.deepEqual(hostile.structuredContent.result, { n: 1000, ok: 1000 });
    const peak = g.peak();
    assert.ok(peak <= 256, `upstream saw ${peak} calls of one run at once (default bound 256)`);
    await g.h.close();
  });
});
