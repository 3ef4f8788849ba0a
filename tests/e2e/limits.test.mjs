// Bounded connections: 1000 idle control connections and 1000 slowloris HTTP
// connections (loopback and a Unix socket only, bounded loops) neither exhaust the gateway's
// descriptors nor keep a legitimate client from its answer, and the log stays small.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { Client, PYTHON, Proc, TESTS, ms, servers, sleep, tempDir, waitFor, writeConfig } from './lib.mjs';

const FLOOD = path.join(TESTS, 'fixtures', 'flood.py');
const TOKEN = 'limits-e2e-token-0123456789';

function flood(args) {
  return new Promise((resolve, reject) => {
    const p = spawn(PYTHON, [FLOOD, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('error', reject);
    p.on('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`flood.py ${args.join(' ')}: ${code} ${err}`))));
  });
}

/** CPU time (user + system, ms) of a process so far. */
function cpuMs(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime, stime in USER_HZ (100)
}

function openFds(pid) {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return -1;
  }
}

/** Connects, waits `delay` ms, then sends an initialize; resolves {status, ms} (status 0: the
 *  connection was closed without an answer). */
async function lateSpeaker(u, delay) {
  const { connect } = await import('node:net');
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'late', version: '0' } } });
  const req = `POST /mcp HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\n` +
    `Accept: application/json, text/event-stream\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
  return new Promise((resolve) => {
    const t0 = Date.now();
    let got = '';
    const s = connect(Number(u.port), u.hostname, () => setTimeout(() => s.write(req), delay));
    s.setEncoding('utf8');
    s.on('data', (d) => (got += d));
    s.on('error', () => {});
    s.on('close', () => resolve({ status: Number(got.match(/^HTTP\/1\.1 (\d+)/)?.[1] || 0), ms: Date.now() - t0 }));
  });
}

async function sdk(url) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } });
  const client = new Client({ name: 'limits-e2e', version: '0' });
  await client.connect(transport, { timeout: ms(30000) });
  return client;
}

test('1000 idle control connections and 1000 slow HTTP connections: a normal client still gets answers', async () => {
  const home = tempDir('codemcp-limits-');
  const runtime = tempDir('codemcp-limits-run-');
  const gw = new Proc({
    args: ['start', '-p', '0'],
    config: writeConfig(home, { everything: servers.everything() }),
    home,
    // The control listener exists only when asked for (host isolation; sandboxed workers use
    // a socketpair): that is what is flooded here.
    // All peers here are 127.0.0.1: the legitimate clients share the flood's per-peer pending
    // pool, with the default limits (the victim choice spares young connections).
    env: { CODEMCP_HTTP_TOKEN: TOKEN, XDG_RUNTIME_DIR: runtime, CODEMCP_WORKERS: '1', CODEMCP_LOG: 'warn', CODEMCP_ISOLATION: 'host', CODEMCP_CONTROL_UNIX: '1' },
    // The usual default soft limit, whatever this machine's is: codemcp raises it to the hard
    // limit itself (the old gateway ran out of its 1024 descriptors).
    wrapPrefix: ['prlimit', '--nofile=1024:', '--'],
  });
  const m = await waitFor(() => gw.exit || gw.stderr.match(/serving MCP over Streamable HTTP at (\S+)/), ms(20000));
  assert.ok(m && m[1], gw.stderrTail());
  const url = m[1];
  const ctl = await waitFor(() => {
    const d = fs.readdirSync(runtime).find((n) => n.startsWith(`codemcp-${gw.pid}-`));
    return d && fs.existsSync(path.join(runtime, d, 'ctl.sock')) ? path.join(runtime, d, 'ctl.sock') : null;
  }, ms(10000));
  assert.ok(ctl, 'no control socket');
  const first = await sdk(url);
  const warm = await first.callTool({ name: 'execute_python', arguments: { code: 'x = 20\nresult = x' } }, undefined, { timeout: ms(60000) });
  assert.equal(warm.structuredContent.result, 20);
  const logBefore = gw.stderr.length;

  const u = new URL(url);
  const hold = 8;
  const floods = Promise.all([
    flood(['--unix', ctl, '-n', '1000', '--mode', 'idle', '--hold', String(hold), '--reopen', '--reopen-max', '100000', '--reopen-rate', '400']),
    flood(['--tcp', `${u.hostname}:${u.port}`, '-n', '1000', '--mode', 'slow', '--hold', String(hold), '--reopen', '--reopen-max', '100000', '--reopen-rate', '400']),
  ]);
  // lws accepts the whole backlog in one round; each accept over a limit closes the oldest
  // pending connection at once, so even the first burst stays bounded.
  let peakFds = 0;
  let maxFds = 0;
  const burst = setInterval(() => (peakFds = Math.max(peakFds, openFds(gw.pid))), 50);
  let sampler;
  try {
  await sleep(1500); // the floods are at full strength
  sampler = setInterval(() => (maxFds = Math.max(maxFds, openFds(gw.pid))), 100);

  // A new client (new connections, new session) and the old session, during the flood.
  const t0 = Date.now();
  const client = await sdk(url);
  const tools = await client.listTools(undefined, { timeout: ms(30000) });
  const tList = Date.now() - t0;
  assert.ok(tools.tools.some((t) => t.name === 'execute_python'));
  // Clients that connect and only then take a while to send (a loaded machine, a slow
  // client): each is answered, not closed to make room for the flood's new connections.
  const late = await Promise.all([100, 300, 500, 700].map((d) => lateSpeaker(u, d)));
  const t1 = Date.now();
  const r = await first.callTool({ name: 'execute_python', arguments: { code: 'result = x + 1' } }, undefined, { timeout: ms(30000) });
  const tRun = Date.now() - t1;
  assert.equal(r.structuredContent.result, 21, JSON.stringify(r));
  // The worker dies and its replacement must get through the flood to the control socket.
  const crash = await first.callTool({ name: 'execute_python', arguments: { code: 'import os, signal\nos.kill(os.getpid(), signal.SIGKILL)' } }, undefined, { timeout: ms(30000) });
  assert.match(JSON.stringify(crash), /crashed|restarted/, JSON.stringify(crash));
  const t2 = Date.now();
  const again = await first.callTool({ name: 'execute_python', arguments: { code: 'result = 7' } }, undefined, { timeout: ms(30000) });
  const tRespawn = Date.now() - t2;
  assert.equal(again.structuredContent.result, 7, JSON.stringify(again));
  console.log(`# during the flood: connect+tools/list ${tList} ms, execute_python ${tRun} ms, after a worker restart ${tRespawn} ms; late speakers ${JSON.stringify(late)}`);
  for (const [i, l] of late.entries()) assert.equal(l.status, 200, `a client that sent its request ${[100, 300, 500, 700][i]} ms after connecting: ${JSON.stringify(l)}`);
  // Generous bounds (behaviour, not speed): the old gateway stalled for 18 s or more.
  assert.ok(tList < ms(8000), `tools/list took ${tList} ms during the flood`);
  assert.ok(tRun < ms(8000), `execute_python took ${tRun} ms during the flood`);

  const [c, h] = await floods;
  clearInterval(sampler);
  clearInterval(burst);
  console.log(`# control flood ${JSON.stringify(c)}; http flood ${JSON.stringify(h)}; gateway fds: burst peak ${peakFds}, then at most ${maxFds}`);
  // The gateway closed what it would not keep, so the floods never held 1000 open each.
  assert.ok(c.closed_by_server >= 1000, `control connections closed by codemcp: ${JSON.stringify(c)}`);
  assert.ok(h.closed_by_server >= 1000, `HTTP connections closed by codemcp: ${JSON.stringify(h)}`);
  // /proc/<pid>/fd of a non-dumpable process is readable by root only (CI runs as root).
  if (maxFds > 0) {
    // One peer holds at most CODEMCP_HTTP_MAX_CONN_PER_PEER (512) HTTP connections and the
    // control listener 8 pending ones, plus the gateway's own descriptors.
    assert.ok(peakFds < 512 + 8 + 150, `the gateway held ${peakFds} descriptors at the start of the flood`);
    assert.ok(maxFds < 512 + 8 + 150, `the gateway held ${maxFds} descriptors under a sustained flood`);
  }
  // The log says a limit was hit, in a few lines, not one per connection.
  const log = gw.stderr.slice(logBefore);
  assert.match(log, /\[control\] limit hit/);
  assert.match(log, /\[http\] limit hit/);
  assert.ok(log.length < 8000, `the log grew by ${log.length} bytes during the flood:\n${log.slice(0, 2000)}`);
  await client.close();
  await first.close();
  } finally {
    // A failed assertion must not leave timers running (the file would hang to its timeout).
    clearInterval(sampler);
    clearInterval(burst);
    await gw.kill();
    await floods.catch(() => {});
  }
});

