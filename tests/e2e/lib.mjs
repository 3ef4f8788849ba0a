// lib.mjs — harness for codemcp's end-to-end tests (node --test).
//
// Owns: where things are (binary, fixtures, npm peers), temp dirs and mcp.json files, spawning
// the real codemcp binary (through the official SDK client or a raw line client), a /proc
// process-tree reader for zombie and leftover checks, and cleanup that always kills what a
// test started. It never fakes codemcp behaviour: every assertion is about the real binary.
//
// Environment:
//   CODEMCP_BIN           gateway binary (meson sets it; default <repo>/build/src/codemcp)
//   CODEMCP_WORKER_BIN    worker binary, passed through to codemcp when set
//   CODEMCP_WRAPPER       command prefix for codemcp, e.g. "valgrind --error-exitcode=99 -q"
//   CODEMCP_TEST_TIME_FACTOR  multiplies every timeout here (slow builds: asan, valgrind)
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, afterEach, before } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export { Client, StdioClientTransport };

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(here, '..', '..');
export const TESTS = path.join(REPO, 'tests');
export const NODE = process.execPath;
export const PYTHON = '/usr/bin/python3';
export const FAKE_UPSTREAM = path.join(TESTS, 'fixtures', 'fake_upstream.py');
export const NPM_PEERS = path.join(TESTS, 'node_modules', '@modelcontextprotocol');
// Resolved against the caller's cwd: codemcp itself runs with cwd = the repository root.
export const CODEMCP_BIN = process.env.CODEMCP_BIN
  ? path.resolve(process.env.CODEMCP_BIN)
  : path.join(REPO, 'build', 'src', 'codemcp');
export const TIME_FACTOR = Math.max(1, Number(process.env.CODEMCP_TEST_TIME_FACTOR) || 1);

/** Scales a timeout (ms) for slow builds. */
export function ms(n) {
  return Math.round(n * TIME_FACTOR);
}

export function sleep(n) {
  return new Promise((resolve) => setTimeout(resolve, n));
}

