// What an upstream pays for the trace context a gateway passes on: the same tools/call of
// server-everything's get-sum sent straight to it (no codemcp) with and without
// `params._meta.traceparent` (SEP-414, a new span id per call), 50 sequential calls per sample
// (bench/floor's seq50 shape). Each form goes to a server process of its own (one process for
// both would let the garbage one form makes be collected while the other is timed), the two
// alternating round by round, so the ratio is the upstream's own cost of the context and
// nothing of the gateway's; two processes differ a little by themselves (where V8 placed
// things), so the whole is repeated with fresh processes and the ratios pooled. Measured once per protocol version: 2025-06-18, and 2025-11-25 with
// the roots capability, the handshake codemcp makes with a server of that era (roots/list is
// answered with no roots, as codemcp does). The upstream's CPU per call is read from
// /proc/<pid>/task/*/schedstat around each sample.
// Usage: node bench/trace_meta.mjs [rounds=200] [repeats=6] → bench/results/trace_meta.md
// (BENCH_OUT=<file>)
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { LinePeer, SERVERS, ROOT, stats, fmt, cpuNs, EXEC_N } from './lib.mjs';

const ROUNDS = Number(process.argv[2] || 200);
const REPEATS = Number(process.argv[3] || 6);
const WARMUP = 20;
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const HANDSHAKES = [
  { version: '2025-06-18', capabilities: {} },
  { version: '2025-11-25', capabilities: { roots: { listChanged: false } } }, // codemcp's
];

/** server-everything after the handshake h; roots/list requests answered with no roots. */
async function server(h) {
  const peer = new LinePeer(SERVERS.everything);
  peer.proc.stdout.on('data', (d) => {
    for (const line of String(d).split('\n')) {
      if (!line.includes('"roots/list"')) continue;
      let m;
      try { m = JSON.parse(line); } catch { continue; }
      peer.proc.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { roots: [] } }) + '\n');
    }
  });
  await peer.request('initialize', { protocolVersion: h.version, capabilities: h.capabilities,
    clientInfo: { name: 'bench', version: '1' } });
  peer.notify('notifications/initialized');
  return peer;
}

async function sample(peer, meta) {
  const pid = peer.proc.pid;
  const tps = Array.from({ length: EXEC_N }, () => `00-${TRACE_ID}-${randomBytes(8).toString('hex')}-01`); // before the clock
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

async function measure(h) {
  const arms = { plain: { ms: [], cpu: [] }, meta: { ms: [], cpu: [] } };
  const ratios = [], cpuRatios = [], perRepeat = [];
  for (let rep = 0; rep < REPEATS; rep++) {
    const peers = { plain: await server(h), meta: await server(h) };
    const mine = [];
    for (let r = -WARMUP; r < ROUNDS; r++) {
      const order = (r + rep) % 2 ? ['meta', 'plain'] : ['plain', 'meta'];
      const got = {};
      for (const a of order) got[a] = await sample(peers[a], a === 'meta');
      if (r < 0) continue;
      for (const a of order) { arms[a].ms.push(got[a].ms); arms[a].cpu.push(got[a].cpuUs); }
      ratios.push(got.meta.ms / got.plain.ms);
      cpuRatios.push(got.meta.cpuUs / got.plain.cpuUs);
      mine.push(got.meta.ms / got.plain.ms);
    }
    perRepeat.push(stats(mine).median);
    for (const p of Object.values(peers)) await p.close();
  }
  const per = (xs) => fmt(stats(xs).median / EXEC_N, 1);
  return `| ${h.version}${Object.keys(h.capabilities).length ? ' (roots)' : ''} | ${per(arms.plain.ms.map((x) => x * 1e3))} | ` +
    `${per(arms.meta.ms.map((x) => x * 1e3))} | **${fmt(stats(ratios).median, 3)}×** | ` +
    `${fmt(Math.min(...perRepeat), 3)}–${fmt(Math.max(...perRepeat), 3)} | ${per(arms.plain.cpu)} | ` +
    `${per(arms.meta.cpu)} | **${fmt(stats(cpuRatios).median, 3)}×** |`;
}

const rows = [];
for (const h of HANDSHAKES) rows.push(await measure(h));
const report = `# The upstream's own cost of trace context (bench/trace_meta.mjs)

${new Date().toISOString()} — per protocol version, ${REPEATS} repeats (fresh processes) × ${ROUNDS} rounds (after ${WARMUP} warm-up rounds) of
${EXEC_N} sequential \`tools/call\` get-sum straight to server-everything (stdio, no gateway), with and
without \`params._meta.traceparent\` (a new span id per call), each form to a server process of its
own, alternating; ${cpus().length} × ${cpus()[0]?.model ?? '?'}, load average ${fmt(loadavg()[0])} at the end,
Node ${process.version}. Ratios: paired (same round) medians, with \`_meta\` / without.

| protocol version | µs per call, no \`_meta\` | with \`_meta\` | wall ratio | per repeat (min–max) | upstream CPU µs per call, no \`_meta\` | with \`_meta\` | CPU ratio |
|---|---|---|---|---|---|---|---|
${rows.join('\n')}
`;
const out = join(ROOT, 'bench', 'results', process.env.BENCH_OUT || 'trace_meta.md');
writeFileSync(out, report);
console.log(report);