test('out of descriptors: no busy loop, accept failures logged once with a count, served again after', async () => {
  // Hard limit = soft limit, so codemcp cannot raise it: the flood does run it out of fds.
  const home = tempDir('codemcp-limits-');
  const runtime = tempDir('codemcp-limits-run-');
  const gw = new Proc({
    args: ['start', '-p', '0'],
    config: writeConfig(home, {}),
    home,
    // Both listeners that accept: the HTTP front and the control listener (asked for here).
    env: { CODEMCP_HTTP_TOKEN: TOKEN, CODEMCP_WORKERS: '1', CODEMCP_LOG: 'warn', CODEMCP_HTTP_MAX_PENDING_PER_PEER: '1000', CODEMCP_HTTP_MAX_PENDING: '1000', CODEMCP_ISOLATION: 'host', CODEMCP_CONTROL_UNIX: '1', CODEMCP_CONTROL_MAX_PENDING: '1000', XDG_RUNTIME_DIR: runtime },
    wrapPrefix: ['prlimit', '--nofile=96:96', '--'],
  });
  const m = await waitFor(() => gw.exit || gw.stderr.match(/serving MCP over Streamable HTTP at (\S+)/), ms(20000));
  assert.ok(m && m[1], gw.stderrTail());
  const u = new URL(m[1]);
  const ctl = await waitFor(() => {
    const d = fs.readdirSync(runtime).find((n) => n.startsWith(`codemcp-${gw.pid}-`));
    return d && fs.existsSync(path.join(runtime, d, 'ctl.sock')) ? path.join(runtime, d, 'ctl.sock') : null;
  }, ms(10000));
  assert.ok(ctl, 'no control socket');
  const before = gw.stderr.length;
  const cpu0 = cpuMs(gw.pid);
  const wall0 = Date.now();
  const [stats, ctlStats] = await Promise.all([
    flood(['--tcp', `${u.hostname}:${u.port}`, '-n', '300', '--mode', 'idle', '--hold', '3']),
    flood(['--unix', ctl, '-n', '300', '--mode', 'idle', '--hold', '3']),
  ]);
  console.log(`# control flood ${JSON.stringify(ctlStats)}`);
  const cpu = cpuMs(gw.pid) - cpu0, wall = Date.now() - wall0;
  const log = gw.stderr.slice(before);
  // lws 4.1 leaves the listener readable after EMFILE: without a remedy the loop spins (a
  // whole core for as long as the flood holds its connections).
  console.log(`# out of descriptors: gateway CPU ${cpu} ms over ${wall} ms`);
  assert.ok(cpu < Math.max(400, wall * 0.12), `the gateway used ${cpu} ms of CPU in ${wall} ms while out of descriptors`);
  assert.match(log, /out of descriptors: \d+ new connections? closed unserved/);
  const lines = log.split('\n').filter((l) => /accept/.test(l));
  console.log(`# flood ${JSON.stringify(stats)}; accept lines: ${lines.length}; log ${log.length} bytes`);
  assert.match(log, /accept failed: Too many open files \(errno 24; repeats are counted\)/, log.slice(0, 2000));
  assert.ok(lines.length <= 3, `accept failures logged ${lines.length} times:\n${lines.slice(0, 5).join('\n')}`);
  assert.ok(log.length < 4000, `the log grew by ${log.length} bytes`);
  // Once the flood is gone, the gateway serves again.
  const ok = await waitFor(async () => {
    try {
      const c = await sdk(m[1]);
      await c.close();
      return true;
    } catch {
      return false;
    }
  }, ms(15000), 500);
  assert.ok(ok, 'codemcp does not answer after the flood');
  await gw.kill();
});

