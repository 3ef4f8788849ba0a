// The loop's descriptor set (src/core/loop.c): every raw descriptor the gateway watches
// (its stdio, each stdio upstream's three pipes, the worker's output pipes, the signalfd) sits
// in one epoll set of its own, and lws's poll() sees only that set's descriptor instead of one
// entry each (it scanned ~14 per wake-up). Read from /proc: the set holds the gateway's ends
// of an upstream's stdin, stdout and stderr; after the upstream crashes and is started again
// the old ends have left the set, the new ones are in it and the set has its old size (nothing
// leaked, nothing missing); 50 concurrent calls sum right before and after. And lws reads 64 KiB
// per round: the frames of 50 concurrent calls reach the upstream in a write or a few.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

import {
  codemcpCommand, codemcpEnv, connectClient, ms, servers, tempDir, waitFor, writeConfig,
} from './lib.mjs';

const link = (p) => { try { return fs.readlinkSync(p); } catch { return null; } };

// fd number -> link target of every descriptor of pid.
/** execute_python on h, with a generous timeout. */
const runner = (h, timeout) => (code) => h.client.callTool({ name: 'execute_python',
  arguments: { code } }, undefined, { timeout: ms(timeout) });
/** The first successful answer to code while the upstreams start (null after `wait` ms). */
const firstOk = (run, code, wait) => waitFor(async () => {
  const r = await run(code);
  return r.isError ? null : r;
}, ms(wait), 200);

function fds(pid) {
  const out = new Map();
  for (const n of fs.readdirSync(`/proc/${pid}/fd`)) out.set(Number(n), link(`/proc/${pid}/fd/${n}`));
  return out;
}

// The descriptors in each epoll set of pid: [{fd, watched: Set of fd numbers}].
function epollSets(pid) {
  const sets = [];
  for (const [fd, target] of fds(pid)) {
    if (target !== 'anon_inode:[eventpoll]') continue;
    const info = fs.readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8');
    sets.push({ fd, watched: new Set([...info.matchAll(/^tfd:\s+(\d+)/gm)].map((m) => Number(m[1]))) });
  }
  return sets;
}

// The gateway's descriptors on the pipes that are the upstream's fds 0, 1 and 2.
function upstreamEnds(gw, upPid) {
  const want = new Set([0, 1, 2].map((n) => link(`/proc/${upPid}/fd/${n}`)));
  return [...fds(gw)].filter(([, t]) => t && t.startsWith('pipe:') && want.has(t)).map(([n]) => n);
}

test('raw descriptors sit in one epoll set; an upstream restart swaps its pipes in it', { timeout: ms(90000) }, async () => {
  const dir = tempDir('codemcp-loopfds-');
  const pidFile = path.join(dir, 'fake.pid');
  const config = writeConfig(dir, {
    everything: servers.everything(),
    fake: servers.fake(['--pid-file', pidFile, '--crash-on-call', 'boom']),
  });
  const h = await connectClient({ config });
  const run = runner(h, 60000);
  const CONC = 'ps = [everything_get_sum(a=i, b=1) for i in range(50)]\n' +
    'result = sum(int(str(p).split()[-1].rstrip(".")) for p in ps)';
  const sum = await firstOk(run, CONC, 30000);
  assert.equal(sum?.structuredContent?.result, 1275, JSON.stringify(sum));
  const echo = await waitFor(async () => {
    const r = await run('result = str(fake_echo(text="up"))');
    return !r.isError && /up/.test(r.structuredContent.result) ? r : null;
  }, ms(20000), 200);
  assert.ok(echo, 'the fake upstream never answered');

  const sets = epollSets(h.pid);
  assert.equal(sets.length, 1, `one epoll set in the gateway, found ${sets.length}`);
  const set = sets[0].watched;
  const pid1 = Number(fs.readFileSync(pidFile, 'utf8'));
  const ends1 = upstreamEnds(h.pid, pid1);
  assert.equal(ends1.length, 3, `the gateway's ends of the upstream's stdio: ${ends1}`);
  for (const fd of ends1) assert.ok(set.has(fd), `upstream pipe fd ${fd} is not in the set ${[...set]}`);
  for (const fd of set) assert.ok(fds(h.pid).has(fd), `the set watches fd ${fd}, which is not open`);
  const size1 = set.size;

  // The upstream dies; the gateway starts it again (after ~1 s).
  const boom = await run('try:\n    fake_boom().result()\n    result = "no error"\n' +
    'except ToolError as e:\n    result = e.kind');
  assert.equal(boom.structuredContent.result, 'transport');
  const back = await waitFor(async () => {
    const r = await run('result = str(fake_echo(text="back"))');
    return !r.isError && /back/.test(r.structuredContent.result) ? r : null;
  }, ms(30000), 200);
  assert.ok(back, 'the crashed upstream was not started again');
  const pid2 = Number(fs.readFileSync(pidFile, 'utf8'));
  assert.notEqual(pid2, pid1);

  const after = epollSets(h.pid);
  assert.equal(after.length, 1);
  const set2 = after[0].watched;
  const ends2 = upstreamEnds(h.pid, pid2);
  assert.equal(ends2.length, 3, `the gateway's ends of the new upstream's stdio: ${ends2}`);
  for (const fd of ends2) assert.ok(set2.has(fd), `new upstream pipe fd ${fd} is not in the set`);
  for (const fd of set2) assert.ok(fds(h.pid).has(fd), `the set watches fd ${fd}, which is not open`);
  assert.equal(set2.size, size1, `the set had ${size1} descriptors, now ${set2.size}`);
  const sum2 = await run(CONC);
  assert.equal(sum2.structuredContent?.result, 1275, JSON.stringify(sum2));
  await h.close();
});

