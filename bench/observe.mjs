// Benchmark: what the Prometheus metrics cost (src/metrics/).
//  1. execute_python with metrics on (the default) against off (CODEMCP_METRICS=off), the same
//     binary, side by side in one run: bench/floor's workloads (1 get-sum call, 50 sequential,
//     50 concurrent, the empty program; lib.mjs EXEC_PY), each arm its own stdio gateway,
//     worker and server-everything, driven by the official SDK client. In every round each
//     workload runs once per arm, the arm order alternating; a ratio is the median over rounds
//     of on/off in the same round (paired), repeated with fresh processes. Target: on/off ≤ 1.03.
//  2. GET /metrics with 1,000 live series: `codemcp start` in front of a fake upstream listing
//     1,000 tools, one program calling each once (1,000 codemcp_tool_calls_total series), then
//     SCRAPES scrapes timed at the client (keep-alive connection, bearer token), and the gateway's
//     CPU per scrape from schedstat.
//  3. build/bench/metrics_count (bench/metrics_count.c): the counting one tool call makes, in
//     nanoseconds, on against off, and one render of 1,000 series, in-process: on a shared
//     machine the end-to-end ratios above move by more than the metrics could cost, and this
//     says what that cost is.
//  4. The gateway's instructions per execute under callgrind (bench/percall_cg.mjs,
//     CG_TARGET=gateway), on and off: deterministic where the times above are not.
// Usage: node bench/observe.mjs [rounds=30] [repeats=4] [scrapes=300] → bench/results/observe.md
// (CODEMCP_BIN picks the binary; BENCH_WORKLOADS=one,empty runs a subset; BENCH_AA=1 runs off
// in both arms, the noise of the machine; BENCH_CALLGRIND=0 skips part 4)
import { writeFileSync, mkdtempSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import http from 'node:http';
import { execFileSync } from 'node:child_process';
import { SERVERS, codemcpBin, stats, fmt, ROOT, cpuNs, buildType, BENCH_TOKEN, startHttpGateway,
  startExecArm } from './lib.mjs';

const ROUNDS = Number(process.argv[2] || 30);
const REPEATS = Number(process.argv[3] || 4);
const SCRAPES = Number(process.argv[4] || 300);
const WARMUP = 5;
const LIMIT = 1.03;
const SERIES_TOOLS = 1000;
const SDK = join(ROOT, 'tests/node_modules/@modelcontextprotocol/sdk/dist/esm');
const { Client } = await import(join(SDK, 'client/index.js'));
const { StreamableHTTPClientTransport } = await import(join(SDK, 'client/streamableHttp.js'));

const bin = codemcpBin();
const ARMS = ['off', 'on'];
const ENV = { off: { CODEMCP_METRICS: 'off' }, on: process.env.BENCH_AA ? { CODEMCP_METRICS: 'off' } : {} }; // BENCH_AA=1: off in both (the noise)
const WORKLOADS = (process.env.BENCH_WORKLOADS || 'one,seq50,conc50,empty').split(',');
const LABEL = { one: '1 call', seq50: '50 sequential', conc50: '50 concurrent', empty: 'empty program' };
const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-observe-'));
const cfg = join(dir, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcp: { everything: { type: 'local', command: SERVERS.everything } } }));

// ---- 1. execute_python, metrics on vs off ---------------------------------------------------

function startArm(name) {
  return startExecArm(bin, { CODEMCP_CONFIG: cfg, XDG_CONFIG_HOME: dir, XDG_STATE_HOME: dir,
    XDG_RUNTIME_DIR: dir, ...ENV[name] }, `observe-${name}`);
}

const samples = Object.fromEntries(WORKLOADS.map((w) => [w, { off: [], on: [] }]));
const cpu = Object.fromEntries(WORKLOADS.map((w) => [w, { off: 0, on: 0 }]));
const per = [];
const loads = [];
for (let rep = 0; rep < REPEATS; rep++) {
  const arms = {};
  for (const a of rep % 2 ? [...ARMS].reverse() : ARMS) arms[a] = await startArm(a);
  const ratios = Object.fromEntries(WORKLOADS.map((w) => [w, []]));
  for (let r = -WARMUP; r < ROUNDS; r++) {
    for (const w of WORKLOADS) {
      const ms = {};
      for (const a of (r + rep) % 2 ? [...ARMS].reverse() : ARMS) {
        const c0 = cpuNs(arms[a].pid);
        const t0 = performance.now();
        await arms[a].run(w);
        ms[a] = performance.now() - t0;
        if (r >= 0) cpu[w][a] += cpuNs(arms[a].pid) - c0;
      }
      if (r < 0) continue;
      for (const a of ARMS) samples[w][a].push(ms[a]);
      ratios[w].push(ms.on / ms.off);
    }
  }
  per.push(Object.fromEntries(WORKLOADS.map((w) => [w, stats(ratios[w]).median])));
  loads.push(loadavg()[0]);
  for (const a of ARMS) await arms[a].client.close();
  console.error(`repeat ${rep + 1}/${REPEATS} (load ${fmt(loads[rep])}): ` +
    WORKLOADS.map((w) => `${w} ${fmt(per[rep][w], 3)}×`).join(', '));
}

