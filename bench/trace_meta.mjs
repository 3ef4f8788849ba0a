// What an upstream pays for the trace context a gateway passes on: the same tools/call of
// server-everything's get-sum sent straight to it (no codemcp) with and without
// `params._meta.traceparent` (SEP-414), 50 sequential calls per sample (bench/floor's seq50
// shape), the two forms alternating round by round on one server process, so the ratio is
// the upstream's own cost of the context and nothing of the gateway's. The upstream's CPU per
// call is read from /proc/<pid>/task/*/schedstat around each sample. This is the floor under
// any gateway that propagates W3C trace context to this upstream, as issue text and SEP-414 ask.
// Usage: node bench/trace_meta.mjs [rounds=400] → bench/results/trace_meta.md (BENCH_OUT=<file>)
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { LinePeer, SERVERS, ROOT, stats, fmt, cpuNs, EXEC_N } from './lib.mjs';

const ROUNDS = Number(process.argv[2] || 400);
const WARMUP = 20;
// a new span id per call, as a gateway's upstream request spans have
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const spanId = () => randomBytes(8).toString('hex');

const peer = new LinePeer(SERVERS.everything);
await peer.initialize();
const pid = peer.proc.pid;

async function sample(meta) {
  const tps = Array.from({ length: EXEC_N }, () => `00-${TRACE_ID}-${spanId()}-01`); // made before the clock starts
  const c0 = cpuNs(pid), t0 = performance.now();
  for (let i = 0; i < EXEC_N; i++) {
    const params = { name: 'get-sum', arguments: { a: i, b: 1 } };
    if (meta) params._meta = { traceparent: tps[i] };
    const r = await peer.request('tools/call', params);
    const want = `The sum of ${i} and 1 is ${i + 1}.`;
    if (r.result?.content?.[0]?.text !== want) throw new Error(`unexpected answer ${JSON.stringify(r)}`);
  }
  return { ms: performance.now() - t0, cpuUs: (cpuNs(pid) - c0) / 1e3 };
}

const arms = { plain: { ms: [], cpu: [] }, meta: { ms: [], cpu: [] } };
const ratios = [], cpuRatios = [];
for (let r = -WARMUP; r < ROUNDS; r++) {
  const order = r % 2 ? ['meta', 'plain'] : ['plain', 'meta'];
  const got = {};
  for (const a of order) got[a] = await sample(a === 'meta');
  if (r < 0) continue;
  for (const a of order) { arms[a].ms.push(got[a].ms); arms[a].cpu.push(got[a].cpuUs); }
  ratios.push(got.meta.ms / got.plain.ms);
  cpuRatios.push(got.meta.cpuUs / got.plain.cpuUs);
}
await peer.close();

const per = (xs) => fmt(stats(xs).median / EXEC_N, 1);
const report = `# The upstream's own cost of trace context (bench/trace_meta.mjs)

${new Date().toISOString()} — ${ROUNDS} rounds (after ${WARMUP} warm-up rounds) of ${EXEC_N} sequential
\`tools/call\` get-sum straight to server-everything (stdio, no gateway), with and without
\`params._meta.traceparent\`, alternating; ${cpus().length} × ${cpus()[0]?.model ?? '?'}, load average
${fmt(loadavg()[0])} at the end, Node ${process.version}.

| form | median ms per ${EXEC_N} calls | µs per call | upstream CPU µs per call |
|---|---|---|---|
| no \`_meta\` | ${fmt(stats(arms.plain.ms).median, 2)} | ${per(arms.plain.ms.map((x) => x * 1e3))} | ${per(arms.plain.cpu)} |
| \`_meta.traceparent\` | ${fmt(stats(arms.meta.ms).median, 2)} | ${per(arms.meta.ms.map((x) => x * 1e3))} | ${per(arms.meta.cpu)} |

Paired (same round) medians, with \`_meta\` / without: wall **${fmt(stats(ratios).median, 3)}×**, upstream
CPU **${fmt(stats(cpuRatios).median, 3)}×**.
`;
const out = join(ROOT, 'bench', 'results', process.env.BENCH_OUT || 'trace_meta.md');
writeFileSync(out, report);
console.log(report);