// lws reads a socket into its service buffer, one read per poll round; at its default 4 KiB
// the ~20 kB of call frames a run of 50 concurrent calls sends at once took five rounds, and
// each round wrote the requests it had decoded to the upstream: five writes to its stdin
// instead of one. The loop sets 64 KiB. Counted from /proc/<pid>/io (syscw: the pipe writes;
// the worker's socket is not counted there): the fewest of five runs. Not under a wrapper
// (valgrind): a gateway that slow reads the frames as they trickle in, one round each (the
// old lws loop too: 69 writes).
test('the call frames of 50 concurrent calls reach the upstream in a write or a few, not one per 4 KiB', { timeout: ms(60000), skip: !!process.env.CODEMCP_WRAPPER }, async () => {
  const dir = tempDir('codemcp-loopfds-');
  const h = await connectClient({ config: writeConfig(dir, { fake: servers.fake() }),
    env: { CODEMCP_LOG_LEVEL: 'error' } });
  const run = runner(h, 30000);
  const CONC = 'ps = [fake_echo(text="y" * 300 + str(i)) for i in range(50)]\n' +
    'result = sum(len(str(p)) for p in ps)';
  const first = await firstOk(run, CONC, 20000);
  assert.ok(first && first.structuredContent.result > 15000, JSON.stringify(first));
  const syscw = () => Number(fs.readFileSync(`/proc/${h.pid}/io`, 'utf8').match(/syscw: (\d+)/)[1]);
  let best = Infinity;
  for (let i = 0; i < 5; i++) {
    const before = syscw();
    const r = await run(CONC);
    assert.ok(r.structuredContent.result > 15000);
    best = Math.min(best, syscw() - before);
  }
  // one to the client, one to three to the upstream (4 KiB reads: 8)
  assert.ok(best <= 4, `a run of 50 concurrent calls took ${best} pipe writes in the gateway`);
  await h.close();
});

// epoll refuses regular files (EPERM), which poll() calls always ready: stdin read from a file
// and stdout written to one are serviced once per round instead, as lws's poll() serviced them.
test('stdin from a file and stdout to a file still work (epoll refuses regular files)', { timeout: ms(30000) }, () => {
  const dir = tempDir('codemcp-loopfds-');
  const reqs = path.join(dir, 'requests.jsonl');
  const out = path.join(dir, 'out.jsonl');
  fs.writeFileSync(reqs, [
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18',
      capabilities: {}, clientInfo: { name: 'file', version: '0' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'ping' },
  ].map((m) => JSON.stringify(m)).join('\n') + '\n');
  const [cmd, args] = codemcpCommand([]);
  const inFd = fs.openSync(reqs, 'r'), outFd = fs.openSync(out, 'w');
  const r = spawnSync(cmd, args, { env: codemcpEnv({ config: writeConfig(dir, {}) }),
    stdio: [inFd, outFd, 'pipe'], timeout: ms(20000) });
  fs.closeSync(inFd);
  fs.closeSync(outFd);
  assert.equal(r.status, 0, `exit ${r.status} ${r.signal}: ${String(r.stderr).slice(-500)}`);
  const lines = fs.readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((m) => m.id), [1, 2], JSON.stringify(lines));
  assert.equal(lines[0].result.protocolVersion, '2025-06-18');
  assert.deepEqual(lines[1].result, {});
});

// The stdio gateway has no lws context at all (nothing asks for one: the control link is
// src/wire/wsserver.c on the loop's descriptors): its one thread of events sleeps in epoll_wait on
// the set, never in lws's poll(). Read from /proc/<pid>/task/<pid>/syscall while it idles
// (the first field is the number of the system call it is blocked in).
const WAITS = process.arch === 'x64' ? { 232: 'epoll_wait', 281: 'epoll_pwait', 7: 'poll', 271: 'ppoll' }
  : process.arch === 'arm64' ? { 22: 'epoll_pwait', 73: 'ppoll' } : null;
test('the idle stdio gateway sleeps in epoll_wait on its set, not in lws\'s poll()', { timeout: ms(60000), skip: !WAITS || !!process.env.CODEMCP_WRAPPER }, async () => {
  const dir = tempDir('codemcp-loopfds-');
  const h = await connectClient({ config: writeConfig(dir, { fake: servers.fake() }) });
  const run = runner(h, 30000);
  const r = await firstOk(run, 'result = str(fake_echo(text="idle"))', 20000);
  assert.ok(r, 'no answer');
  const seen = new Map();
  for (let i = 0; i < 40 && seen.size < 1; i++) {
    await new Promise((res) => setTimeout(res, 50));
    const f = fs.readFileSync(`/proc/${h.pid}/task/${h.pid}/syscall`, 'utf8').trim().split(' ')[0];
    if (/^\d+$/.test(f)) seen.set(WAITS[f] || `syscall ${f}`, (seen.get(WAITS[f]) || 0) + 1);
  }
  const waits = [...seen.keys()];
  assert.ok(waits.length, 'the gateway was never seen blocked');
  assert.ok(waits.every((w) => /^epoll_p?wait$/.test(w)), `the idle gateway blocks in ${waits.join(', ')}`);
  // and the worker's control link still works
  const again = await run('result = str(fake_echo(text="after"))');
  assert.match(again.structuredContent.result, /after/);
  await h.close();
});
