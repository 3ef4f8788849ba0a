// Benchmark: what the worker sandbox costs, side by side in one run.
//   1. bench/execute.mjs's workloads (1 call, 50 sequential, 50 concurrent calls to
//      server-everything's get-sum, and the empty program) on two stdio gateways, one with
//      CODEMCP_ISOLATION=sandbox (the default) and one with =host, rounds interleaved.
//   2. Respawn: SIGKILL of the worker (the whole sandbox), time until an empty run answers.
//   3. Start of a fresh stdio gateway to its first answered empty run (cold worker start).
//   4. HTTP (`codemcp start`): a new session's first run vs an existing session's empty run,
//      and PSS of the gateway + all its workers per idle session at 1, 50 and 200 sessions,
//      for workers forked from the prototype (sandbox and host) and, as the reference, exec'd
//      ones (CODEMCP_PROTOTYPE=off); plus the first run after the prototype was killed.
// Usage: node bench/sandbox.mjs [rounds=40] [--http-only]  → bench/results/sandbox.md
import { writeFileSync, readFileSync, mkdtempSync, appendFileSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { SERVERS, codemcpBin, childPids, stats, fmt, ROOT, untilSdkReady } from './lib.mjs';

const ROUNDS = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) || 40);
const HTTP_ONLY = process.argv.includes('--http-only');
const WARMUP = 3;
const SDK = join(ROOT, 'tests/node_modules/@modelcontextprotocol/sdk/dist/esm');
const { Client } = await import(join(SDK, 'client/index.js'));
const { StdioClientTransport, getDefaultEnvironment } = await import(join(SDK, 'client/stdio.js'));
const { StreamableHTTPClientTransport } = await import(join(SDK, 'client/streamableHttp.js'));

const bin = codemcpBin();
const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-sbx-'));
const cfg = join(dir, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcp: { everything: { type: 'local', command: SERVERS.everything } } }));
const empty = join(dir, 'empty.json');
writeFileSync(empty, JSON.stringify({ mcp: {} }));
const MODES = ['sandbox', 'host'];

async function connect(iso, config = cfg) {
  const transport = new StdioClientTransport({ command: bin, args: [],
    env: { ...getDefaultEnvironment(), CODEMCP_CONFIG: config, CODEMCP_ISOLATION: iso,
      ...(process.env.CODEMCP_PROTOTYPE ? { CODEMCP_PROTOTYPE: process.env.CODEMCP_PROTOTYPE } : {}) },
    stderr: 'ignore' });
  const client = new Client({ name: `bench-${iso}`, version: '1' });
  await client.connect(transport);
  return { client, pid: transport.pid, transport };
}
const N = 50;
const PY_N = 'def n(r): return int(str(r).rsplit(" ", 1)[1].rstrip("."))\n';
const PY = {
  one: 'result = everything_get_sum(a=1, b=2)',
  seq50: `${PY_N}s = 0\nfor i in range(${N}):\n    s += n(everything_get_sum(a=i, b=1))\nresult = s`,
  conc50: `${PY_N}ps = [everything_get_sum(a=i, b=1) for i in range(${N})]\nresult = sum(n(p) for p in ps)`,
  empty: 'result = 1',
};
const EXPECT = { one: 'The sum of 1 and 2 is 3.', seq50: 1275, conc50: 1275, empty: 1 };
async function run(client, code) {
  const r = await client.callTool({ name: 'execute_python', arguments: { code } });
  if (r.isError) throw new Error(JSON.stringify(r.structuredContent ?? r.content));
  return r.structuredContent.result;
}
const now = () => performance.now();

const comm = (pid) => { try { return readFileSync(`/proc/${pid}/comm`, 'utf8').trim(); } catch { return ''; } };
const nspid = (pid) => { try { return readFileSync(`/proc/${pid}/status`, 'utf8').match(/^NSpid:\s+(.*)$/m)[1].trim().split(/\s+/).map(Number); } catch { return []; } };
// The prototype under gateway gw: the sandbox's PID 2 (waiter → PID 1 → it) or, in host
// isolation, the gateway's codemcp-worker child that has children; 0 when exec'd workers.
function prototypeOf(gw) {
  for (const d of childPids(gw).filter((c) => comm(c) === 'codemcp-worker')) {
    for (const init of childPids(d)) {
      const p = childPids(init).find((c) => nspid(c).length === 2 && nspid(c)[1] === 2);
      if (p) return p;
    }
    if (childPids(d).some((c) => comm(c) === 'codemcp-worker') && nspid(d).length === 1 &&
        !childPids(d).some((c) => nspid(c).length > 1)) return d;
  }
  return 0;
}
// What to SIGKILL to end a session's worker: its PID 1 (forked) or the waiter (exec'd).
function sessionRoot(gw) {
  const proto = prototypeOf(gw);
  if (proto) return childPids(proto).at(-1);
  return childPids(gw).find((c) => comm(c) === 'codemcp-worker');
}

