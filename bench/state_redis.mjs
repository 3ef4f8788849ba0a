// Per-call latency of execute_python on one `codemcp start` with file state (the default)
// against one with CODEMCP_STATE=redis://… (a private redis-server on loopback), side by side
// in one run: both gateways up at once, rounds of calls interleaved (the order alternating), so
// a slow phase of a shared machine hits both. Each call runs one SDK call (everything's
// get_sum: counted in usage, learned by shapes — the per-call work that shares state).
// Target: Redis-backed state adds at most 0.2 ms per call (nothing on the call's path waits
// for Redis: counts and shapes are written from a queue after the answer).
// Usage: node bench/state_redis.mjs [rounds=30] [calls per round=20]
// Writes bench/results/state-redis.md.
import http from 'node:http';
import { loadavg } from 'node:os';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_TOKEN, ROOT, SERVERS, codemcpBin, fmt, mcpPost, startHttpGateway, stats } from './lib.mjs';
import { startRedis } from '../tests/fixtures/redis_server.mjs';

const ROUNDS = Number(process.argv[2] || 30);
const PER_ROUND = Number(process.argv[3] || 20);
const bin = codemcpBin();
const redis = await startRedis();
const home = mkdtempSync(join(tmpdir(), 'codemcp-bench-state-'));

function config(dir) {
  const p = join(dir, 'mcp.json');
  writeFileSync(p, JSON.stringify({ mcp: { everything: { type: 'local', command: SERVERS.everything } } }));
  return p;
}

async function gateway(name, extra) {
  const dir = mkdtempSync(join(home, `${name}-`));
  const env = { ...process.env, CODEMCP_CONFIG: config(dir), XDG_CONFIG_HOME: dir, XDG_STATE_HOME: dir,
    CODEMCP_HTTP_TOKEN: BENCH_TOKEN, CODEMCP_LOG: 'warn', CODEMCP_WORKERS: '1', ...extra };
  const g = await startHttpGateway([bin, 'start', '-p', '0'], env);
  g.agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let id = 1;
  const init = await mcpPost(g, g.agent, { jsonrpc: '2.0', id: id++, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
  const sh = { 'mcp-session-id': init.headers['mcp-session-id'], 'mcp-protocol-version': '2025-11-25' };
  await mcpPost(g, g.agent, { jsonrpc: '2.0', method: 'notifications/initialized' }, sh);
  g.call = async (code) => {
    const r = await mcpPost(g, g.agent, { jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name: 'execute_python', arguments: { code } } }, sh);
    return r;
  };
  g.name = name;
  return g;
}

const CODE = 'result = everything_get_sum(a=1, b=2)';
async function ready(g) {
  for (let k = 0; k < 400; k++) {
    const r = await g.call(CODE);
    if (r.result && !r.result.isError && /is 3/.test(JSON.stringify(r.result))) return;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error(`${g.name}: everything never answered`);
}

const load0 = loadavg()[0];
const arms = [await gateway('files', {}), await gateway('redis', { CODEMCP_STATE: redis.url })];
for (const g of arms) await ready(g);
for (const g of arms) for (let i = 0; i < 50; i++) await g.call(CODE); // warm up both
const lat = { files: [], redis: [] };
const roundMedians = { files: [], redis: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const g of r % 2 ? [arms[1], arms[0]] : arms) {
    const mine = [];
    for (let i = 0; i < PER_ROUND; i++) {
      const t0 = process.hrtime.bigint();
      const res = await g.call(CODE);
      const dt = Number(process.hrtime.bigint() - t0) / 1e6;
      if (!res.result || res.result.isError) throw new Error(`${g.name}: ${JSON.stringify(res)}`);
      mine.push(dt);
    }
    lat[g.name].push(...mine);
    roundMedians[g.name].push(stats(mine).median);
  }
}
const paired = roundMedians.redis.map((x, i) => x - roundMedians.files[i]);
const sF = stats(lat.files), sR = stats(lat.redis), sP = stats(paired);
const keys = redis.cli('DBSIZE');
const lines = [
  '# Redis-backed state: per-call latency of execute_python',
  '',
  `bench/state_redis.mjs, ${new Date().toISOString()}: ${ROUNDS} rounds × ${PER_ROUND} calls per gateway, interleaved`,
  `(order alternating), one 2025 session each over Streamable HTTP (keep-alive), program \`${CODE}\`.`,
  `Machine: load average ${fmt(load0, 2)} → ${fmt(loadavg()[0], 2)} (2 cores shared with other work). Redis held ${keys} keys at the end.`,
  '',
  '| state | calls | median ms | p99 ms | min ms |',
  '|---|---|---|---|---|',
  `| files (default) | ${sF.n} | ${fmt(sF.median, 3)} | ${fmt(sF.p99, 3)} | ${fmt(sF.min, 3)} |`,
  `| CODEMCP_STATE=redis | ${sR.n} | ${fmt(sR.median, 3)} | ${fmt(sR.p99, 3)} | ${fmt(sR.min, 3)} |`,
  '',
  `Extra per call (redis − files): median of the per-round paired differences ${fmt(sP.median, 3)} ms`,
  `(min ${fmt(sP.min, 3)}, max ${fmt(sP.max, 3)} over ${sP.n} rounds); difference of the overall medians ${fmt(sR.median - sF.median, 3)} ms.`,
  `Target: ≤ 0.2 ms. ${sP.median <= 0.2 ? 'Met.' : 'NOT met.'}`,
];
const out = lines.join('\n') + '\n';
writeFileSync(join(ROOT, 'bench', 'results', 'state-redis.md'), out);
console.log(out);
for (const g of arms) g.proc.kill('SIGTERM');
await redis.close();
process.exit(0);