test('deadlines: unfinished headers and bodies are closed; the close is logged', async () => {
  const home = tempDir('codemcp-limits-');
  const gw = new Proc({
    args: ['start', '-p', '0'],
    config: writeConfig(home, {}),
    home,
    env: { CODEMCP_HTTP_TOKEN: TOKEN, CODEMCP_WORKERS: '1', CODEMCP_LOG: 'warn', CODEMCP_HTTP_HEADER_TIMEOUT_MS: '1000', CODEMCP_HTTP_BODY_TIMEOUT_MS: '1500', CODEMCP_ISOLATION: 'host' },
  });
  const m = await waitFor(() => gw.exit || gw.stderr.match(/serving MCP over Streamable HTTP at (\S+)/), ms(20000));
  assert.ok(m && m[1], gw.stderrTail());
  const u = new URL(m[1]);
  const { connect } = await import('node:net');
  const open = (text) => new Promise((resolve) => {
    const s = connect(Number(u.port), u.hostname, () => s.write(text));
    const t0 = Date.now();
    s.on('error', () => {});
    s.on('close', () => resolve(Date.now() - t0));
  });
  const [headers, body] = await Promise.all([
    open('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a'),
    open(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\n` +
      'Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{"jsonrpc"'),
  ]);
  console.log(`# closed after: headers ${headers} ms, body ${body} ms`);
  assert.ok(headers >= 900 && headers < ms(5000), `unfinished headers closed after ${headers} ms`);
  assert.ok(body >= 1400 && body < ms(6000), `unfinished body closed after ${body} ms`);
  assert.match(gw.stderr, /\[http\] limit hit: closing a connection from 127\.0\.0\.1 \(past their deadline\)/);
  await gw.kill();
});
