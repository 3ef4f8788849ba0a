// Before/after benchmark: bench/execute.mjs's execute_python workloads (1 call, 50 sequential,
// 50 concurrent get-sum calls, the empty program) run by two codemcp binaries side by side in
// one run: `base` (CODEMCP_BASE_BIN, e.g. a build of main) and `head` (CODEMCP_BIN, default
// build/src/codemcp), plus `control`, a second instance of the base binary: control/base is the
// noise of the machine measured in the same rounds as head/base (an A/A inside the A/B). Each
// arm is its own gateway with its own worker and its own server-everything child, driven by the
// official SDK client over stdio. In every round each workload runs once per arm, the arm order
// rotating round by round; a ratio is the median over rounds of the two arms' times in the same
// round (paired: a slow phase of a shared machine hits both). The whole thing is repeated
// `repeats` times with fresh processes (start order rotated too); the pooled ratios and the
// spread of the per-repeat ratios are reported, and the CPU per execute (schedstat) of the
// gateway, its worker and its upstream.
// Usage: CODEMCP_BASE_BIN=/path/to/old/codemcp CODEMCP_CONTROL_BIN=/copy/of/old/codemcp \
//          node bench/execute_ab.mjs [rounds=40] [repeats=6]
//        → bench/results/execute_ab.md (BENCH_OUT=<file>.md picks another file in bench/results/;
//        BENCH_WORKLOADS=one,empty runs a subset; BENCH_HOGS=2 keeps that many busy loops
//        running throughout, to measure both builds on CPUs something else holds;
//        BENCH_HEAD_ENV='{"CODEMCP_AUDIT_LOG":"{dir}/audit.log"}' sets variables for the head arm
//        only ({dir}: the run's temporary directory), so one binary can be measured with a
//        feature on (head) and off (base): CODEMCP_BASE_BIN = CODEMCP_BIN; BENCH_BASE_ENV the
//        same for the base arm (e.g. '{"CODEMCP_METRICS":"off"}' to turn off what is on by default);
//        BENCH_OTLP=1: the head arm exports OpenTelemetry traces (CODEMCP_OTLP_ENDPOINT, protobuf,
//        default batching) to a receiver in this process that answers 200 and counts what it got)
import { writeFileSync, mkdtempSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import { SERVERS, codemcpBin, stats, fmt, ROOT, cpuNs, workerPids, upstreamPids, cpuNsAll, buildType, schedNote,
  startExecArm } from './lib.mjs';

const ROUNDS = Number(process.argv[2] || 40);
const REPEATS = Number(process.argv[3] || 6);
const WARMUP = 5;
const LIMIT = 1.03; // the issue's bar: no workload slower than this, head / base

const head = codemcpBin();
// The control arm (BENCH_CONTROL=1) is off by default: measured here, an arm that runs right
// after an arm of the same program is faster (warm caches and branch predictors for the same
// code at the same addresses; the binaries are not PIE), so with two arms of the base program
// in the rotation, control/base came out 0.90-0.95x and head/base 1.04-1.12x on the small
// workloads while base against itself three times gave 0.99-1.01x. Two arms alternating order
// (each follows the other as often as itself) are fair; an A/A run measures the noise.
const CONTROL = process.env.BENCH_CONTROL === '1';
const BINS = { base: process.env.CODEMCP_BASE_BIN, control: process.env.CODEMCP_CONTROL_BIN || process.env.CODEMCP_BASE_BIN, head };
if (!BINS.base) throw new Error('set CODEMCP_BASE_BIN to the codemcp binary to compare against');
const ARMS = CONTROL ? ['base', 'control', 'head'] : ['base', 'head'];
const OTHERS = ARMS.filter((a) => a !== 'base');
const WORKLOADS = (process.env.BENCH_WORKLOADS || 'one,seq50,conc50,empty').split(','); // a subset: BENCH_WORKLOADS=empty
const LABEL = { one: '1 call', seq50: '50 sequential', conc50: '50 concurrent', empty: 'empty program' };
const rotate = (list, k) => list.map((_, i) => list[(i + k) % list.length]);

// BENCH_HOGS=N: N shell busy loops (default nice) for the whole run, killed at its end, loop i
// pinned to CPU i mod the CPUs. Each loop also ends once this process is gone (kill -0 is a
// builtin: no fork), so a run stopped by a signal leaves no loop behind. Measured on this 2-vCPU VM, such runs are noise-bound: an A/A
// run (the same build in both arms) read 1.03-1.47x with free loops and 0.79-1.44x per repeat
// with pinned ones (results/execute_ab_hogs_aa*.md); add repeats and BENCH_CONTROL=1.
const HOGS = Number(process.env.BENCH_HOGS || 0);
const hogs = Array.from({ length: HOGS }, (_, i) =>
  spawn('taskset', ['-c', String(i % cpus().length), 'sh', '-c', `while kill -0 ${process.pid} 2>/dev/null; do :; done`],
    { stdio: 'ignore' }));
const stopHogs = () => hogs.forEach((h) => h.kill('SIGKILL'));
process.on('exit', stopHogs); // on an error; a live child keeps the loop (and 'exit') from coming

const OTLP = process.env.BENCH_OTLP === '1' ? await otlpSink() : null;
async function otlpSink() {
  const { createServer } = await import('node:http');
  const sink = { requests: 0, bytes: 0 };
  const srv = createServer((req, res) => {
    req.on('data', (c) => (sink.bytes += c.length));
    req.on('end', () => { sink.requests++; res.writeHead(200, { 'content-type': 'application/x-protobuf' }); res.end(); });
  });
  await new Promise((ok) => srv.listen(0, '127.0.0.1', ok));
  sink.url = `http://127.0.0.1:${srv.address().port}`;
  sink.close = () => { srv.closeAllConnections(); srv.close(); };
  return sink;
}

const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-ab-'));
const armEnv = (json) => Object.fromEntries(Object.entries(JSON.parse(json || '{}'))
  .map(([k, v]) => [k, String(v).replaceAll('{dir}', dir)]));
const HEAD_ENV = armEnv(process.env.BENCH_HEAD_ENV);
const BASE_ENV = armEnv(process.env.BENCH_BASE_ENV);
const cfg = join(dir, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcp: { everything: { type: 'local', command: SERVERS.everything } } }));

