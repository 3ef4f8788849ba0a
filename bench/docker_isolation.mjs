// Benchmark: what CODEMCP_ISOLATION=docker costs next to the sandbox (the default), side by
// side in one run, on Docker and (when podman is installed and this is root) on Podman's
// Docker-compatible service, which the benchmark starts on a socket of its own and stops.
//   1. bench/execute.mjs's workloads (1 call, 50 sequential, 50 concurrent calls to
//      server-everything's get-sum, and the empty program) on one stdio gateway per arm,
//      rounds interleaved.
//   2. The first run of a new session: a fresh stdio gateway spawned → its first empty run
//      answered (the worker's start: a fork from the prototype, or a container's create +
//      start + connect), the arms alternating.
//   3. The worker image: its build on first use (the image removed first) and its size, per
//      engine.
// Needs a Docker daemon on /var/run/docker.sock (or DOCKER_HOST=unix://…) and
// debian:bookworm-slim in each engine (contrib/docker/make-base.sh [--engine podman]).
// Usage: node bench/docker_isolation.mjs [rounds=30]  → bench/results/docker-isolation.md
import { writeFileSync, mkdtempSync, existsSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { tmpdir, cpus } from 'node:os';
import http from 'node:http';
import { join } from 'node:path';
import { SERVERS, codemcpBin, stats, fmt, ROOT, untilSdkReady, EXEC_PY, EXEC_EXPECT, buildType } from './lib.mjs';

const ROUNDS = Number(process.argv[2] || 30);
const WARMUP = 3;
const SDK = join(ROOT, 'tests/node_modules/@modelcontextprotocol/sdk/dist/esm');
const { Client } = await import(join(SDK, 'client/index.js'));
const { StdioClientTransport, getDefaultEnvironment } = await import(join(SDK, 'client/stdio.js'));
const DOCKER_HOST = process.env.DOCKER_HOST || 'unix:///var/run/docker.sock';

const bin = codemcpBin();
const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-dock-'));
const cfg = join(dir, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcp: { everything: { type: 'local', command: SERVERS.everything } } }));
const empty = join(dir, 'empty.json');
writeFileSync(empty, JSON.stringify({ mcp: {} }));
const now = () => performance.now();
const sleep = (n) => new Promise((r) => setTimeout(r, n));

// The arms: name → the gateway's isolation and DOCKER_HOST.
const ARMS = { docker: { iso: 'docker', host: DOCKER_HOST }, sandbox: { iso: 'sandbox' } };
let podman = null;
if (process.getuid() === 0 && spawnSync('podman', ['--version']).status === 0) {
  const sock = join(dir, 'podman.sock');
  podman = spawn('podman', ['system', 'service', '--time=0', `unix://${sock}`], { cwd: dir, stdio: 'ignore' });
  for (let i = 0; i < 100 && !existsSync(sock); i++) await sleep(100);
  ARMS.podman = { iso: 'docker', host: `unix://${sock}` };
}
const MODES = Object.keys(ARMS);
const ENGINES = MODES.filter((m) => ARMS[m].host);
const bare = (t) => t.replace(/^(localhost|docker\.io\/library)\//, '');

function engine(arm, method, path) {
  return new Promise((resolve, reject) => {
    const rq = http.request({ socketPath: ARMS[arm].host.replace(/^unix:\/\//, ''), method, path }, (res) => {
      let t = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (t += d));
      res.on('end', () => { let b = t; try { b = JSON.parse(t); } catch { /* text */ } resolve({ status: res.statusCode, body: b }); });
    });
    rq.on('error', reject);
    rq.end();
  });
}
async function connect(arm, config = cfg) {
  const { iso, host } = ARMS[arm];
  const transport = new StdioClientTransport({ command: bin, args: [],
    env: { ...getDefaultEnvironment(), CODEMCP_CONFIG: config, CODEMCP_ISOLATION: iso, ...(host ? { DOCKER_HOST: host } : {}) },
    stderr: 'ignore' });
  const client = new Client({ name: `bench-${arm}`, version: '1' });
  await client.connect(transport);
  return { client, pid: transport.pid };
}
async function run(client, code) {
  const r = await client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: 600000 });
  if (r.isError) throw new Error(JSON.stringify(r.structuredContent ?? r.content));
  return r.structuredContent.result;
}
// ---- 3 first: the image built on first use (nothing else runs yet) --------------------------
const isWorker = (i) => (i.RepoTags || []).some((t) => bare(t).startsWith('codemcp-worker:'));
const built = {};
for (const e of ENGINES) {
  for (const i of (await engine(e, 'GET', '/images/json')).body.filter(isWorker)) await engine(e, 'DELETE', `/images/${i.Id}?force=1`);
  const t0 = now();
  const firstUse = await connect(e, empty);
  await run(firstUse.client, EXEC_PY.empty);
  built[e] = { ms: now() - t0 };
  await firstUse.client.close();
  built[e].img = (await engine(e, 'GET', '/images/json')).body.find(isWorker);
}

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
const cold = Object.fromEntries(MODES.map((m) => [m, []]));
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
const others = MODES.filter((m) => m !== 'sandbox');
L(`# CODEMCP_ISOLATION=docker (${others.join(', ')}) vs sandbox`);
L();
L(`bench/docker_isolation.mjs, ${ROUNDS} interleaved rounds (+${WARMUP} warm-up), ${cpus().length} CPUs, ` +
  `${buildType(bin)} build, ${new Date().toISOString().slice(0, 16)}Z. Times in ms; ratios against the sandbox.`);
L();
L(`| workload | ${MODES.map((m) => `${m} p50`).join(' | ')} | ${others.map((m) => `${m}/sandbox`).join(' | ')} | ${MODES.map((m) => `${m} p99`).join(' | ')} |`);
L(`|---|${MODES.map(() => '---|').join('')}${others.map(() => '---|').join('')}${MODES.map(() => '---|').join('')}`);
const row = (name, v, digits, tail) => {
  const st = Object.fromEntries(MODES.map((m) => [m, stats(v[m])]));
  L(`| ${name} | ${MODES.map((m) => fmt(st[m].median, digits)).join(' | ')} | ` +
    `${others.map((m) => `${fmt(st[m].median / st.sandbox.median, 3)}×`).join(' | ')} | ${MODES.map((m) => fmt(st[m][tail], digits)).join(' | ')} |`);
};
for (const w of W) row(w, samples[w], 2, 'p99');
L();
L(`| event | ${MODES.map((m) => `${m} p50`).join(' | ')} | ${others.map((m) => `${m}/sandbox`).join(' | ')} | ${MODES.map((m) => `${m} max`).join(' | ')} |`);
L(`|---|${MODES.map(() => '---|').join('')}${others.map(() => '---|').join('')}${MODES.map(() => '---|').join('')}`);
row('a new session\'s first run: stdio gateway spawned → first empty run answered', cold, 1, 'max');
L();
for (const e of ENGINES) {
  const img = built[e].img;
  L(`The worker image on ${e}, built on first use (image removed first; gateway spawned → first empty run answered): ` +
    `${fmt(built[e].ms, 0)} ms; ${img ? `${bare(img.RepoTags[0])}: ${fmt(img.Size / 1e6, 1)} MB` : 'not found'}.`);
}
L();
writeFileSync(join(ROOT, 'bench/results/docker-isolation.md'), lines.join('\n'));
console.log(lines.join('\n'));
podman?.kill();
process.exit(0);
