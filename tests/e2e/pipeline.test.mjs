// The run pipeline end to end: transport → mcp_server → runs → workers → control →
// calls → upstream, on the paths that had no test of their own: a session's logging/setLevel
// and the notifications/message it gets about its runs, a worker killed between dispatch and
// its first tool call, and a client cancel
// that arrives while the worker is reloading its SDK. The real binary and worker throughout;
// upstreams are fake_upstream.py and a small inline server whose tool list grows on demand.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import {
  RawClient,
  descendants,
  growingServer,
  ms,
  prototypeChain,
  readFakeLog,
  servers,
  sleep,
  tempDir,
  waitFor,
  writeConfig,
} from './lib.mjs';

function runRequest(c, code, args = {}, id = c.nextId++) {
  c.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'execute_python', arguments: { code, ...args } } });
  return id;
}

async function run(c, code, args = {}) {
  const r = await c.response(runRequest(c, code, args), ms(30000));
  assert.ok(r.result?.structuredContent, `no CallToolResult: ${JSON.stringify(r)}`);
  return r.result;
}

/** Live codemcp-worker processes under the gateway (compare them by pid and start time: pids
 *  wrap around quickly on a busy machine). */
function workerProcs(pid) {
  return descendants(pid).filter((p) => p.comm === 'codemcp-worker' && p.state !== 'Z');
}

/** notifications/message received so far (taken off the queue). */
function takeLogMessages(c) {
  const got = c.messages.filter((m) => m.method === 'notifications/message');
  c.messages = c.messages.filter((m) => m.method !== 'notifications/message');
  return got.map((m) => m.params);
}

test('logging/setLevel: no notifications/message until a level is set, then those at or above it', { timeout: ms(60000) }, async () => {
  const dir = tempDir();
  const c = new RawClient({ config: writeConfig(dir, { fake: servers.fake() }) });
  await c.initialize();

  let r = await run(c, 'result = fake_add(a=1, b=2)');
  assert.equal(r.isError, false, JSON.stringify(r));
  await sleep(200);
  assert.deepEqual(takeLogMessages(c), [], 'messages sent before any logging/setLevel');

  assert.deepEqual((await c.request('logging/setLevel', { level: 'info' })).result, {});
  r = await run(c, 'result = fake_add(a=1, b=2)');
  assert.equal(r.isError, false, JSON.stringify(r));
  let got = takeLogMessages(c); // sent before the answer, on the same stream
  assert.equal(got.length, 1, JSON.stringify(got));
  assert.equal(got[0].level, 'info');
  assert.equal(got[0].logger, 'codemcp');
  assert.match(got[0].data, /^r\d+ finished in \d+ ms \(1 tool call\)$/);

  await c.request('logging/setLevel', { level: 'debug' });
  await run(c, 'result = 1');
  got = takeLogMessages(c);
  assert.deepEqual(got.map((m) => m.level), ['debug', 'info'], JSON.stringify(got));
  assert.match(got[0].data, /^r\d+ sent to worker 0$/);
  assert.match(got[1].data, /\(0 tool calls\)$/);

  await c.request('logging/setLevel', { level: 'warning' });
  r = await run(c, 'import time\ntime.sleep(10)', { timeout_ms: 300 });
  assert.equal(r.structuredContent.error_kind, 'timeout', JSON.stringify(r));
  await run(c, 'result = 2'); // info only: nothing at warning
  got = takeLogMessages(c);
  assert.deepEqual(got.map((m) => m.level), ['warning', 'warning'], JSON.stringify(got));
  assert.match(got[0].data, /timed out after 300 ms: interrupting it/);
  assert.match(got[1].data, /^r\d+ failed after \d+ ms \(timeout\)$/);
  assert.deepEqual(c.nonJson, []);
});

