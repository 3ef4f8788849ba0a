// Flood: what one principal's hostile program costs another principal on the same gateway.
// One `codemcp start` (4 workers, the fake upstream) with two principals: bob runs `result = 1`
// back to back, first alone (quiet), then while alice's program attacks the gateway through its
// own worker (tests/fixtures/tenant_attack.mjs: 160,000 result keys to learn, then error text
// and junk frames on its control socket). tests/e2e/hostile_tenants.test.mjs runs the same
// attack and asserts what does not depend on the machine's speed; the latency bob sees is
// measured here. Arms: `head` (CODEMCP_BIN) and, when set, `before` (CODEMCP_BIN_BEFORE, e.g.
// a build of main), fresh gateways each round, arm order rotated round by round, never two
// gateways at once.
// Reports per arm: bob's p50 / p99 / max latency quiet and under the flood (pooled over rounds),
// the attack's duration, the gateway's CPU time during it (every thread) and its peak memory
// (VmHWM) before and after the attack. The machine is shared: the load average is printed with
// the results.
// Usage: node bench/flood.mjs [rounds=2]  → bench/results/flood.md (BENCH_OUT=<file> elsewhere)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, buildType, codemcpBin, cpuNs, fmt, memKiB, startHttpGateway, stats } from './lib.mjs';
import { TENANT_ATTACK } from '../tests/fixtures/tenant_attack.mjs';

const ROUNDS = Number(process.argv[2] || 2);
const QUIET_RUNS = 40;
const OUT = process.env.BENCH_OUT || join(ROOT, 'bench/results/flood.md');
const ARMS = [{ name: 'head', bin: codemcpBin() },
  ...(process.env.CODEMCP_BIN_BEFORE ? [{ name: 'before', bin: process.env.CODEMCP_BIN_BEFORE }] : [])];
const TOKENS = { alice: 'alice-token-0123456789abcdef', bob: 'bob-token-0123456789abcdef' };
const FAKE = join(ROOT, 'tests/fixtures/fake_upstream.py');
const SDK = join(ROOT, 'tests/node_modules/@modelcontextprotocol/sdk/dist/esm');
const { Client } = await import(join(SDK, 'client/index.js'));
const { StreamableHTTPClientTransport } = await import(join(SDK, 'client/streamableHttp.js'));


async function session(url, token) {
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { authorization: `Bearer ${token}` } } });
  const client = new Client({ name: 'bench-flood', version: '0' });
  await client.connect(transport);
  const run = async (code) => {
    const r = await client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: 300000 });
    const e = r.structuredContent ?? JSON.parse(r.content[0].text);
    return e;
  };
  return { run, close: () => client.close() };
}

async function timedOne(bob) {
  const t = process.hrtime.bigint();
  const e = await bob.run('result = 1');
  if (e.result !== 1) throw new Error(`bob's program failed: ${JSON.stringify(e).slice(0, 300)}`);
  return Number(process.hrtime.bigint() - t) / 1e6;
}