/** Rejects after `limit` ms with a message naming what was awaited. */
export function withTimeout(promise, limit, what) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${limit} ms waiting for ${what}`)), limit);
  });
  return Promise.race([promise, t]).finally(() => clearTimeout(timer));
}

/** Polls `fn` until it returns a truthy value or `limit` ms pass; returns the last value. */
export async function waitFor(fn, limit, step = 50) {
  const end = Date.now() + limit;
  for (;;) {
    const v = await fn();
    if (v || Date.now() >= end) return v;
    await sleep(step);
  }
}

// ---------------------------------------------------------------------------------------------
// Cleanup: every process and temp dir a test creates is registered here and removed after
// that test (root-level afterEach also runs after each subtest and `it`), even when it failed
// or timed out. Things created with {shared: true} (e.g. in a describe's `before`) live until
// the end of the file instead.

const cleanups = [];
const fileCleanups = [];

export function onCleanup(fn, shared = false) {
  (shared ? fileCleanups : cleanups).push(fn);
}

// Set by cleanups that found a real problem (valgrind errors in a codemcp run); reported by
// failing the hook, after everything was cleaned up.
const cleanupProblems = [];

async function runCleanups(list) {
  while (list.length) {
    const fn = list.pop();
    try {
      await fn();
    } catch {
      // cleanup must not mask the test's own failure
    }
  }
  if (cleanupProblems.length) {
    const msg = cleanupProblems.splice(0).join('\n');
    throw new Error(msg);
  }
}

/** Under CODEMCP_WRAPPER=valgrind --error-exitcode=99, exit code 99 means memory errors. */
function checkWrapperExit(code, stderr) {
  if (process.env.CODEMCP_WRAPPER && code === 99) {
    cleanupProblems.push(`codemcp under ${process.env.CODEMCP_WRAPPER} exited 99 (errors):\n${stderr.slice(-4000)}`);
  }
}

export async function cleanupAll() {
  await runCleanups(cleanups);
  await runCleanups(fileCleanups);
}

afterEach(() => runCleanups(cleanups));
after(cleanupAll);

// Last resort if the runner exits without running `after` hooks (e.g. a hard timeout).
const liveProcs = new Set();
process.on('exit', () => {
  for (const p of liveProcs) killTree(p.pid, p.seen);
});

/** SIGKILLs pid, its process group when it leads one, and every pid in `seen` still alive. */
function killTree(pid, seen = new Map()) {
  const snap = processTable();
  for (const d of descendantsIn(snap, pid)) seen.set(d.pid, d.start);
  for (const [p, start] of seen) {
    const cur = snap.get(p);
    if (cur && cur.start === start) tryKill(p, 'SIGKILL');
  }
  if (pid) tryKill(pid, 'SIGKILL');
}

function tryKill(pid, sig) {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

// ---------------------------------------------------------------------------------------------
// Temp dirs and config files.

export function tempDir(prefix = 'codemcp-e2e-', { shared = false } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }), shared);
  return dir;
}

export { freePort } from '../fixtures/free_port.mjs';

/** opencode-format entries for the real npm servers and the fake upstream. */
export const servers = {
  everything: (extra = {}) => ({
    type: 'local',
    command: [NODE, path.join(NPM_PEERS, 'server-everything', 'dist', 'index.js'), 'stdio'],
    ...extra,
  }),
  memory: (memoryFile, extra = {}) => ({
    type: 'local',
    command: [NODE, path.join(NPM_PEERS, 'server-memory', 'dist', 'index.js')],
    environment: { MEMORY_FILE_PATH: memoryFile },
    ...extra,
  }),
  filesystem: (allowedDir, extra = {}) => ({
    type: 'local',
    command: [NODE, path.join(NPM_PEERS, 'server-filesystem', 'dist', 'index.js'), allowedDir],
    ...extra,
  }),
  /** flags: argv for fake_upstream.py, e.g. ['--paginate', '2']. */
  fake: (flags = [], extra = {}) => ({
    type: 'local',
    command: [PYTHON, FAKE_UPSTREAM, ...flags],
    ...extra,
  }),
};

/** Writes {"mcp": servers} (opencode format) to dir/mcp.json; returns the path. */
export function writeConfig(dir, mcp, file = 'mcp.json') {
  const p = path.join(dir, file);
  fs.writeFileSync(p, JSON.stringify({ mcp }, null, 2));
  return p;
}

/** Writes {"mcpServers": servers} (Claude Desktop / Cursor format); returns the path. */
export function writeMcpServersConfig(dir, mcpServers, file = 'mcp.json') {
  const p = path.join(dir, file);
  fs.writeFileSync(p, JSON.stringify({ mcpServers }, null, 2));
  return p;
}

/** The environment codemcp runs with: isolated from the user's own config. */
export function codemcpEnv({ config, env = {}, home } = {}) {
  const base = { ...process.env };
  delete base.CODEMCP_CONFIG;
  delete base.CODEMCP_DUMP;
  delete base.CODEMCP_SMOKE;
  const xdg = home || tempDir('codemcp-xdg-', { shared: true });
  // Tests written before the description budget and the tools/list wait read the
  // full listing and expect the first tools/list to hold every server: they keep that unless
  // they pass their own values (tests/e2e/catalog.test.mjs tests the defaults).
  const out = {
    ...base,
    XDG_CONFIG_HOME: xdg,
    XDG_STATE_HOME: xdg,
    CODEMCP_DESCRIBE_BUDGET: 'full',
    CODEMCP_LIST_WAIT_MS: '120000',
  };
  if (config) out.CODEMCP_CONFIG = config;
  return { ...out, ...env };
}

/** [command, args] to start codemcp, honouring CODEMCP_WRAPPER. */
export function codemcpCommand(args = []) {
  const wrapper = (process.env.CODEMCP_WRAPPER || '').trim();
  if (!wrapper) return [CODEMCP_BIN, args];
  const w = wrapper.split(/\s+/);
  return [w[0], [...w.slice(1), CODEMCP_BIN, ...args]];
}

// ---------------------------------------------------------------------------------------------
// Spawning codemcp directly: a process with captured stdout/stderr and exit helpers.

export class Proc {
  /** opts: {args, config, env, home, cwd, shared, wrapPrefix} — see codemcpEnv; shared: keep
   *  it alive until the end of the file instead of the end of the current test; wrapPrefix:
   *  a command that execs codemcp (e.g. setpriv to run it as another user). */
  constructor(opts = {}) {
    let [cmd, args] = codemcpCommand(opts.args || []);
    if (opts.wrapPrefix) [cmd, args] = [opts.wrapPrefix[0], [...opts.wrapPrefix.slice(1), cmd, ...args]]; // e.g. setpriv
    this.startedAt = Date.now();
    this.child = spawn(cmd, args, {
      env: codemcpEnv(opts),
      cwd: opts.cwd || REPO,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.pid = this.child.pid;
    this.stdout = '';
    this.stderr = '';
    this.seen = new Map(); // descendants ever observed: pid -> start time
    this.exit = null; // {code, signal} once exited
    this.child.stdout.setEncoding('utf8');
    this.child.stderr.setEncoding('utf8');
    this.child.stdout.on('data', (d) => {
      this.stdout += d;
      this.onStdout?.();
    });
    this.child.stderr.on('data', (d) => (this.stderr += d));
    this.child.stdin.on('error', () => {}); // EPIPE when codemcp is already gone
    this.exited = new Promise((resolve) => {
      this.child.on('error', (err) => {
        this.exit = { code: null, signal: null, error: err };
        resolve(this.exit);
      });
      this.child.on('close', (code, signal) => {
        this.exit = { code, signal };
        liveProcs.delete(this);
        this.onStdout?.();
        resolve(this.exit);
      });
    });
    liveProcs.add(this);
    onCleanup(() => this.kill(), !!opts.shared);
  }

  /** Records the current descendants so leftovers can be found after exit. */
  snapshot() {
    const snap = processTable();
    const d = descendantsIn(snap, this.pid);
    for (const p of d) this.seen.set(p.pid, p.start);
    return d;
  }

  closeStdin() {
    this.snapshot();
    this.child.stdin.end();
  }

  /** Waits for exit; rejects after `limit` ms. Resolves {code, signal}. */
  waitExit(limit) {
    return withTimeout(this.exited, limit, `codemcp (pid ${this.pid}) to exit`);
  }

  /** Stops it for good: stdin EOF, then SIGKILL of it and everything it started. */
  async kill() {
    if (!this.exit) {
      this.snapshot();
      try {
        this.child.stdin.end();
      } catch {
        // ignore
      }
      await Promise.race([this.exited, sleep(ms(500))]);
    }
    killTree(this.exit ? 0 : this.pid, this.seen);
    await Promise.race([this.exited, sleep(2000)]);
    if (!this.wrapperChecked) {
      this.wrapperChecked = true;
      checkWrapperExit(this.exit?.code, this.stderr);
    }
  }

  /** A short excerpt of stderr for assertion messages. */
  stderrTail(n = 3000) {
    return this.stderr.length > n ? '…' + this.stderr.slice(-n) : this.stderr;
  }
}

/** Runs codemcp to completion (stdin closed at once); resolves {code, signal, stdout, stderr}. */
export async function runCodemcp(opts = {}, limit = ms(30000)) {
  const p = new Proc(opts);
  if (opts.input !== undefined) p.child.stdin.write(opts.input);
  if (!opts.keepStdinOpen) p.child.stdin.end();
  const ex = await p.waitExit(limit);
  return { ...ex, stdout: p.stdout, stderr: p.stderr, elapsed: Date.now() - p.startedAt, proc: p };
}

/** One CODEMCP_SMOKE program against server-everything in a fresh gateway, run to completion;
 * fails unless it exited 0; resolves the smoke's JSON output ({result, ...}). */
export async function smokeEverything(code, env = {}, limit = ms(80000)) {
  const config = writeConfig(tempDir(), { everything: servers.everything() });
  const r = await runCodemcp({ config, env: { CODEMCP_SMOKE: code, ...env } }, limit);
  assert.equal(r.code, 0, `smoke failed:\n${r.stdout}\n${r.stderr.slice(-3000)}`);
  return JSON.parse(r.stdout);
}

// ---------------------------------------------------------------------------------------------
// Raw line-protocol client: write arbitrary lines, read JSON-RPC messages with timeouts.
// Every stdout line must be a JSON object (stdout carries only MCP); violations are recorded
// in `nonJson` and tests assert it stays empty.

export class RawClient extends Proc {
  constructor(opts = {}) {
    super(opts);
    this.buf = '';
    this.messages = []; // parsed, not yet consumed
    this.nonJson = [];
    this.waiters = [];
    this.nextId = 1000;
    this.onStdout = () => this.drain();
  }

  drain() {
    const fresh = this.stdout.slice(this.consumed || 0);
    this.consumed = this.stdout.length;
    this.buf += fresh;
    let i;
    while ((i = this.buf.indexOf('\n')) >= 0) {
      const line = this.buf.slice(0, i).replace(/\r$/, '');
      this.buf = this.buf.slice(i + 1);
      if (!line.trim()) continue;
      try {
        const msg = JSON.parse(line);
        if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) throw new Error('not an object');
        this.messages.push(msg);
      } catch {
        this.nonJson.push(line);
      }
    }
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** Writes one line: an object is JSON-encoded, a string is sent as is. */
  send(msg) {
    const line = typeof msg === 'string' ? msg : JSON.stringify(msg);
    this.child.stdin.write(line + '\n');
  }

  /** Next message matching `pred` (removed from the queue), or rejects after `limit` ms or
   *  when codemcp exits first. */
  async next(pred = () => true, limit = ms(10000), what = 'a message') {
    const end = Date.now() + limit;
    for (;;) {
      const idx = this.messages.findIndex(pred);
      if (idx >= 0) return this.messages.splice(idx, 1)[0];
      if (this.exit) {
        throw new Error(
          `codemcp exited (code ${this.exit.code}, signal ${this.exit.signal}) before ${what}; ` +
            `stderr:\n${this.stderrTail()}`,
        );
      }
      const left = end - Date.now();
      if (left <= 0) throw new Error(`timed out after ${limit} ms waiting for ${what}; stderr:\n${this.stderrTail()}`);
      await new Promise((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** The response carrying `id` (compared as JSON, so 1 and "1" differ). */
  response(id, limit = ms(10000)) {
    const key = JSON.stringify(id);
    return this.next(
      (m) => 'id' in m && JSON.stringify(m.id) === key && !('method' in m),
      limit,
      `the response to id ${key}`,
    );
  }

  /** Sends a request and resolves its response message (not just the result). */
  async request(method, params, { id, limit } = {}) {
    const rid = id === undefined ? this.nextId++ : id;
    const msg = { jsonrpc: '2.0', id: rid, method };
    if (params !== undefined) msg.params = params;
    this.send(msg);
    return this.response(rid, limit);
  }

  notify(method, params) {
    const msg = { jsonrpc: '2.0', method };
    if (params !== undefined) msg.params = params;
    this.send(msg);
  }

  /** initialize + notifications/initialized; resolves the initialize result. */
  async initialize(protocolVersion = '2025-11-25', limit) {
    const r = await this.request(
      'initialize',
      { protocolVersion, capabilities: {}, clientInfo: { name: 'codemcp-e2e-raw', version: '0' } },
      { limit },
    );
    if (!r.result) throw new Error(`initialize failed: ${JSON.stringify(r)}`);
    this.notify('notifications/initialized');
    return r.result;
  }

  /** Asserts nothing (other than server-initiated notifications) arrives for `quiet` ms. */
  async expectNoResponse(quiet = 300) {
    await sleep(quiet);
    const responses = this.messages.filter((m) => !('method' in m));
    return responses;
  }
}

// ---------------------------------------------------------------------------------------------
// SDK client through the real binary.

/** Connects an official SDK client to a fresh codemcp. Resolves {client, transport, pid,
 *  stderr(), close()}. opts: {args, config, env, home, cwd, shared, limit,
 *  clientCapabilities, clientName (clientInfo.name, default codemcp-e2e)}. */
export async function connectClient(opts = {}) {
  const [cmd, args] = codemcpCommand(opts.args || []);
  const transport = new StdioClientTransport({
    command: cmd,
    args,
    env: codemcpEnv(opts),
    cwd: opts.cwd || REPO,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.setEncoding('utf8');
  transport.stderr?.on('data', (d) => (stderr += d));
  const client = new Client(
    { name: opts.clientName || 'codemcp-e2e', version: '0' },
    { capabilities: opts.clientCapabilities || {} },
  );
  const seen = new Map();
  const handle = {
    client,
    transport,
    pid: undefined,
    seen,
    stderr: () => stderr,
    snapshot() {
      if (!handle.pid) return [];
      const d = descendantsIn(processTable(), handle.pid);
      for (const p of d) seen.set(p.pid, p.start);
      return d;
    },
    async close() {
      if (handle.closed) return;
      handle.closed = true;
      handle.snapshot();
      const child = transport._process; // SDK internal; only used for the exit code
      await client.close().catch(() => {});
      killTree(0, seen);
      if (child) checkWrapperExit(child.exitCode, stderr);
    },
  };
  onCleanup(() => handle.close(), !!opts.shared);
  try {
    await client.connect(transport, { timeout: opts.limit || ms(15000) });
  } catch (err) {
    err.message += `\ncodemcp stderr:\n${stderr.slice(-3000)}`;
    throw err;
  } finally {
    handle.pid = transport.pid;
  }
  return handle;
}

/** The execute_python tool from tools/list (asserting it is the only tool). */
export async function executePythonTool(client, limit = ms(30000)) {
  const r = await client.listTools(undefined, { timeout: limit });
  if (r.tools.length !== 1 || r.tools[0].name !== 'execute_python') {
    throw new Error(`expected exactly [execute_python], got ${JSON.stringify(r.tools.map((t) => t.name))}`);
  }
  return r.tools[0];
}

/** Tool names a real upstream reports itself (to compare with what codemcp generated). */
export async function upstreamToolNames(entry) {
  const [command, ...args] = entry.command;
  const transport = new StdioClientTransport({
    command,
    args,
    env: { ...process.env, ...(entry.environment || {}) },
    stderr: 'ignore',
  });
  const client = new Client({ name: 'codemcp-e2e-direct', version: '0' });
  await client.connect(transport, { timeout: ms(15000) });
  try {
    const names = [];
    let cursor;
    do {
      const r = await client.listTools(cursor ? { cursor } : undefined, { timeout: ms(15000) });
      names.push(...r.tools.map((t) => t.name));
      cursor = r.nextCursor;
    } while (cursor);
    return names;
  } finally {
    await client.close();
  }
}

const PY_KEYWORDS = new Set(
  ('False None True and as assert async await break class continue def del elif else except ' +
    'finally for from global if import in is lambda nonlocal not or pass raise return try while ' +
    'with yield match case').split(' '),
);

/** The Python function name DESIGN.md specifies for server + tool (no collision handling). */
export function sdkName(server, tool) {
  let n = `${server}_${tool}`.replace(/[^A-Za-z0-9_]/g, '_');
  if (/^[0-9]/.test(n)) n = '_' + n;
  if (PY_KEYWORDS.has(n)) n += '_';
  return n;
}

// ---------------------------------------------------------------------------------------------
// /proc process tree: zombies and leftovers.

/** Map pid -> {pid, ppid, state, start, comm} for every process visible in /proc. */
export function processTable() {
  const table = new Map();
  let entries;
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return table;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    let stat;
    try {
      stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
    } catch {
      continue; // raced with exit
    }
    // "pid (comm) state ppid ... starttime(22nd field)"; comm may hold spaces and parens.
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    const f = stat.slice(close + 2).split(' ');
    table.set(Number(e), { pid: Number(e), comm, state: f[0], ppid: Number(f[1]), start: f[19] });
  }
  return table;
}

export function descendantsIn(table, pid) {
  if (!pid) return [];
  const out = [];
  const queue = [pid];
  while (queue.length) {
    const p = queue.shift();
    for (const proc of table.values()) {
      if (proc.ppid === p) {
        out.push(proc);
        queue.push(proc.pid);
      }
    }
  }
  return out;
}

export function descendants(pid) {
  return descendantsIn(processTable(), pid);
}

/** Direct children of pid in state Z (exited, not yet reaped by pid). */
export function zombieChildren(pid) {
  return [...processTable().values()].filter((p) => p.ppid === pid && p.state === 'Z');
}

/** Waits up to `limit` ms for pid to have no zombie children; returns the remaining ones. */
export async function waitNoZombies(pid, limit = ms(3000)) {
  let z = zombieChildren(pid);
  const end = Date.now() + limit;
  while (z.length && Date.now() < end) {
    await sleep(50);
    z = zombieChildren(pid);
  }
  return z;
}

/** Processes from `seen` (pid -> start time) that still exist, zombies included. */
export function survivors(seen) {
  const table = processTable();
  const out = [];
  for (const [pid, start] of seen) {
    const cur = table.get(pid);
    if (cur && cur.start === start) out.push(cur);
  }
  return out;
}

export function describeProcs(list) {
  return list.map((p) => `${p.pid}(${p.comm},${p.state},ppid ${p.ppid})`).join(', ');
}

/** The pid written by fake_upstream --pid-file, or 0 while the file is absent. */
export function readPidFile(p) {
  try {
    return Number(fs.readFileSync(p, 'utf8').trim()) || 0;
  } catch {
    return 0;
  }
}

export function pidAlive(pid) {
  const p = processTable().get(pid);
  return !!p && p.state !== 'Z';
}

/** Lines of a fake_upstream --log-file, parsed. */
export function readFakeLog(p) {
  let text = '';
  try {
    text = fs.readFileSync(p, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** The project version from meson.build (what --version must print). */
export function projectVersion() {
  const m = fs.readFileSync(path.join(REPO, 'meson.build'), 'utf8').match(/version\s*:\s*'([^']+)'/);
  return m ? m[1] : null;
}

/** NSpid of a process (its pid in each PID namespace, outermost first), [] when gone. */
export function nsPids(pid) {
  try {
    const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/^NSpid:\s+(.*)$/m);
    return m ? m[1].trim().split(/\s+/).map(Number) : [];
  } catch {
    return [];
  }
}

/** The live prototype the gateway gw forks workers from: in the sandbox the chain
 * [waiter, the sandbox's PID 1, the prototype (PID 2 inside)], in host isolation [the
 * prototype]; [] when there is none. Sandboxed, its sessions are the prototype's descendants. */
export function prototypeChain(gw, host = process.env.CODEMCP_ISOLATION === 'host') {
  const t = [...processTable().values()].filter((p) => p.state !== 'Z');
  const direct = t.filter((p) => p.ppid === gw && p.comm === 'codemcp-worker');
  for (const d of host ? [] : direct) {
    for (const init of t.filter((p) => p.ppid === d.pid)) {
      const proto = t.find((p) => p.ppid === init.pid && p.comm === 'codemcp-worker' &&
        nsPids(p.pid).length === nsPids(gw).length + 1 && nsPids(p.pid).at(-1) === 2);
      if (proto) return [d, init, proto];
    }
  }
  // Host isolation: sessions are the gateway's children too (their first process, with the
  // worker under it); the prototype is the one with no child. A session's first process is
  // childless too for a moment: between its clone and its worker's fork (the warm spare is
  // forked while a test looks), and once its worker has died. So look again, briefly, until
  // exactly one is childless.
  if (!host) return [];
  const depth = nsPids(gw).length;
  for (let i = 0; ; i++) {
    const now = [...processTable().values()].filter((p) => p.state !== 'Z');
    const proto = now.filter((d) => d.ppid === gw && d.comm === 'codemcp-worker' &&
      nsPids(d.pid).length === depth && !now.some((p) => p.ppid === d.pid));
    if (proto.length === 1 || i >= 100) return proto.length === 1 ? proto : [];
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
  }
}

/** An upstream (python) whose `grow` tool adds `n` tools `extraN` and announces
 * notifications/tools/list_changed: SDK reloads on demand. */
export function growingServer(dir) {
  const file = path.join(dir, 'grow.py');
  fs.writeFileSync(
    file,
    `import json, sys