test('a worker killed between dispatch and its first tool call: the run fails clearly, nothing reaches the upstream, the next run works', { timeout: ms(60000) }, async () => {
  const dir = tempDir();
  const log = path.join(dir, 'fake.log');
  const c = new RawClient({ config: writeConfig(dir, { fake: servers.fake(['--log-file', log]) }) });
  await c.initialize();
  await c.request('logging/setLevel', { level: 'debug' });
  await run(c, 'result = 0'); // the worker is up
  // Every worker process: the session's and any warm spare (which one is the session's is not
  // visible from outside a sandbox); all of them are killed. Not the prototype they are
  // forked from (it runs no session's code and outlives them).
  const isProto = (p) => prototypeChain(c.pid).some((x) => x.pid === p);
  const beforeProcs = workerProcs(c.pid).filter((p) => !isProto(p.pid));
  const before = beforeProcs.map((p) => p.pid);
  const beforeIds = beforeProcs.map((p) => `${p.pid}:${p.start}`);
  assert.ok(before.length, 'no worker process');
  takeLogMessages(c);

  const id = runRequest(c, 'import time\ntime.sleep(5)\nresult = fake_echo(text="too late")');
  const sent = await c.next(
    (m) => m.method === 'notifications/message' && /sent to worker/.test(m.params.data),
    ms(10000),
    'the run being dispatched',
  );
  assert.match(sent.params.data, /^r\d+ sent to worker 0$/);
  for (const pid of before) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch (e) {
      if (e.code !== 'ESRCH') throw e; // ended with its session's PID 1, killed just before
    }
  }
  const r = (await c.response(id, ms(15000))).result;
  assert.equal(r.isError, true, JSON.stringify(r));
  assert.equal(r.structuredContent.error_kind, 'worker', JSON.stringify(r));
  // Which the gateway notices first, the closed connection or the reaped process, is a race.
  assert.match(r.structuredContent.error, /crashed \(signal 9\)|lost its control connection/);
  assert.match(r.structuredContent.error, /restarted and this session's variables were lost/);

  const again = await run(c, 'result = fake_echo(text="after")');
  assert.equal(again.isError, false, JSON.stringify(again));
  assert.match(JSON.stringify(again.structuredContent.result), /after/);
  // A killed session's PID 1 lingers while the kernel tears its PID namespace down.
  const seen = new Set(beforeIds);
  const fresh = () => workerProcs(c.pid).filter((p) => !isProto(p.pid)).map((p) => `${p.pid}:${p.start}`);
  await waitFor(() => fresh().every((p) => !seen.has(p)), ms(5000));
  const now = fresh();
  assert.ok(now.length && now.every((p) => !seen.has(p)), `expected fresh workers, have ${now} (were ${beforeIds})`);
  const calls = readFakeLog(log).filter((m) => m.method === 'tools/call').map((m) => m.params.arguments?.text);
  assert.deepEqual(calls, ['after'], 'the killed run must not have reached the upstream');
});


test('a cancel that arrives while the worker reloads its SDK stops the run before it starts; the worker and the session survive', { timeout: ms(60000) }, async () => {
  const dir = tempDir();
  const c = new RawClient({ config: writeConfig(dir, { grow: growingServer(dir) }) });
  await c.initialize();
  await c.request('tools/list', {}, { limit: ms(30000) }); // so the session hears list_changed
  const first = await run(c, 'x = 1\nresult = grow_grow(n=1500)');
  assert.equal(first.isError, false, JSON.stringify(first));

  // The catalog changed: the gateway sent load_sdk (1500 new functions) to the worker in the
  // same step as this notification. A run sent now queues behind the reload, and its cancel
  // reaches the worker before the run starts.
  await c.next((m) => m.method === 'notifications/tools/list_changed', ms(15000), 'tools/list_changed');
  const id = runRequest(c, 'import time\ntime.sleep(5)\nx = 99');
  c.notify('notifications/cancelled', { requestId: id, reason: 'changed my mind' });

  // x is still 1: the cancelled run never ran and the worker (with the session's namespace)
  // was not restarted. (The list_changed above may be an earlier catalog change, e.g. a learned
  // result shape; the 1500 new functions arrive with a reload soon after, so poll for them.)
  const after = await run(c, 'result = x');
  assert.equal(after.isError, false, JSON.stringify(after));
  assert.equal(after.structuredContent.result, 1, 'the cancelled run ran, or the worker was restarted');
  const loaded = await waitFor(async () => (await run(c, "result = [x, 'grow_extra1500' in dir()]")).structuredContent.result?.[1], ms(15000), 200);
  assert.ok(loaded, 'the reload was lost');
  const answered = c.messages.filter((m) => m.id === id);
  assert.deepEqual(answered, [], 'a cancelled request must not be answered');
  assert.deepEqual(c.nonJson, []);
});