// ---- 2. /metrics with 1,000 live series ------------------------------------------------------

const tools = Array.from({ length: SERIES_TOOLS }, (_, i) => ({ name: `t${i}`, description: `tool ${i}`,
  inputSchema: { type: 'object', properties: {} }, annotations: { readOnlyHint: true } }));
writeFileSync(join(dir, 'tools.json'), JSON.stringify({ tools }));
const cfgMany = join(dir, 'many.json');
writeFileSync(cfgMany, JSON.stringify({ mcp: { fake: { type: 'local',
  command: ['/usr/bin/python3', join(ROOT, 'tests/fixtures/fake_upstream.py'), '--tools-file', join(dir, 'tools.json')] } } }));
const g = await startHttpGateway([bin, 'start', '-p', '0', '-c', cfgMany], { ...process.env,
  XDG_CONFIG_HOME: dir, XDG_STATE_HOME: dir, XDG_RUNTIME_DIR: dir, CODEMCP_HTTP_TOKEN: BENCH_TOKEN,
  CODEMCP_DESCRIBE_BUDGET: 'full', CODEMCP_LIST_WAIT_MS: '120000' });
const hc = new Client({ name: 'bench-observe-series', version: '1' });
await hc.connect(new StreamableHTTPClientTransport(g.url,
  { requestInit: { headers: { authorization: `Bearer ${BENCH_TOKEN}` } } }));
const program = `from codemcp_rt import client\nps = [client.call("fake", "t%d" % i, {}) for i in range(${SERIES_TOOLS})]\n` +
  'result = sum(1 for p in ps if p.result() is not None)';
const filled = await hc.callTool({ name: 'execute_python', arguments: { code: program, timeout_ms: 120000 } },
  undefined, { timeout: 180000 });
if (filled.isError || filled.structuredContent.result !== SERIES_TOOLS)
  throw new Error(`the 1,000 calls failed: ${JSON.stringify(filled.structuredContent ?? filled.content)}`);

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
function scrape() {
  return new Promise((res, rej) => {
    const t0 = performance.now();
    http.get({ host: g.url.hostname, port: g.url.port, path: '/metrics', agent,
      headers: { authorization: `Bearer ${BENCH_TOKEN}` } }, (r) => {
      let body = '';
      r.setEncoding('utf8');
      r.on('data', (d) => (body += d));
      r.on('end', () => (r.statusCode === 200 ? res({ ms: performance.now() - t0, body })
        : rej(new Error(`/metrics: ${r.statusCode}`))));
    }).on('error', rej);
  });
}
const first = await scrape();
const series = first.body.split('\n').filter((l) => l && !l.startsWith('#')).length;
const toolSeries = first.body.split('\n').filter((l) => l.startsWith('codemcp_tool_calls_total{')).length;
for (let k = 0; k < 20; k++) await scrape();
const scrapeMs = [];
const c0 = cpuNs(g.proc.pid);
for (let k = 0; k < SCRAPES; k++) scrapeMs.push((await scrape()).ms);
const scrapeCpuUs = (cpuNs(g.proc.pid) - c0) / 1e3 / SCRAPES;
await hc.close();
agent.destroy();
g.proc.kill('SIGTERM');

const counter = join(dirname(bin), '..', 'bench', 'metrics_count');
const counting = execFileSync(counter, [], { encoding: 'utf8' }).trim();

