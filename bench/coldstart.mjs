// Benchmark: cold start. Spawn → `initialize` reply → the first `execute_python` result of
// `1 + 1`, with one fast stdio upstream (bench/bigresult_upstream.py) and the sandbox on (the
// default); in a second sequence spawn → `initialize` → complete `tools/list`. Every build
// given runs side by side, rotated per round, beside the floors measured in the same rounds:
// the upstream alone (spawn → its `initialize` reply: the gateway cannot answer before it) and
// a bare `python3 -I -S -c pass` (spawn → exit: one interpreter start).
// Usage: node bench/coldstart.mjs [rounds=15] [name=bin ...]   → bench/results/coldstart.md
// COLDSTART_UPSTREAM=c: the upstream is bench/floor/upstream.c (floor-upstream, from the first
// build's tree), a C server that starts in about a millisecond: the cold start is then the
// gateway's own, not a python3 start the gateway waits for.
import { writeFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir, cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { LinePeer, codemcpBin, buildType, stats, fmt, ROOT, PYTHON3 } from './lib.mjs';

const rounds = Number(process.argv[2] || 15);
const builds = process.argv.slice(3).map((a) => a.split('='));
if (!builds.length) builds.push(['codemcp', codemcpBin()]);
const dir = mkdtempSync(join(tmpdir(), 'codemcp-cold-'));
const cfg = join(dir, 'mcp.json');
const C_UPSTREAM = process.env.COLDSTART_UPSTREAM === 'c';
const UPSTREAM = C_UPSTREAM
  ? [join(dirname(builds[0][1]), '..', 'bench', 'floor', 'floor-upstream')]
  : [PYTHON3, join(ROOT, 'bench', 'bigresult_upstream.py')];
const UPSTREAM_NAME = C_UPSTREAM ? 'bench/floor/upstream.c, a C server' : `${PYTHON3}\nbench/bigresult_upstream.py`;
writeFileSync(cfg, JSON.stringify({ mcp: { big: { type: 'local', command: UPSTREAM } } }));
const env = { CODEMCP_CONFIG: cfg, CODEMCP_LOG: 'warn' };
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

async function firstResult(bin) {
  const p = new LinePeer([bin], env);
  await p.initialize();
  const init = p.elapsedMs();
  const r = await p.request('tools/call', { name: 'execute_python', arguments: { code: '1 + 1' } });
  const first = p.elapsedMs();
  if (r.result?.structuredContent?.result !== 2) throw new Error(`${bin}: ${JSON.stringify(r).slice(0, 300)}`);
  await p.close();
  return { init, first };
}

async function listed(bin) {
  const p = new LinePeer([bin], env);
  await p.initialize();
  const init = p.elapsedMs();
  const r = await p.request('tools/list');
  const list = p.elapsedMs();
  if (!r.result?.tools?.length) throw new Error(`${bin}: no tools`);
  await p.close();
  return { init, list };
}

async function upstreamAlone() {
  const p = new LinePeer(UPSTREAM);
  await p.initialize();
  const init = p.elapsedMs();
  await p.close();
  return init;
}

function barePython() {
  const t0 = process.hrtime.bigint();
  return new Promise((res) => spawn(PYTHON3, ['-I', '-S', '-c', 'pass'], { stdio: 'ignore' })
    .on('exit', () => res(Number(process.hrtime.bigint() - t0) / 1e6)));
}

const t = Object.fromEntries(builds.map(([n]) => [n, { init: [], first: [], gap: [], init2: [], list: [] }]));
const floor = { upstream: [], python: [] };
const loads = [load()];
for (const [, bin] of builds) { await firstResult(bin); await listed(bin); } // page cache warm
for (let r = 0; r < rounds; r++) {
  for (let i = 0; i < builds.length; i++) {
    const [name, bin] = builds[(i + r) % builds.length];
    const a = await firstResult(bin);
    t[name].init.push(a.init);
    t[name].first.push(a.first);
    t[name].gap.push(a.first - a.init);
    const b = await listed(bin);
    t[name].init2.push(b.init);
    t[name].list.push(b.list);
  }
  floor.upstream.push(await upstreamAlone());
  floor.python.push(await barePython());
  if (r % 5 === 4) loads.push(load());
}
const base = builds[0][0];
const cell = (x, b) => `${fmt(x.median)} / ${fmt(x.p90)}` + (b ? ` (${fmt(x.median / b.median, 2)}×)` : '');
const rows = builds.map(([name]) => {
  const s = (k) => stats(t[name][k]);
  const b = (k) => stats(t[base][k]);
  return `| ${name} | ${cell(s('first'), b('first'))} | ${cell(s('init'), b('init'))} | ${cell(s('gap'), b('gap'))} | ` +
    `${cell(s('init2'), b('init2'))} | ${cell(s('list'), b('list'))} |`;
});
const report = `# Cold start: spawn → first \`1 + 1\` result

${new Date().toISOString()} — ${rounds} rounds (${rounds} starts per build and sequence), builds
rotated per round, median / p90 in ms from spawn; one stdio upstream (${UPSTREAM_NAME}), sandbox on (the default). Ratios of medians against the first
build. Sequence A: initialize, notifications/initialized, execute_python \`1 + 1\` (and, per start,
the time from the \`initialize\` reply to the result: less sensitive to the upstream's start). Sequence B
(a fresh gateway): initialize, tools/list. ${cpus().length} CPUs; load average (1, 5, 15 min)
during the run: ${loads.join(' → ')}.

Builds: ${builds.map(([n, b]) => `${n} = \`${b}\` (${buildType(b)})`).join('; ')}

| build | A: first result | A: initialize | A: first result − initialize | B: initialize | B: tools/list complete |
|---|---|---|---|---|---|
${rows.join('\n')}

Floors, in the same rounds: the upstream alone, spawn → its \`initialize\` reply:
${cell(stats(floor.upstream))}; a bare \`${PYTHON3} -I -S -c pass\`, spawn → exit:
${cell(stats(floor.python))}.
`;
const out = process.env.BENCH_OUT || 'coldstart';
writeFileSync(join(ROOT, 'bench', 'results', `${out}.md`), report);
console.log(report);
