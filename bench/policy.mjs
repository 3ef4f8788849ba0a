// Per-call cost of policy decisions: the same binary four times side by side — no policy;
// 100 rules that all name the called tool (every one evaluated, the last allows); an external
// engine on loopback (CODEMCP_AUTHZ_URL, a node service in this process speaking OPA's Data
// API) asked about every call; the same engine answering with cache_ttl_ms, so each distinct
// call is asked once — each with its own worker and server-everything.
// Workload: one execute of 50 sequential everything_get_sum calls; arms alternate in short
// blocks so a busy phase of the shared machine hits all of them. Reported: wall time per call
// and the gateway's own CPU per call (schedstat of its threads), as ratios to no policy.
// Usage: node bench/policy.mjs [blocks=8] [executes per block=10] > bench/results/policy.md
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import http from 'node:http';
import { LinePeer, SERVERS, codemcpBin, EXEC_PY, EXEC_N, untilSdkReady, cpuNs } from './lib.mjs';

const BLOCKS = Number(process.argv[2] || 8);
const PER = Number(process.argv[3] || 10);
const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-policy-'));
const mcp = { everything: { type: 'local', command: SERVERS.everything } };

/** 100 rules naming everything/get_sum: a third fail on the principal, a third on an argument
 *  value, a third on a regex over a number (cannot be judged: an allow rule does not match);
 *  the last allows. */
function hundredRules() {
  const rules = [];
  for (let i = 0; i < 99; i++) {
    const base = { name: `r${i}`, server: 'everything', tool: ['get_*', 'echo'] };
    if (i % 3 === 0) rules.push({ ...base, principal: [`svc-${i}-*`, 'ci'], effect: 'deny' });
    else if (i % 3 === 1) rules.push({ ...base, args: { b: { one_of: [1] }, a: { range: [-1e9, -1] } }, effect: 'deny' });
    else rules.push({ ...base, args: { a: { regex: `(\\d+|x{1,9})*${i}` } }, effect: 'allow' });
  }
  rules.push({ name: 'sums', server: 'everything', tool: 'get_sum', args: { a: { range: [0, null] } }, effect: 'allow' });
  return { rules };
}

/** The engine: allows everything; on /cached it lets the answer be reused for a minute. */
const engine = http.createServer((req, res) => {
  let body = '';
  req.on('data', (d) => { body += d; });
  req.on('end', () => {
    const allow = JSON.parse(body).input?.server === 'everything';
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(req.url === '/cached' ? { result: { allow, cache_ttl_ms: 60000 } } : { result: allow }));
  });
});
await new Promise((r) => engine.listen(0, '127.0.0.1', r));
const engineUrl = (p) => `http://127.0.0.1:${engine.address().port}${p}`;

const arms = {
  none: [{}, {}],
  rules100: [{ policy: hundredRules() }, {}],
  engine: [{}, { CODEMCP_AUTHZ_URL: engineUrl('/uncached') }],
  engine_cached: [{}, { CODEMCP_AUTHZ_URL: engineUrl('/cached') }],
};
const peers = {};
for (const [name, [extra, env]] of Object.entries(arms)) {
  const cfg = join(dir, `${name}.json`);
  writeFileSync(cfg, JSON.stringify({ ...extra, mcp }));
  const p = new LinePeer([codemcpBin(), '--config', cfg], { CODEMCP_LOG_LEVEL: 'error', ...env });
  await p.initialize();
  peers[name] = p;
}
const run = async (p) => {
  const r = await p.request('tools/call', { name: 'execute_python', arguments: { code: EXEC_PY.seq50 } });
  const env = r.result?.structuredContent;
  if (r.error || r.result?.isError || env?.result !== (EXEC_N * (EXEC_N + 1)) / 2)
    throw new Error(JSON.stringify(r.error ?? r.result).slice(0, 400));
};
for (const p of Object.values(peers)) {
  await untilSdkReady(() => run(p));
  for (let i = 0; i < 3; i++) await run(p);
}
const wall = {}, cpu = {};
for (let b = 0; b < BLOCKS; b++) {
  const order = b % 2 ? Object.keys(peers).reverse() : Object.keys(peers);
  for (const a of order) {
    const p = peers[a];
    const c0 = cpuNs(p.proc.pid), t0 = process.hrtime.bigint();
    for (let i = 0; i < PER; i++) await run(p);
    wall[a] = (wall[a] ?? 0) + Number(process.hrtime.bigint() - t0);
    cpu[a] = (cpu[a] ?? 0) + cpuNs(p.proc.pid) - c0;
  }
}
const calls = BLOCKS * PER * EXEC_N;
console.log(`Per tool call, ${calls} calls per arm (${BLOCKS} alternating blocks of ${PER} executes of ${EXEC_N} sequential calls), one run, ${new Date().toISOString()}\n`);
console.log('| arm | wall µs/call | × none | gateway CPU µs/call | × none |');
console.log('|---|---|---|---|---|');
for (const a of Object.keys(peers)) {
  const w = wall[a] / calls / 1000, c = cpu[a] / calls / 1000;
  const w0 = wall.none / calls / 1000, c0 = cpu.none / calls / 1000;
  console.log(`| ${a} | ${w.toFixed(1)} | ${(w / w0).toFixed(3)}× | ${c.toFixed(1)} | ${(c / c0).toFixed(3)}× |`);
}
for (const p of Object.values(peers)) await p.close();
engine.close();
process.exit(0);