// ---- 4. the gateway's instructions per execute under callgrind, on and off (deterministic) ----
// bench/percall_cg.mjs with CG_TARGET=gateway, once per arm (BENCH_CALLGRIND=0 skips it).
const cg = {};
if (process.env.BENCH_CALLGRIND !== '0') {
  for (const a of ARMS) {
    const out = execFileSync(process.execPath, [join(ROOT, 'bench', 'percall_cg.mjs'), '10', ...WORKLOADS],
      { encoding: 'utf8', env: { ...process.env, CG_TARGET: 'gateway', CODEMCP_BIN: bin, ...ENV[a] } });
    for (const m of out.matchAll(/^(\w+) (\{.*\})$/gm)) (cg[m[1]] ??= {})[a] = JSON.parse(m[2]).per_execute;
  }
}
const cgRows = Object.entries(cg).map(([w, v]) =>
  `| ${LABEL[w]} | ${v.off} | ${v.on} | **${fmt(v.on / v.off, 3)}×** |`);

// ---- report -----------------------------------------------------------------------------------

const pooled = (w) => stats(samples[w].on.map((x, i) => x / samples[w].off[i])).median;
const spread = (w) => {
  const xs = per.map((p) => p[w]);
  return `${fmt(stats(xs).median, 3)}× (${fmt(Math.min(...xs), 3)}–${fmt(Math.max(...xs), 3)})`;
};
const rev = (() => { try { return execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(); } catch { return '?'; } })();
const n = ROUNDS * REPEATS;
const rows = WORKLOADS.map((w) => {
  const o = stats(samples[w].off), m = stats(samples[w].on);
  return `| ${LABEL[w]} | ${fmt(o.median, 2)} | ${fmt(m.median, 2)} | **${fmt(pooled(w), 3)}×** | ${spread(w)} | ` +
    `${fmt(cpu[w].off / 1e3 / n, 0)} / ${fmt(cpu[w].on / 1e3 / n, 0)} | ${pooled(w) <= LIMIT ? 'met' : '**missed**'} |`;
});
const s = stats(scrapeMs);
const sorted = [...scrapeMs].sort((a, b) => a - b);
const p99 = sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))];
const report = `# Metrics on vs off (bench/observe.mjs)

${new Date().toISOString()} — ${REPEATS} repeats × ${ROUNDS} rounds (after ${WARMUP} warm-up rounds each) on
${cpus().length} × ${cpus()[0]?.model ?? '?'}, load average ${loads.map((l) => fmt(l)).join(', ')} at the end of
each repeat, Node ${process.version}, at commit ${rev}, \`${bin}\` (${buildType(bin)}).

## execute_python: metrics on (default) / off (CODEMCP_METRICS=off)

Same binary in both arms; fresh stdio gateways, workers and server-everything children for every
repeat. Times in ms, client-side round trip of one \`tools/call\` of \`execute_python\`
(bench/floor's and bench/execute.mjs's programs), every answer checked.

| workload | off median | on median | on / off, paired | on / off per repeat: median (min–max) | gateway CPU µs/execute off / on | on ≤ ${LIMIT}× |
|---|---|---|---|---|---|---|
${rows.join('\n')}

## GET /metrics with ${series} live series

\`codemcp start\` in front of a fake upstream listing ${SERIES_TOOLS} tools, one program having called each
once: ${toolSeries} \`codemcp_tool_calls_total\` series, ${series} series in all, ${first.body.length} bytes of text.
${SCRAPES} scrapes one after another on one keep-alive connection with the bearer token:

| scrape time median | p99 | min | gateway CPU per scrape |
|---|---|---|---|
| ${fmt(s.median, 3)} ms | ${fmt(p99, 3)} ms | ${fmt(sorted[0], 3)} ms | ${fmt(scrapeCpuUs, 0)} µs |

## The gateway's instructions per execute (callgrind)

The same workloads, 10 executes each after 3 warm-up ones, the gateway under callgrind
(bench/percall_cg.mjs, CG_TARGET=gateway): instructions are not moved by the machine's load.
The gateway is one of the three processes an execute runs through (the worker's Python and the
upstream are the others), so the end-to-end cost of the metrics is a fraction of this ratio.

| workload | instructions off | instructions on | on / off |
|---|---|---|---|
${cgRows.join('\n') || '| (skipped: BENCH_CALLGRIND=0) | | | |'}

## The counting itself (build/bench/metrics_count)

In-process, no I/O: what one tool call adds to the gateway with metrics on (its outcome by
server and tool, its upstream latency), against the gateway CPU per call above (µs per execute
/ 50 for the 50-call workloads). When the machine is shared the end-to-end ratios above spread
by more than this could move them; this line is the cost itself.

\`\`\`
${counting}
\`\`\`
`;
writeFileSync(join(ROOT, 'bench', 'results', 'observe.md'), report);
console.log(report);
process.exit(0);