// ---- 1. workloads ------------------------------------------------------------------------------
const peers = {};
const samples = {}, respawn = {}, cold = {};
const W = Object.keys(PY);
if (!HTTP_ONLY) {
for (const m of MODES) peers[m] = await connect(m);
for (const m of MODES) await untilSdkReady(() => run(peers[m].client, PY.one));
for (const w of W) samples[w] = Object.fromEntries(MODES.map((m) => [m, []]));
for (let r = -WARMUP; r < ROUNDS; r++) {
  for (const w of W) {
    const order = r % 2 ? MODES : [...MODES].reverse();
    for (const m of order) {
      const t0 = now();
      const v = await run(peers[m].client, PY[w]);
      const t = now() - t0;
      if (v !== EXPECT[w]) throw new Error(`${m}/${w}: ${JSON.stringify(v)}`);
      if (r >= 0) samples[w][m].push(t);
    }
  }
}

// ---- 2. respawn after a kill ------------------------------------------------------------------
for (const m of MODES) respawn[m] = [];
for (let k = 0; k < 8; k++) {
  for (const m of MODES) {
    const p = peers[m];
    const worker = sessionRoot(p.pid);
    const t0 = now();
    process.kill(worker, 'SIGKILL');
    for (;;) {
      try {
        if ((await run(p.client, PY.empty)) === 1) break;
      } catch { /* the run that met the dying worker */ }
    }
    respawn[m].push(now() - t0);
  }
}
for (const m of MODES) await peers[m].client.close();

// ---- 3. cold start ---------------------------------------------------------------------------
// Also with exec'd workers (CODEMCP_PROTOTYPE=off): what the prototype costs a stdio start.
for (const m of [...MODES, 'sandbox-exec']) cold[m] = [];
for (let k = 0; k < 6; k++) {
  for (const m of [...MODES, 'sandbox-exec']) {
    const t0 = now();
    if (m === 'sandbox-exec') process.env.CODEMCP_PROTOTYPE = 'off';
    const p = await connect(m === 'sandbox-exec' ? 'sandbox' : m, empty);
    delete process.env.CODEMCP_PROTOTYPE;
    await run(p.client, PY.empty);
    cold[m].push(now() - t0);
    await p.client.close();
  }
}

}