n = 0
def send(m):
    sys.stdout.write(json.dumps(m) + "\\n"); sys.stdout.flush()
def tools():
    t = [{"name": "grow", "description": "Add tools and announce them.", "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}}]
    return t + [{"name": "extra%d" % i, "description": "Added by grow, number %d." % i, "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}, "k": {"type": "integer"}}}} for i in range(1, n + 1)]
for line in sys.stdin:
    m = json.loads(line)
    meth, mid = m.get("method"), m.get("id")
    if meth == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {"listChanged": True}}, "serverInfo": {"name": "grow", "version": "0"}}})
    elif meth == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": tools()}})
    elif meth == "tools/call":
        n += int(m["params"].get("arguments", {}).get("n", 1))
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": str(n)}]}})
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    elif mid is not None and meth:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "not here"}})
`,
  );
  return { type: 'local', command: [PYTHON, file] };
}

/** Runs a client command to its end (killed after `limit` ms) in cwd (default: this one);
 * resolves {code, out} with stdout and stderr together (what a user would read). */
export function runClient(cmd, args, env, limit, cwd) {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    const t = setTimeout(() => p.kill('SIGKILL'), limit);
    p.on('close', (code) => {
      clearTimeout(t);
      resolve({ code, out });
    });
  });
}

/**
 * Starts `codemcp start -p 0` and waits until it serves. opts: {prefix, mcp (upstreams), env,
 * args (after `start -p 0`), tokens ({principal: token}: a tokens file,
 * CODEMCP_HTTP_TOKENS_FILE), shared (keep it until the end of the file)}. Returns {proc, url,
 * home}.
 */
export async function startHttpGateway({ prefix = 'codemcp-gw-', mcp = {}, env = {}, args = [], tokens = null, shared = false } = {}) {
  const home = tempDir(prefix, { shared });
  const extra = {};
  if (tokens) {
    const file = path.join(home, 'tokens');
    fs.writeFileSync(file, Object.entries(tokens).map(([who, t]) => `${who} ${t}\n`).join(''), { mode: 0o600 });
    extra.CODEMCP_HTTP_TOKENS_FILE = file;
  }
  const proc = new Proc({ args: ['start', '-p', '0', ...args], config: writeConfig(home, mcp), home,
    shared, env: { ...extra, ...env } });
  const m = await waitFor(() => proc.exit || proc.stderr.match(/serving MCP over Streamable HTTP at (\S+)/), ms(20000));
  assert.ok(m && m[1], `codemcp start did not come up:\n${proc.stderrTail()}`);
  return { proc, url: m[1], home };
}

/** An SDK client on a Streamable HTTP gateway as `token`'s principal; end() also DELETEs the
 *  session, so it ends at the gateway too. */
export async function connectHttp(url, token, name = 'e2e') {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name, version: '0' });
  await client.connect(transport, { timeout: ms(15000) });
  client.end = async () => {
    await transport.terminateSession().catch(() => {});
    await client.close();
  };
  return client;
}

/**
 * `codemcp start` for the tests of the enclosing describe: started in its `before`, stopped
 * with SIGTERM in its `after`. opts: as startHttpGateway's, and exitZero (assert the gateway
 * exits 0 on SIGTERM). Returns {proc, url, home}, filled once it is up.
 */
export function sharedHttpGateway({ exitZero = false, ...opts } = {}) {
  const gw = { proc: null, url: null, home: null };
  before(async () => {
    Object.assign(gw, await startHttpGateway({ ...opts, shared: true }));
  });
  after(async () => {
    if (!gw.proc || gw.proc.exit) return;
    gw.proc.child.kill('SIGTERM');
    const ex = await gw.proc.waitExit(ms(15000));
    if (exitZero) assert.equal(ex.code, 0, `codemcp start must exit 0 on SIGTERM:\n${gw.proc.stderrTail()}`);
  });
  return gw;
}

/** The per-request `_meta` envelope of a 2026-07-28 client named `name` (SEP-2575). */
export function meta2026(name, caps = {}) {
  return {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name, version: '1' },
    'io.modelcontextprotocol/clientCapabilities': caps,
  };
}

// ---------------------------------------------------------------------------------------------
// tests/fixtures/http/mcp_http_server.mjs, the HTTP MCP upstream that counts what reaches it
// (connections, header names, body sizes, requests in flight; GET /admin/stats). Resolves
// { proc, port } once it listens; `started` (a Set) collects the process for the caller's
// after() to kill.

/** tests/v2/server.mjs, the SDK v2 server, on HTTP (ephemeral port) with `flags`; added to
 *  `started` (killed by the caller) until it exits. Resolves {proc, port, log()}: log() is all
 *  it wrote on stderr so far ("recv …", "headers …", "trace …" lines). */
export function startV2Http(started, flags = []) {
  return new Promise((resolve, reject) => {
    const proc = spawn(NODE, [path.join(TESTS, 'v2', 'server.mjs'), '--http', '0', ...flags], { stdio: ['ignore', 'pipe', 'pipe'] });
    started.add(proc);
    let out = '';
    const timer = setTimeout(() => reject(new Error(`v2 server did not start: ${out}`)), ms(15000));
    proc.stderr.setEncoding('utf8').on('data', (d) => {
      out += d;
      const m = out.match(/listening (\d+)/);
      if (m && timer) {
        clearTimeout(timer);
        resolve({ proc, port: Number(m[1]), log: () => out });
      }
    });
    proc.on('exit', () => started.delete(proc));
  });
}

export const HTTP_FIXTURE = path.join(TESTS, 'fixtures', 'http', 'mcp_http_server.mjs');

export function startHttpFixture(started, flags = []) {
  return new Promise((resolve, reject) => {
    const proc = spawn(NODE, [HTTP_FIXTURE, ...flags], { stdio: ['ignore', 'pipe', 'pipe'] });
    started.add(proc);
    let out = '';
    const timer = setTimeout(() => reject(new Error(`fixture did not start: ${out}`)), ms(15000));
    proc.stdout.setEncoding('utf8').on('data', (d) => {
      out += d;
      const m = out.match(/listening on (\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, port: Number(m[1]) });
      }
    });
    proc.on('exit', (code) => reject(new Error(`fixture exited (${code}): ${out}`)));
  });
}

// Python, for agent programs that attack their own sockets: leaves in `socks` every socket
// descriptor the worker holds (the control socket is the only one in use). Needs `import os`.
export const PY_OWN_SOCKETS = String.raw`socks = []
for fd in os.listdir("/proc/self/fd"):
    try:
        if os.readlink("/proc/self/fd/" + fd).startswith("socket:"):
            socks.append(int(fd))
    except OSError:
        pass`;

/**
 * For tests against everything + memory + filesystem with CODEMCP_LEARN_SHAPES: waits until the
 * execute_python description lists the three servers' SDK functions, then teaches the shape
 * learner the text tools (one call each, as a session would) and waits until everything_echo
 * and everything_get_sum read `-> str`. `run(code)` runs a program on `client`. Returns the
 * description.
 */
export async function learnThreeServers(client, run) {
  let desc;
  const wanted = ['everything_echo', 'memory_read_graph', 'filesystem_read_text_file'];
  const ready = await waitFor(async () => {
    desc = (await client.listTools(undefined, { timeout: ms(30000) })).tools[0].description;
    return wanted.every((f) => desc.includes(`def ${f}(`));
  }, ms(30000), 100);
  if (!ready) throw new Error(`the SDK never listed ${wanted}:\n${desc}`);
  const seed = await run(`r = [everything_echo(message="seed"), everything_get_sum(a=1, b=1), memory_read_graph()]
result = [str(x)[:20] for x in r]`);
  if (seed.isError) throw new Error(`seeding failed: ${JSON.stringify(seed.structuredContent)}`);
  const learned = await waitFor(async () => {
    desc = (await client.listTools(undefined, { timeout: ms(30000) })).tools[0].description;
    return /def everything_echo\(message: str\) -> str:/.test(desc) && /def everything_get_sum\(a: float, b: float\) -> str:/.test(desc);
  }, ms(15000), 100);
  if (!learned) throw new Error(`the text results of everything_echo/get_sum were not learned:\n${desc}`);
  return desc;
}

/** The peak resident memory of process pid so far (VmHWM), in MB. Under the sanitizers
 *  (CODEMCP_TEST_SANITIZER) freed memory sits in quarantine and peaks say nothing: then NaN. */
/** Python lines that wait on every Pending in the list `name` and set `result` to how many
 *  ended each way ("ok", else the ToolError's kind), with the message of a refusal under
 *  "message". */
export const pyTallyOutcomes = (name) => String.raw`
kinds = {}
for c in ${name}:
    try:
        c.result()
        k = "ok"
    except ToolError as err:
        k = err.kind
        if k == "denied":
            kinds["message"] = err.message
    kinds[k] = kinds.get(k, 0) + 1
result = kinds`;

/** The CPU time (every thread) process pid has used so far, in seconds, from /proc/<pid>/stat:
 *  work done, which a busy machine barely moves, unlike how long it took. */
export function cpuSeconds(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, in USER_HZ (100 on Linux)
}

export function peakRssMb(pid) {
  if (process.env.CODEMCP_TEST_SANITIZER) return NaN;
  const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmHWM:\s+(\d+) kB/);
  return m ? Number(m[1]) / 1024 : NaN;
}

/** execute_python `code` on `client` (reset: true, plus `extra` arguments); returns the run's
 *  structured envelope, asserting there is one. */
export async function runEnvelope(client, code, extra = {}) {
  const r = await client.callTool({ name: 'execute_python', arguments: { code, reset: true, ...extra } },
    undefined, { timeout: ms(60000) });
  const env = r.structuredContent;
  assert.ok(env, JSON.stringify(r));
  return env;
}

/** Waits until the execute_python description on `client` shows `def <fn>(`. */
export async function untilDescribed(client, fn) {
  const ok = await waitFor(async () => {
    const r = await client.listTools(undefined, { timeout: ms(30000) });
    return (r.tools[0]?.description || '').includes(`def ${fn}(`);
  }, ms(30000), 100);
  assert.ok(ok, `${fn} never appeared`);
}
