// Benchmark: what a session's own outer uid costs at its start, side by side in one run. Two
// `codemcp start` gateways run by root, one giving each session its own uid
// (CODEMCP_ROOT_UID_BASE, the default: the prototype writes the session's id maps, a pipe
// handshake) and one with CODEMCP_ROOT_UID_BASE=0 (every session as nobody, the session's
// PID 1 maps itself, as before). Rounds interleaved: a new session, its first `result = 1`,
// the session ended; back to back, so that each is a fresh fork from the prototype.
// Usage: node bench/session_uids.mjs [rounds=60]  → bench/results/session_uids.md
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir, cpus, release } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { codemcpBin, stats, fmt, ROOT } from './lib.mjs';

const ROUNDS = Number(process.argv[2] || 60);
const WARMUP = 5;
const SDK = join(ROOT, 'tests/node_modules/@modelcontextprotocol/sdk/dist/esm');
const { Client } = await import(join(SDK, 'client/index.js'));
const { StreamableHTTPClientTransport } = await import(join(SDK, 'client/streamableHttp.js'));

const bin = codemcpBin();
const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-uids-'));
writeFileSync(join(dir, 'mcp.json'), JSON.stringify({ mcp: {} }));

function start(base) {
  return new Promise((resolve, reject) => {
    const p = spawn(bin, ['start', '-p', '0', '--no-auth'], { stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, CODEMCP_CONFIG: join(dir, 'mcp.json'), XDG_CONFIG_HOME: dir, XDG_STATE_HOME: dir,
        CODEMCP_WORKERS: '4', CODEMCP_ROOT_UID_BASE: base } });
    let err = '';
    p.stderr.setEncoding('utf8').on('data', (d) => {
      err += d;
      const m = err.match(/serving MCP over Streamable HTTP at (\S+)/);
      if (m) resolve({ p, url: m[1] });
    });
    p.on('exit', () => reject(new Error(err)));
  });
}

async function newSession(url) {
  const t0 = performance.now();
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const c = new Client({ name: 'bench-uids', version: '1' });
  await c.connect(transport);
  const r = await c.callTool({ name: 'execute_python', arguments: { code: 'result = 1' } });
  const ms = performance.now() - t0;
  if (r.isError) throw new Error(JSON.stringify(r));
  await transport.terminateSession().catch(() => {});
  await c.close();
  return ms;
}

if (process.getuid() !== 0) throw new Error('run as root: CODEMCP_ROOT_UID_BASE is for a root gateway');
const gws = { own: await start('2100000000'), nobody: await start('0') };
const t = { own: [], nobody: [] };
for (let i = 0; i < ROUNDS + WARMUP; i++) {
  for (const k of i % 2 ? ['own', 'nobody'] : ['nobody', 'own']) {
    const ms = await newSession(gws[k].url);
    if (i >= WARMUP) t[k].push(ms);
  }
}
for (const g of Object.values(gws)) g.p.kill('SIGTERM');
const own = stats(t.own), nob = stats(t.nobody);
const md = `# A session's own uid: its start (bench/session_uids.mjs)

${new Date().toISOString()}, ${cpus().length} CPUs, kernel ${release()}, ${ROUNDS} interleaved rounds, as root.
New HTTP session, back to back → its first \`result = 1\` answered (connect included), ms:

| gateway | min | median | p99 |
|---|---|---|---|
| own uid per session (CODEMCP_ROOT_UID_BASE=2100000000) | ${fmt(own.min, 2)} | ${fmt(own.median, 2)} | ${fmt(own.p99, 2)} |
| every session as nobody (CODEMCP_ROOT_UID_BASE=0) | ${fmt(nob.min, 2)} | ${fmt(nob.median, 2)} | ${fmt(nob.p99, 2)} |
| ratio | ${fmt(own.min / nob.min, 3)}× | ${fmt(own.median / nob.median, 3)}× | |
`;
writeFileSync(join(ROOT, 'bench/results/session_uids.md'), md);
console.log(md);