// ---- 4. HTTP sessions ----------------------------------------------------------------------
function pssKiB(pid) {
  try {
    const m = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').match(/^Pss:\s+(\d+)/m);
    return m ? Number(m[1]) : 0;
  } catch { return 0; }
}
function tree(pid) {
  const out = [pid];
  for (let i = 0; i < out.length; i++) out.push(...childPids(out[i]));
  return out;
}
async function http(iso, prototype = 'on') {
  const proc = spawn(bin, ['start', '-p', '0', '--no-auth'], { env: { ...process.env, CODEMCP_CONFIG: empty,
    CODEMCP_ISOLATION: iso, CODEMCP_HTTP_MAX_SESSIONS: '1024', CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL: '1024', CODEMCP_WORKERS: '210',
    CODEMCP_MAX_NAMESPACES: '1024', CODEMCP_MAX_NAMESPACES_PER_PRINCIPAL: '1024',
    CODEMCP_PROTOTYPE: prototype },
    stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (d) => {
    err += d;
    if (process.env.BENCH_LOG) appendFileSync(process.env.BENCH_LOG, d);
  });
  for (let i = 0; i < 200 && !/at (http\S+)/.test(err); i++) await new Promise((r) => setTimeout(r, 50));
  const url = err.match(/serving MCP over Streamable HTTP at (\S+)/)[1];
  const sessions = [];
  const open = async () => {
    const c = new Client({ name: 'bench-http', version: '1' });
    await c.connect(new StreamableHTTPClientTransport(new URL(url)));
    sessions.push(c);
    return c;
  };
  const pss = {};
  const measure = async (target) => {
    console.error(`${iso}/${prototype}: ${sessions.length} → ${target} sessions`);
    while (sessions.length < target) {
      const c = await open();
      await run(c, 'x = list(range(100))\nresult = 1');
    }
    await new Promise((r) => setTimeout(r, 500));
    const all = tree(proc.pid);
    const total = all.reduce((s, p) => s + pssKiB(p), 0);
    pss[target] = { total, per: total / target, procs: all.length };
  };
  const first = await open();
  await run(first, PY.empty);
  await measure(1);
  const existing = [], fresh = [], burst = [];
  for (let k = 0; k < 20; k++) {
    let t0 = now();
    await run(first, PY.empty);
    existing.push(now() - t0);
    await new Promise((r) => setTimeout(r, 250)); // sessions arriving slower than a spawn
    const c = await open();
    t0 = now();
    await run(c, PY.empty);
    fresh.push(now() - t0);
  }
  for (let k = 0; k < 10; k++) { // back to back: the warm spare is used up at once
    const c = await open();
    const t0 = now();
    await run(c, PY.empty);
    burst.push(now() - t0);
  }
  for (const target of [50, 200]) await measure(target);
  // The prototype killed: the next new session's first run (a new prototype, then a fork).
  const afterProto = [];
  for (let k = 0; k < (prototype === 'on' ? 5 : 0); k++) {
    const p = prototypeOf(proc.pid);
    if (!p) break;
    process.kill(p, 'SIGKILL');
    const t0 = now();
    const c = await open();
    for (;;) {
      try { if ((await run(c, PY.empty)) === 1) break; } catch { /* met the dying prototype */ }
    }
    afterProto.push(now() - t0);
  }
  for (const c of sessions) await c.close().catch(() => {});
  proc.kill('SIGTERM');
  return { existing: stats(existing), fresh: stats(fresh), burst: stats(burst), pss,
    afterProto: afterProto.length ? stats(afterProto) : null };
}
const HTTP_MODES = { sandbox: ['sandbox', 'on'], host: ['host', 'on'], 'sandbox, exec': ['sandbox', 'off'] };
const httpRes = {};
for (const [name, [iso, pro]] of Object.entries(HTTP_MODES)) httpRes[name] = await http(iso, pro);

// ---- report -------------------------------------------------------------------------------------
const lines = [];
const L = (s = '') => lines.push(s);
L('# Sandbox cost (bench/sandbox.mjs)');
L();
L(`${new Date().toISOString()}, ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), kernel ${readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim()}, ` +
  `${ROUNDS} interleaved rounds, ${process.getuid() === 0 ? 'as root' : 'unprivileged'}. One run, medians in ms; ratio = sandbox / host.`);
L();
if (!HTTP_ONLY) {
  L('| workload | sandbox p50 | host p50 | ratio | sandbox p99 | host p99 |');
  L('|---|---|---|---|---|---|');
  for (const w of W) {
    const s = stats(samples[w].sandbox), h = stats(samples[w].host);
    L(`| ${w} | ${fmt(s.median, 2)} | ${fmt(h.median, 2)} | ${fmt(s.median / h.median, 3)}× | ${fmt(s.p99, 2)} | ${fmt(h.p99, 2)} |`);
  }
  L();
}
L('| event | sandbox p50 | host p50 | ratio | sandbox, exec\'d workers p50 |');
L('|---|---|---|---|---|');
const H = httpRes, X = H['sandbox, exec'];
const row = (name, a, b, c) => L(`| ${name} | ${fmt(a.median, 1)} | ${fmt(b.median, 1)} | ${fmt(a.median / b.median, 2)}× | ${c ? fmt(c.median, 1) : '–'} |`);
if (!HTTP_ONLY) {
  row('respawn: SIGKILL of the session\'s worker → next empty run answered (stdio)', stats(respawn.sandbox), stats(respawn.host));
  row('cold start: stdio gateway spawned → first empty run answered', stats(cold.sandbox), stats(cold.host), stats(cold['sandbox-exec']));
}
row('HTTP: empty run in an existing session', H.sandbox.existing, H.host.existing, X.existing);
row('HTTP: first run of a new session (sessions 250 ms apart: the warm spare)', H.sandbox.fresh, H.host.fresh, X.fresh);
row('HTTP: first run of a new session, back to back (a fork, or a spawn)', H.sandbox.burst, H.host.burst, X.burst);
if (H.sandbox.afterProto && H.host.afterProto)
  row('HTTP: prototype SIGKILLed → a new session\'s first run answered', H.sandbox.afterProto, H.host.afterProto);
L();
L('New session over an existing session\'s empty run (p50 difference, ms; target ≤ 25): ' +
  Object.entries(H).map(([k, v]) => `${k} ${fmt(v.fresh.median - v.existing.median, 1)} (back to back ${fmt(v.burst.median - v.existing.median, 1)})`).join(', ') + '.');
L();
L('PSS (smaps_rollup) of the gateway and every process under it, per idle HTTP session (CODEMCP_WORKERS=210); "marginal" = (PSS at 200 − PSS at 50) / 150, what one more session costs:');
L();
L('| sessions | ' + Object.keys(H).map((k) => `${k}: total MiB | per session KiB`).join(' | ') + ' | processes |');
L('|---|' + Object.keys(H).map(() => '---|---|').join('') + '---|');
for (const n of [1, 50, 200])
  L(`| ${n} | ` + Object.values(H).map((v) => `${fmt(v.pss[n].total / 1024, 1)} | ${fmt(v.pss[n].per, 0)}`).join(' | ') + ` | ${Object.values(H).map((v) => v.pss[n].procs).join('/')} |`);
L('| marginal | ' + Object.values(H).map((v) => `– | ${fmt((v.pss[200].total - v.pss[50].total) / 150, 0)}`).join(' | ') + ' | |');
L();
const out = join(ROOT, 'bench/results/sandbox.md');
const notes = (() => { try { return readFileSync(out, 'utf8').split('\n## Notes')[1]; } catch { return undefined; } })();
writeFileSync(out, lines.join('\n') + (notes !== undefined ? '\n## Notes' + notes : '\n'));
console.log(lines.join('\n'));
process.exit(0);
