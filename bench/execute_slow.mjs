// Benchmark: 100 concurrent calls to a tool that takes 100 ms, inside one
// execute_python, against one such call — the target is ≤ 1.2× (the calls overlap, so the
// gateway and the worker add only their per-call cost). The tool is tests/fixtures/
// fake_upstream.py's `sleep` (every call on its own thread, so 100 calls sleep at once).
// Side by side, rounds interleaved, every answer checked:
//   codemcp — one execute_python: `fake_sleep(ms=100)` / 100 of them issued, then all read;
//   direct  — LinePeer straight to the same fake upstream (its own process): 1 / 100 at once.
// Usage: node bench/execute_slow.mjs [rounds=15] → bench/results/execute_slow.md
// (CODEMCP_BIN picks the binary; BENCH_SLOW_MS / BENCH_SLOW_N change 100 ms / 100 calls.)
import { writeFileSync, mkdtempSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { LinePeer, codemcpBin, stats, fmt, ROOT } from './lib.mjs';

const ROUNDS = Number(process.argv[2] || 15);
const MS = Number(process.env.BENCH_SLOW_MS || 100);
const N = Number(process.env.BENCH_SLOW_N || 100);
const TARGET = 1.2;
const FAKE = ['/usr/bin/python3', join(ROOT, 'tests/fixtures/fake_upstream.py')];
const bin = codemcpBin();
const load0 = loadavg();
const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-slow-'));
const cfg = join(dir, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcp: { fake: { type: 'local', command: FAKE } } }));

const gw = new LinePeer([bin], { CODEMCP_CONFIG: cfg, CODEMCP_CALL_TIMEOUT_MS: '60000' });
await gw.initialize();
const direct = new LinePeer(FAKE);
await direct.initialize();

const PY = {
  one: `result = str(fake_sleep(ms=${MS}))`,
  many: `ps = [fake_sleep(ms=${MS}) for _ in range(${N})]\nresult = sum(str(p) == "slept ${MS} ms" for p in ps)`,
};
const WANT = { one: `slept ${MS} ms`, many: N };
async function viaCodemcp(w) {
  const r = await gw.request('tools/call', { name: 'execute_python', arguments: { code: PY[w] } });
  const v = r.result?.structuredContent?.result;
  if (v !== WANT[w]) throw new Error(`codemcp ${w}: ${JSON.stringify(r).slice(0, 400)}`);
}
async function viaDirect(w) {
  const k = w === 'one' ? 1 : N;
  const rs = await Promise.all(Array.from({ length: k }, () =>
    direct.request('tools/call', { name: 'sleep', arguments: { ms: MS } })));
  for (const r of rs)
    if (r.result?.content?.[0]?.text !== `slept ${MS} ms`) throw new Error(`direct: ${JSON.stringify(r).slice(0, 300)}`);
}
for (let k = 0; ; k++) { // the SDK exists once the upstream has listed its tools
  try { await viaCodemcp('one'); break; } catch (e) {
    if (k > 200 || !/NameError/.test(String(e))) throw e;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const t = { codemcp: { one: [], many: [] }, direct: { one: [], many: [] } };
const arms = { codemcp: viaCodemcp, direct: viaDirect };
for (let r = -2; r < ROUNDS; r++) {
  const order = r % 2 ? ['codemcp', 'direct'] : ['direct', 'codemcp'];
  for (const w of ['one', 'many'])
    for (const a of order) {
      const t0 = performance.now();
      await arms[a](w);
      if (r >= 0) t[a][w].push(performance.now() - t0);
    }
}
await gw.close();
await direct.close();

const med = (a, w) => stats(t[a][w]).median;
const paired = (a) => stats(t[a].many.map((x, i) => x / t[a].one[i])).median;
const rev = (() => { try { return execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(); } catch { return '?'; } })();
const c = paired('codemcp');
// What codemcp adds over the upstream itself: this round's codemcp 100-call time over the same
// round's direct 100-call time (the fixture's own spread of 100 threads is in both).
const over = stats(t.codemcp.many.map((x, i) => x / t.direct.many[i])).median;
const report = `# ${N} concurrent ${MS} ms calls vs one (bench/execute_slow.mjs)

${new Date().toISOString()} — ${ROUNDS} rounds after 2 warm-up rounds, arms and workloads interleaved;
${cpus().length} × ${cpus()[0]?.model ?? '?'}, load average ${load0.map((l) => fmt(l)).join(' / ')} at the start, ${loadavg().map((l) => fmt(l)).join(' / ')} at the end, commit ${rev},
${bin}. Tool: tests/fixtures/fake_upstream.py \`sleep {ms: ${MS}}\` (a thread per call), stdio.

| arm | 1 call, ms (p50) | ${N} concurrent, ms (p50) | ${N} concurrent / 1 call (paired median) | target ≤ ${TARGET}× |
|---|---|---|---|---|
| codemcp (one execute_python) | ${fmt(med('codemcp', 'one'), 1)} | ${fmt(med('codemcp', 'many'), 1)} | **${fmt(c, 3)}×** | ${c <= TARGET ? 'met' : '**missed**'} |
| direct (LinePeer → upstream) | ${fmt(med('direct', 'one'), 1)} | ${fmt(med('direct', 'many'), 1)} | ${fmt(paired('direct'), 3)}× | (reference) |

"paired": the median over rounds of that round's ${N}-call time over its 1-call time. The
direct arm shows what the upstream itself needs for ${N} overlapping calls (its threads).
codemcp's ${N} concurrent calls / the direct arm's ${N} in the same round (paired median):
**${fmt(over, 3)}×** — what the gateway and the worker add over the upstream's own spread.
`;
writeFileSync(join(ROOT, 'bench/results', process.env.BENCH_OUT || 'execute_slow.md'), report);
process.stdout.write(report);
process.exit(0);
