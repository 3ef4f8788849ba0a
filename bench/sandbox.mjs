// Benchmark (issue 11): what the worker sandbox costs, side by side in one run.
//   1. bench/execute.mjs's workloads (1 call, 50 sequential, 50 concurrent calls to
//      server-everything's get-sum, and the empty program) on two stdio gateways, one with
//      CODEMCP_ISOLATION=sandbox (the default) and one with =host, rounds interleaved.
//   2. Respawn: SIGKILL of the worker (the whole sandbox), time until an empty run answers.
//   3. Start of a fresh stdio gateway to its first answered empty run (cold worker start).
//   4. HTTP (`codemcp start`): a new session's first run vs an existing session's empty run,
//      and PSS of the gateway + all its workers per idle session at 1, 50 and 200 sessions.
// Usage: node bench/sandbox.mjs [rounds=40]  → bench/results/sandbox.md
import { writeFileSync, readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { SERVERS, codemcpBin, childPids, stats, fmt, ROOT, untilSdkReady } from './lib.mjs';

const ROUNDS = Number(process.argv[2] || 40);
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
    env: { ...getDefaultEnvironment(), CODEMCP_CONFIG: config, CODEMCP_ISOLATION: iso }, stderr: 'ignore' });
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

// ---- 1. workloads ------------------------------------------------------------------------------
const peers = {};
for (const m of MODES) peers[m] = await connect(m);
for (const m of MODES) await untilSdkReady(() => run(peers[m].client, PY.one));
const W = Object.keys(PY);
const samples = Object.fromEntries(W.map((w) => [w, Object.fromEntries(MODES.map((m) => [m, []]))]));
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
const respawn = Object.fromEntries(MODES.map((m) => [m, []]));
for (let k = 0; k < 8; k++) {
  for (const m of MODES) {
    const p = peers[m];
    const worker = childPids(p.pid).find((c) => readFileSync(`/proc/${c}/comm`, 'utf8').trim() === 'codemcp-worker');
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
const cold = Object.fromEntries(MODES.map((m) => [m, []]));
for (let k = 0; k < 6; k++) {
  for (const m of MODES) {
    const t0 = now();
    const p = await connect(m, empty);
    await run(p.client, PY.empty);
    cold[m].push(now() - t0);
    await p.client.close();
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
async function http(iso) {
  const proc = spawn(bin, ['start', '-p', '0'], { env: { ...process.env, CODEMCP_CONFIG: empty,
    CODEMCP_ISOLATION: iso, CODEMCP_HTTP_MAX_SESSIONS: '1024', CODEMCP_WORKERS: '210' },
    stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (d) => (err += d));
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
  for (const c of sessions) await c.close().catch(() => {});
  proc.kill('SIGTERM');
  return { existing: stats(existing), fresh: stats(fresh), burst: stats(burst), pss };
}
const httpRes = {};
for (const m of MODES) httpRes[m] = await http(m);

// ---- report -------------------------------------------------------------------------------------
const lines = [];
const L = (s = '') => lines.push(s);
L('# Sandbox cost (bench/sandbox.mjs)');
L();
L(`${new Date().toISOString()}, ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), kernel ${readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim()}, ` +
  `${ROUNDS} interleaved rounds, ${process.getuid() === 0 ? 'as root' : 'unprivileged'}. One run, medians in ms; ratio = sandbox / host.`);
L();
L('| workload | sandbox p50 | host p50 | ratio | sandbox p99 | host p99 |');
L('|---|---|---|---|---|---|');
for (const w of W) {
  const s = stats(samples[w].sandbox), h = stats(samples[w].host);
  L(`| ${w} | ${fmt(s.median, 2)} | ${fmt(h.median, 2)} | ${fmt(s.median / h.median, 3)}× | ${fmt(s.p99, 2)} | ${fmt(h.p99, 2)} |`);
}
L();
L('| event | sandbox p50 | host p50 | ratio |');
L('|---|---|---|---|');
const row = (name, a, b) => L(`| ${name} | ${fmt(a.median, 1)} | ${fmt(b.median, 1)} | ${fmt(a.median / b.median, 2)}× |`);
row('respawn: SIGKILL of the worker → next empty run answered', stats(respawn.sandbox), stats(respawn.host));
row('cold start: stdio gateway spawned → first empty run answered', stats(cold.sandbox), stats(cold.host));
row('HTTP: empty run in an existing session', httpRes.sandbox.existing, httpRes.host.existing);
row('HTTP: first run of a new session (sessions 250 ms apart: the warm spare)', httpRes.sandbox.fresh, httpRes.host.fresh);
row('HTTP: first run of a new session, back to back (a worker spawn)', httpRes.sandbox.burst, httpRes.host.burst);
L();
L('PSS of the gateway and every process under it (one worker per session; in the sandbox also its waiter and PID 1), per idle HTTP session (CODEMCP_WORKERS=210):');
L();
L('| sessions | sandbox total MiB | sandbox per session KiB | host total MiB | host per session KiB | processes (sandbox/host) |');
L('|---|---|---|---|---|---|');
for (const n of [1, 50, 200]) {
  const s = httpRes.sandbox.pss[n], h = httpRes.host.pss[n];
  L(`| ${n} | ${fmt(s.total / 1024, 1)} | ${fmt(s.per, 0)} | ${fmt(h.total / 1024, 1)} | ${fmt(h.per, 0)} | ${s.procs}/${h.procs} |`);
}
L();
const out = join(ROOT, 'bench/results/sandbox.md');
const notes = (() => { try { return readFileSync(out, 'utf8').split('\n## Notes')[1]; } catch { return undefined; } })();
writeFileSync(out, lines.join('\n') + (notes !== undefined ? '\n## Notes' + notes : '\n'));
console.log(lines.join('\n'));
process.exit(0);