async function startArm(name) {
  // Each binary finds the worker built next to it, never one named by the caller's environment.
  const arm = await startExecArm(BINS[name], { CODEMCP_CONFIG: cfg, ...(name === 'head' ? HEAD_ENV : BASE_ENV),
    ...(OTLP && name === 'head' ? { CODEMCP_OTLP_ENDPOINT: OTLP.url } : {}) },
    `ab-${name}`);
  return { ...arm, worker: workerPids(arm.pid), upstream: upstreamPids(arm.pid) }; // all of them: the sandboxed worker is a grandchild
}

// samples[w][arm] = ms over all repeats (same index = same round); per[rep][w][arm] = the
// repeat's paired median of arm/base.
const samples = Object.fromEntries(WORKLOADS.map((w) => [w, { base: [], control: [], head: [] }]));
const cpu = Object.fromEntries(WORKLOADS.map((w) => [w, { base: 0, control: 0, head: 0 }]));
const wcpu = Object.fromEntries(WORKLOADS.map((w) => [w, { base: 0, control: 0, head: 0 }])); // the worker's
const ucpu = Object.fromEntries(WORKLOADS.map((w) => [w, { base: 0, control: 0, head: 0 }])); // the upstreams'
const per = [];
const loads = [];
for (let rep = 0; rep < REPEATS; rep++) {
  const arms = {};
  for (const a of rotate(ARMS, rep)) arms[a] = await startArm(a);
  const ratios = Object.fromEntries(WORKLOADS.map((w) => [w, Object.fromEntries(OTHERS.map((a) => [a, []]))]));
  for (let r = -WARMUP; r < ROUNDS; r++) {
    for (const w of WORKLOADS) {
      const ms = {};
      for (const a of rotate(ARMS, r + WARMUP + rep)) {
        const c0 = cpuNs(arms[a].pid), k0 = cpuNsAll(arms[a].worker), u0 = cpuNsAll(arms[a].upstream);
        const t0 = performance.now();
        await arms[a].run(w);
        ms[a] = performance.now() - t0;
        if (r >= 0) cpu[w][a] += cpuNs(arms[a].pid) - c0;
        if (r >= 0) wcpu[w][a] += cpuNsAll(arms[a].worker) - k0;
        if (r >= 0) ucpu[w][a] += cpuNsAll(arms[a].upstream) - u0;
      }
      if (r < 0) continue;
      for (const a of ARMS) samples[w][a].push(ms[a]);
      for (const a of OTHERS) ratios[w][a].push(ms[a] / ms.base);
    }
  }
  per.push(Object.fromEntries(WORKLOADS.map((w) => [w,
    Object.fromEntries(OTHERS.map((a) => [a, stats(ratios[w][a]).median]))])));
  loads.push(loadavg()[0]);
  for (const a of ARMS) await arms[a].client.close();
  console.error(`repeat ${rep + 1}/${REPEATS} (load ${fmt(loads[rep])}): ` +
    WORKLOADS.map((w) => OTHERS.map((a) => `${w} ${a} ${fmt(per[rep][w][a], 3)}×`).join(' ')).join(', '));
}

