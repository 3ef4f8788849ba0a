// Benchmark: cold start. Spawn → `initialize` reply → the first `execute_python` result of
// `1 + 1`, with one fast stdio upstream (bench/bigresult_upstream.py) and the sandbox on (the
// default); in a second sequence spawn → `initialize` → complete `tools/list`. Every build
// given runs side by side, rotated per round.
// Usage: node bench/coldstart.mjs [rounds=15] [name=bin ...]   → bench/results/coldstart.md
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LinePeer, codemcpBin, buildType, stats, fmt, ROOT } from './lib.mjs';

const rounds = Number(process.argv[2] || 15);
const builds = process.argv.slice(3).map((a) => a.split('='));
if (!builds.length) builds.push(['codemcp', codemcpBin()]);
const dir = mkdtempSync(join(tmpdir(), 'codemcp-cold-'));
const cfg = join(dir, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcp: { big: { type: 'local',
  command: ['python3', join(ROOT, 'bench', 'bigresult_upstream.py')] } } }));
const env = { CODEMCP_CONFIG: cfg, CODEMCP_LOG: 'warn' };

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

const t = Object.fromEntries(builds.map(([n]) => [n, { init: [], first: [], init2: [], list: [] }]));
for (const [, bin] of builds) { await firstResult(bin); await listed(bin); } // page cache warm
for (let r = 0; r < rounds; r++) {
  for (let i = 0; i < builds.length; i++) {
    const [name, bin] = builds[(i + r) % builds.length];
    const a = await firstResult(bin);
    t[name].init.push(a.init);
    t[name].first.push(a.first);
    const b = await listed(bin);
    t[name].init2.push(b.init);
    t[name].list.push(b.list);
  }
}
const base = builds[0][0];
const rows = builds.map(([name]) => {
  const s = (k) => stats(t[name][k]);
  const ratio = (k) => fmt(s(k).median / stats(t[base][k]).median, 2);
  return `| ${name} | ${fmt(s('first').median)} (${ratio('first')}×) | ${fmt(s('first').p99)} | ` +
    `${fmt(s('init').median)} | ${fmt(s('init2').median)} (${ratio('init2')}×) | ${fmt(s('list').median)} (${ratio('list')}×) |`;
});
const report = `# Cold start: spawn → first \`1 + 1\` result

${new Date().toISOString()} — ${rounds} rounds, builds rotated per round, medians in ms from
spawn; one stdio upstream (python3 bench/bigresult_upstream.py), sandbox on (the default). Ratios
against the first build. Sequence A: initialize, notifications/initialized, execute_python
\`1 + 1\`. Sequence B (a fresh gateway): initialize, tools/list.

Builds: ${builds.map(([n, b]) => `${n} = \`${b}\` (${buildType(b)})`).join('; ')}

| build | A: first result | A: first result p99 | A: initialize | B: initialize | B: tools/list complete |
|---|---|---|---|---|---|
${rows.join('\n')}
`;
const out = process.env.BENCH_OUT || 'coldstart';
writeFileSync(join(ROOT, 'bench', 'results', `${out}.md`), report);
console.log(report);