async function round(arm, dir) {
  const home = mkdtempSync(join(dir, `${arm.name}-`));
  const cfg = join(home, 'mcp.json');
  writeFileSync(cfg, JSON.stringify({ mcp: { fake: { type: 'local', command: ['/usr/bin/python3', FAKE] } } }));
  const tokens = join(home, 'tokens');
  writeFileSync(tokens, Object.entries(TOKENS).map(([who, t]) => `${who} ${t}\n`).join(''), { mode: 0o600 });
  const env = { PATH: process.env.PATH, HOME: home, CODEMCP_HTTP_TOKENS_FILE: tokens, CODEMCP_WORKERS: '4',
    CODEMCP_EXEC_TIMEOUT_MS: '120000', CODEMCP_USAGE_FILE: 'off' };
  const g = await startHttpGateway([arm.bin, 'start', '-p', '0', '--config', cfg], env);
  try {
    const alice = await session(g.url, TOKENS.alice), bob = await session(g.url, TOKENS.bob);
    for (let i = 0; i < 50 && (await alice.run('result = fake_echo(text="1")')).result !== 1; i++)
      await new Promise((r) => setTimeout(r, 200)); // the upstream is connected
    await bob.run('result = 1');
    const quiet = [];
    for (let i = 0; i < QUIET_RUNS; i++) quiet.push(await timedOne(bob));
    const peakBefore = memKiB(g.proc.pid).hwm;
    const t0 = process.hrtime.bigint(), cpu0 = cpuNs(g.proc.pid);
    let done = false;
    const attack = alice.run(TENANT_ATTACK).finally(() => { done = true; });
    const flood = [];
    while (!done || flood.length < QUIET_RUNS) flood.push(await timedOne(bob));
    const a = await attack;
    if (a.result !== 'done') throw new Error(`the attack failed: ${JSON.stringify(a).slice(0, 300)}`);
    const attackMs = Number(process.hrtime.bigint() - t0) / 1e6;
    const peakAfter = memKiB(g.proc.pid).hwm, cpuMs = (cpuNs(g.proc.pid) - cpu0) / 1e6;
    await alice.close();
    await bob.close();
    return { quiet, flood, attackMs, cpuMs, peakBefore, peakAfter };
  } finally {
    g.proc.kill('SIGKILL');
  }
}

const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-flood-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const results = Object.fromEntries(ARMS.map((a) => [a.name, { quiet: [], flood: [], attackMs: [], cpuMs: [], peakBefore: [], peakAfter: [] }]));
for (let r = 0; r < ROUNDS; r++) {
  const order = ARMS.map((_, i) => ARMS[(i + r) % ARMS.length]);
  for (const arm of order) {
    const x = await round(arm, dir);
    const acc = results[arm.name];
    acc.quiet.push(...x.quiet);
    acc.flood.push(...x.flood);
    acc.attackMs.push(x.attackMs);
    acc.cpuMs.push(x.cpuMs);
    acc.peakBefore.push(x.peakBefore / 1024);
    acc.peakAfter.push(x.peakAfter / 1024);
    console.log(`round ${r + 1} ${arm.name}: flood p99 ${fmt(stats(x.flood).p99)} ms over ${x.flood.length} runs, ` +
      `attack ${fmt(x.attackMs / 1000)} s (gateway CPU ${fmt(x.cpuMs / 1000, 2)} s), peak ${fmt(x.peakBefore / 1024, 0)} -> ${fmt(x.peakAfter / 1024, 0)} MB`);
  }
}

const lines = [
  '# One principal floods the gateway, the other runs `result = 1` (bench/flood.mjs)', '',
  `${new Date().toISOString()} — ${ROUNDS} rounds on ${cpus().length} × ${cpus()[0]?.model ?? '?'}, load average ` +
  `${loadavg().map((x) => x.toFixed(1)).join(', ')} at the end (a shared machine: compare arms, not runs). Arms: ` +
  ARMS.map((a) => `**${a.name}** \`${a.bin}\` (${buildType(a.bin)})`).join(', ') + '.', '',
  '| arm | quiet p50 / p99 / max ms | under flood p50 / p99 / max ms | runs under flood | attack s (median) | gateway CPU s during the attack (median) | gateway peak MB before → after the attack (max) |',
  '|---|---|---|---|---|---|---|',
];
for (const arm of ARMS) {
  const x = results[arm.name], q = stats(x.quiet), f = stats(x.flood);
  lines.push(`| ${arm.name} | ${fmt(q.median)} / ${fmt(q.p99)} / ${fmt(q.max)} | ${fmt(f.median)} / ${fmt(f.p99)} / ${fmt(f.max)} | ` +
    `${f.n} | ${fmt(stats(x.attackMs).median / 1000)} | ${fmt(stats(x.cpuMs).median / 1000, 2)} | ${fmt(Math.max(...x.peakBefore), 0)} → ${fmt(Math.max(...x.peakAfter), 0)} |`);
}
writeFileSync(OUT, lines.join('\n') + '\n');
console.log(lines.join('\n'));
process.exit(0);