// ---- report ----
const pooled = (w, a) => stats(samples[w][a].map((x, i) => x / samples[w].base[i])).median;
const spread = (w, a) => {
  const xs = per.map((p) => p[w][a]);
  return `${fmt(stats(xs).median, 3)}× (${fmt(Math.min(...xs), 3)}–${fmt(Math.max(...xs), 3)})`;
};
const rev = (() => { try { return execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(); } catch { return '?'; } })();
const n = ROUNDS * REPEATS;
const us = (w, a) => cpu[w][a] / 1e3 / n;
const wus = (w, a) => wcpu[w][a] / 1e3 / n;
const uus = (w, a) => ucpu[w][a] / 1e3 / n;
const rows = WORKLOADS.map((w) => {
  const b = stats(samples[w].base), h = stats(samples[w].head);
  const c = (f) => ARMS.map((a) => fmt(f(w, a), 0)).join(' / ');
  return `| ${LABEL[w]} | ${fmt(b.median, 2)} | ${fmt(h.median, 2)} | **${fmt(pooled(w, 'head'), 3)}×** | ` +
    (CONTROL ? `${fmt(pooled(w, 'control'), 3)}× | ` : '') + `${spread(w, 'head')} | ` +
    (CONTROL ? `${spread(w, 'control')} | ` : '') + `${c(us)} | ${c(wus)} | ${c(uus)} | ` +
    `${pooled(w, 'head') <= LIMIT ? 'met' : '**missed**'} |`;
});
const report = `# execute_python before/after (bench/execute_ab.mjs)

${new Date().toISOString()} — ${REPEATS} repeats × ${ROUNDS} rounds (after ${WARMUP} warm-up rounds each) on
${cpus().length} × ${cpus()[0]?.model ?? '?'}, load average ${loads.map((l) => fmt(l)).join(', ')} at the end of
each repeat, Node ${process.version}, scheduler ${schedNote()}, at commit ${rev}${HOGS ? `, **with ${HOGS} busy loop${HOGS > 1 ? 's' : ''} (BENCH_HOGS) running throughout**` : ''}. Arms: **base** \`${BINS.base}\` (${buildType(BINS.base)})${CONTROL ? `, **control**
\`${BINS.control}\` (the base program again)` : ''}, **head** \`${BINS.head}\` (${buildType(BINS.head)})${Object.keys(BASE_ENV).length ? ` (base with ${Object.entries(BASE_ENV).map(([k, v]) => `\`${k}=${v}\``).join(', ')})` : ''}${Object.keys(HEAD_ENV).length ? ` with ${Object.entries(HEAD_ENV).map(([k, v]) => `\`${k}=${v}\``).join(', ')}` : ''}; fresh gateways, workers and
server-everything children for every repeat. Times in ms, client-side round trip of one
\`tools/call\` of \`execute_python\` (bench/execute.mjs's programs), every answer checked.

| workload | base median | head median | head / base, paired |${CONTROL ? ' control / base |' : ''} head / base per repeat: median (min–max) |${CONTROL ? ' control / base per repeat |' : ''} gateway CPU µs/execute ${ARMS.join(' / ')} | worker CPU µs/execute ${ARMS.join(' / ')} | upstream CPU µs/execute ${ARMS.join(' / ')} | head ≤ ${LIMIT}× |
|---|---|---|---|---|---|---|---|${CONTROL ? '---|---|' : ''}
${rows.join('\n')}

${OTLP ? `**head traces** (BENCH_OTLP=1): CODEMCP_OTLP_ENDPOINT to a receiver in the driver process, which got
${OTLP.requests} export requests, ${OTLP.bytes} bytes; base does not trace.

` : ''}"Paired" is the median over all rounds of arm/base measured in the same round. An A/A run
(CODEMCP_BIN = CODEMCP_BASE_BIN) shows how far the machine alone moves these ratios: a head / base
ratio inside that band says nothing beyond "not measurably different".
`;
writeFileSync(join(ROOT, 'bench', 'results', process.env.BENCH_OUT || 'execute_ab.md'), report);
console.log(report);
stopHogs();
OTLP?.close();
