// Shutdown: EOF on stdin ends codemcp cleanly with exit 0 within a few seconds, every upstream
// it started is gone (stdin close → SIGTERM → SIGKILL), and no child is left a zombie.
// Covers end of input on stdio and the shutdown of stdio upstreams.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import {
  CODEMCP_BIN,
  RawClient,
  describeProcs,
  ms,
  pidAlive,
  readPidFile,
  servers,
  sleep,
  survivors,
  tempDir,
  waitFor,
  waitNoZombies,
  writeConfig,
} from './lib.mjs';

/** Closes stdin and asserts: exit code 0 within `limit`, and nothing it started survives. */
async function assertCleanExit(c, limit, what) {
  c.closeStdin();
  const t0 = Date.now();
  const ex = await c.waitExit(limit).catch((e) => {
    throw new Error(`${what}: ${e.message}; stderr:\n${c.stderrTail()}`);
  });
  const took = Date.now() - t0;
  assert.equal(ex.code, 0, `${what}: exit code ${ex.code}, signal ${ex.signal}; stderr:\n${c.stderrTail()}`);
  // codemcp reaps its children before it exits; allow a moment for /proc to catch up.
  const gone = await waitFor(() => survivors(c.seen).length === 0, 1000);
  assert.ok(gone, `${what}: left behind ${describeProcs(survivors(c.seen))}`);
  assert.deepEqual(c.nonJson, [], 'stdout must carry only JSON-RPC messages');
  return took;
}

test('EOF before initialize: exit 0 at once', async () => {
  const c = new RawClient({ home: tempDir('codemcp-noconf-') });
  await assertCleanExit(c, ms(3000), 'EOF before initialize');
});

test('EOF after a session with no upstreams: exit 0', async () => {
  const c = new RawClient({ home: tempDir('codemcp-noconf-') });
  await c.initialize();
  await c.request('tools/list', {}, { limit: ms(10000) });
  await assertCleanExit(c, ms(3000), 'EOF after a session');
});

test('EOF with live upstreams: exit 0 within a few seconds, all upstreams gone, no zombies', { timeout: ms(90000) }, async () => {
  const dir = tempDir();
  const pidFile = path.join(dir, 'fake.pid');
  const cfg = writeConfig(dir, {
    everything: servers.everything(),
    memory: servers.memory(path.join(dir, 'memory.jsonl')),
    filesystem: servers.filesystem(dir),
    fake: servers.fake(['--pid-file', pidFile]),
    exits_at_once: servers.fake(['--exit-at-once']),
  });
  const c = new RawClient({ config: cfg });
  await c.initialize();
  const list = await c.request('tools/list', {}, { limit: ms(30000) });
  assert.ok(list.result, JSON.stringify(list));
  const running = c.snapshot().filter((p) => p.state !== 'Z');
  assert.ok(running.length >= 4, `expected at least 4 live upstream processes, saw ${describeProcs(running)}`);
  const z = await waitNoZombies(c.pid);
  assert.deepEqual(z, [], `zombie children while serving: ${describeProcs(z)}`);
  const fakePid = readPidFile(pidFile);
  assert.ok(fakePid > 0 && pidAlive(fakePid), 'the fake upstream is not running');

  const took = await assertCleanExit(c, ms(10000), 'EOF with live upstreams');
  assert.ok(took < ms(5000), `shutdown took ${took} ms`);
  assert.ok(!pidAlive(fakePid), 'the fake upstream survived');
});

test('an upstream that ignores EOF and SIGTERM is killed; codemcp still exits 0', { timeout: ms(60000) }, async () => {
  const dir = tempDir();
  const pidFile = path.join(dir, 'stubborn.pid');
  const cfg = writeConfig(dir, { stubborn: servers.fake(['--stubborn', '--pid-file', pidFile]) });
  const c = new RawClient({ config: cfg });
  await c.initialize();
  await c.request('tools/list', {}, { limit: ms(15000) });
  const pid = readPidFile(pidFile);
  assert.ok(pid > 0 && pidAlive(pid), 'stubborn upstream not running');
  await assertCleanExit(c, ms(20000), 'EOF with a stubborn upstream');
  assert.ok(!pidAlive(pid), `stubborn upstream ${pid} survived`);
});

test('EOF while the first answer and tools/list wait for a silent upstream: exit promptly', { timeout: ms(60000) }, async () => {
  const dir = tempDir();
  const pidFile = path.join(dir, 'silent.pid');
  // Default upstream timeout (30 s): shutdown must not wait for it.
  const cfg = writeConfig(dir, { silent: servers.fake(['--never-initialize', '--pid-file', pidFile]) });
  const c = new RawClient({ config: cfg });
  // The first answer itself waits for the silent upstream (the list wait is long here): both
  // requests are held when stdin closes.
  c.send({ jsonrpc: '2.0', id: 'held-init', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'eof', version: '0' } } });
  c.send({ jsonrpc: '2.0', id: 'pending-list', method: 'tools/list', params: {} });
  await waitFor(() => readPidFile(pidFile) > 0, ms(5000));
  await sleep(200);
  const took = await assertCleanExit(c, ms(10000), 'EOF during a pending tools/list');
  assert.ok(took < ms(5000), `shutdown waited ${took} ms for a silent upstream`);
  const pid = readPidFile(pidFile);
  assert.ok(pid > 0 && !pidAlive(pid), `silent upstream ${pid} survived`);
});

test('EOF right after initialize, while upstreams are still starting: exit 0, nothing left', { timeout: ms(60000) }, async () => {
  const dir = tempDir();
  const cfg = writeConfig(dir, {
    everything: servers.everything(),
    memory: servers.memory(path.join(dir, 'memory.jsonl')),
  });
  const c = new RawClient({ config: cfg });
  await c.initialize();
  c.snapshot();
  await assertCleanExit(c, ms(10000), 'EOF during upstream start-up');
});

// A client that never stops writing (stdin from /dev/zero: one endless line of NUL bytes, a
// descriptor epoll refuses, always ready) must not keep codemcp from ending on SIGTERM: at
// shutdown it delivered everything a closed descriptor still held, and this one never ends
// (it read /dev/zero forever). Fails on the unbounded drain.
test('stdin that never ends (/dev/zero): SIGTERM still ends codemcp', { timeout: ms(60000) }, async () => {
  const zero = fs.openSync('/dev/zero', 'r');
  const p = spawn(CODEMCP_BIN, ['--config', '/dev/null'], { stdio: [zero, 'ignore', 'ignore'],
    env: { ...process.env, HOME: tempDir('codemcp-zero-') } });
  fs.closeSync(zero);
  const exited = new Promise((res) => p.on('exit', (code, signal) => res({ code, signal })));
  await sleep(1000);
  p.kill('SIGTERM');
  const r = await Promise.race([exited, sleep(ms(10000)).then(() => null)]);
  if (!r) p.kill('SIGKILL');
  assert.ok(r, 'codemcp was still running 10 s after SIGTERM');
  assert.equal(r.signal, null, `ended by signal ${r.signal}`);
});
