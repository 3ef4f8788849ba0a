// Benchmark: what CODEMCP_ISOLATION=docker costs next to the sandbox (the default), side by
// side in one run.
//   1. bench/execute.mjs's workloads (1 call, 50 sequential, 50 concurrent calls to
//      server-everything's get-sum, and the empty program) on two stdio gateways, one per
//      isolation, rounds interleaved.
//   2. The first run of a new session: a fresh stdio gateway spawned → its first empty run
//      answered (the worker's start: a fork from the prototype, or a container's create +
//      start + connect), alternating the two.
//   3. The worker image: its build on first use (the image removed first) and its size.
// Needs a Docker daemon on /var/run/docker.sock (or DOCKER_HOST=unix://…) and
// debian:bookworm-slim (contrib/docker/make-base.sh).
// Usage: node bench/docker_isolation.mjs [rounds=30]  → bench/results/docker-isolation.md
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import http from 'node:http';
import { join } from 'node:path';
import { SERVERS, codemcpBin, stats, fmt, ROOT, untilSdkReady, EXEC_PY, EXEC_EXPECT, buildType } from './lib.mjs';

const ROUNDS = Number(process.argv[2] || 30);
const WARMUP = 3;
const SDK = join(ROOT, 'tests/node_modules/@modelcontextprotocol/sdk/dist/esm');
const { Client } = await import(join(SDK, 'client/index.js'));
const { StdioClientTransport, getDefaultEnvironment } = await import(join(SDK, 'client/stdio.js'));
const SOCK = (process.env.DOCKER_HOST || 'unix:///var/run/docker.sock').replace(/^unix:\/\//, '');

const bin = codemcpBin();
const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-dock-'));
const cfg = join(dir, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcp: { everything: { type: 'local', command: SERVERS.everything } } }));
const empty = join(dir, 'empty.json');
writeFileSync(empty, JSON.stringify({ mcp: {} }));
const MODES = ['docker', 'sandbox'];
const now = () => performance.now();

function engine(method, path) {
  return new Promise((resolve, reject) => {
    const rq = http.request({ socketPath: SOCK, method, path }, (res) => {
      let t = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (t += d));
      res.on('end', () => { let b = t; try { b = JSON.parse(t); } catch { /* text */ } resolve({ status: res.statusCode, body: b }); });
    });
    rq.on('error', reject);
    rq.end();
  });
}
async function connect(iso, config = cfg) {
  const transport = new StdioClientTransport({ command: bin, args: [],
    env: { ...getDefaultEnvironment(), CODEMCP_CONFIG: config, CODEMCP_ISOLATION: iso }, stderr: 'ignore' });
  const client = new Client({ name: `bench-${iso}`, version: '1' });
  await client.connect(transport);
  return { client, pid: transport.pid };
}
async function run(client, code) {
  const r = await client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: 600000 });
  if (r.isError) throw new Error(JSON.stringify(r.structuredContent ?? r.content));
  return r.structuredContent.result;
}
// ---- 3 first: the image built on first use (nothing else runs yet) --------------------------
const imgs = (await engine('GET', '/images/json')).body.filter((i) => (i.RepoTags || []).some((t) => t.startsWith('codemcp-worker:')));
for (const i of imgs) await engine('DELETE', `/images/${i.Id}?force=1`);
let t0 = now();
const firstUse = await connect('docker', empty);
await run(firstUse.client, EXEC_PY.empty);
const buildMs = now() - t0;
await firstUse.client.close();
const img = (await engine('GET', '/images/json')).body.find((i) => (i.RepoTags || []).some((t) => t.startsWith('codemcp-worker:')));

// ---- 1. workloads ---------------------------------------------------------------------------
const peers = {}, samples = {};
for (const m of MODES) peers[m] = await connect(m);
for (const m of MODES) await untilSdkReady(() => run(peers[m].client, EXEC_PY.one));
const W = Object.keys(EXEC_PY);
for (const w of W) samples[w] = Object.fromEntries(MODES.map((m) => [m, []]));
for (let r = -WARMUP; r < ROUNDS; r++)
  for (const w of W)
    for (const m of r % 2 ? MODES : [...MODES].reverse()) {
      const s = now();
      const v = await run(peers[m].client, EXEC_PY[w]);
      if (v !== EXEC_EXPECT[w]) throw new Error(`${m}/${w}: ${JSON.stringify(v)}`);
      if (r >= 0) samples[w][m].push(now() - s);
    }

for (const m of MODES) await peers[m].client.close();

// ---- 2. a new session's first run ----------------------------------------------------------
const cold = { docker: [], sandbox: [] };
for (let k = 0; k < 8; k++)
  for (const m of k % 2 ? MODES : [...MODES].reverse()) {
    const s = now();
    const p = await connect(m, empty);
    await run(p.client, EXEC_PY.empty);
    cold[m].push(now() - s);
    await p.client.close();
  }

// ---- report --------------------------------------------------------------------------------
const lines = [];
const L = (s = '') => lines.push(s);
L('# CODEMCP_ISOLATION=docker vs sandbox');
L();
L(`bench/docker_isolation.mjs, ${ROUNDS} interleaved rounds (+${WARMUP} warm-up), ${cpus().length} CPUs, ` +
  `${buildType(bin)} build, ${new Date().toISOString().slice(0, 16)}Z. Times in ms.`);
L();
L('| workload | docker p50 | sandbox p50 | ratio | docker p99 | sandbox p99 |');
L('|---|---|---|---|---|---|');
for (const w of W) {
  const d = stats(samples[w].docker), s = stats(samples[w].sandbox);
  L(`| ${w} | ${fmt(d.median, 2)} | ${fmt(s.median, 2)} | ${fmt(d.median / s.median, 3)}× | ${fmt(d.p99, 2)} | ${fmt(s.p99, 2)} |`);
}
L();
L('| event | docker p50 | sandbox p50 | ratio | docker max | sandbox max |');
L('|---|---|---|---|---|---|');
for (const [name, v] of [['a new session\'s first run: stdio gateway spawned → first empty run answered', cold]]) {
  const d = stats(v.docker), s = stats(v.sandbox);
  L(`| ${name} | ${fmt(d.median, 1)} | ${fmt(s.median, 1)} | ${fmt(d.median / s.median, 2)}× | ${fmt(d.max, 1)} | ${fmt(s.max, 1)} |`);
}
L();
L(`The worker image, built on first use (image removed first; gateway spawned → first empty run answered): ` +
  `${fmt(buildMs, 0)} ms; ${img ? `${img.RepoTags[0]}: ${fmt(img.Size / 1e6, 1)} MB (of which debian:bookworm-slim ~75 MB)` : 'not found'}.`);
L();
writeFileSync(join(ROOT, 'bench/results/docker-isolation.md'), lines.join('\n'));
console.log(lines.join('\n'));
process.exit(0);
