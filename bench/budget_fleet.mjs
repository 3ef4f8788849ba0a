// How far a principal can go past a call budget across two `codemcp start` replicas sharing a
// private redis-server (CODEMCP_STATE), the worst case docs/policy.md bounds: both replicas
// spend the same principal's budget at once, as fast as one program each can call, and the
// admitted calls are added up (and checked against Redis's count). The documented bound per
// other replica is limit/8 plus what arrives during one Redis round trip.
// Usage: node bench/budget_fleet.mjs [limits=40,200,1000] [repeats=3]
// Writes bench/results/budget-fleet.md.
import fs from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { Proc, connectHttp, ms, servers, tempDir, waitFor, writeConfig } from '../tests/e2e/lib.mjs';
import { startRedis } from '../tests/fixtures/redis_server.mjs';
import { ROOT } from './lib.mjs';

const LIMITS = (process.argv[2] || '40,200,1000').split(',').map(Number);
const REPEATS = Number(process.argv[3] || 3);
const TOKEN = 'a'.repeat(40);
const SPEND = (k) => `ok = 0
for i in range(${k}):
    try:
        r = fake_echo(text="x")
        r = r.result() if hasattr(r, "result") else r
        ok += 1
    except ToolError:
        break
result = ok`;

async function replica(redis, limit) {
  const home = tempDir('codemcp-bench-budget-');
  const tokens = path.join(home, 'tokens');
  fs.writeFileSync(tokens, `alice ${TOKEN}\n`, { mode: 0o600 });
  const config = writeConfig(home, { fake: servers.fake() });
  const cfg = JSON.parse(fs.readFileSync(config, 'utf8'));
  cfg.budgets = [{ name: 'alice', principal: 'alice', window_s: 3600, calls: limit }];
  fs.writeFileSync(config, JSON.stringify(cfg));
  const proc = new Proc({ args: ['start', '-p', '0'], config, home,
    env: { CODEMCP_HTTP_TOKENS_FILE: tokens, CODEMCP_STATE: redis.url, CODEMCP_LOG: 'info' } });
  const m = await waitFor(() => proc.stderr.match(/serving MCP over Streamable HTTP at (\S+)/), ms(20000));
  await waitFor(() => /shared state in redis/.test(proc.stderr), ms(10000));
  const client = await connectHttp(m[1], TOKEN);
  await waitFor(async () => (await client.listTools()).tools[0].description.includes('fake_echo'), ms(30000), 200);
  return { proc, client };
}

const run = async (c, code) => JSON.parse((await c.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(120000) })).content[0].text).result;

const rows = [];
const load0 = loadavg()[0];
for (const limit of LIMITS) {
  for (let r = 0; r < REPEATS; r++) {
    const redis = await startRedis();
    const gws = [await replica(redis, limit), await replica(redis, limit)];
    const t0 = Date.now();
    const got = await Promise.all(gws.map((g) => run(g.client, SPEND(limit * 2))));
    const secs = (Date.now() - t0) / 1000;
    await new Promise((res) => setTimeout(res, 3000));
    const key = redis.cli('KEYS', 'codemcp:budget:*').split('\n')[0];
    rows.push({ limit, a: got[0], b: got[1], redis: Number(redis.cli('GET', key)), rate: (got[0] + got[1]) / secs });
    for (const g of gws) {
      await g.client.close();
      g.proc.child.kill('SIGTERM');
      await g.proc.exited;
    }
    await redis.close();
    console.log(JSON.stringify(rows.at(-1)));
  }
}
let out = `# Budgets across a fleet: overshoot with two replicas spending one principal's budget at once

bench/budget_fleet.mjs, ${new Date().toISOString()}: two \`codemcp start\` replicas on one private
redis-server, one principal with \`calls: LIMIT\` per hour; each replica runs one program calling
fake_echo up to 2 × LIMIT times as fast as it can, both at once. Machine: load average
${load0.toFixed(2)} → ${loadavg()[0].toFixed(2)} (2 cores shared with other work).
Documented bound (docs/policy.md): LIMIT + limit/8 per other replica + what arrives in one round trip.

| limit | admitted on a | on b | total | over | bound (limit/8) | Redis count | calls/s (both) |
|---|---|---|---|---|---|---|---|
`;
for (const x of rows)
  out += `| ${x.limit} | ${x.a} | ${x.b} | ${x.a + x.b} | ${x.a + x.b - x.limit} | ${Math.floor(x.limit / 8)} | ${x.redis} | ${x.rate.toFixed(0)} |\n`;
out += '\nWithout CODEMCP_STATE each replica counts alone, so the same run would admit 2 × LIMIT (not run here; tests/e2e/fleet_state.test.mjs checks it).\n';
fs.writeFileSync(path.join(ROOT, 'bench', 'results', 'budget-fleet.md'), out);
console.log(out);
