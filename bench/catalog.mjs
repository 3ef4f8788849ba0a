// bench/catalog.mjs — what a catalog costs the model, and how well search finds things.
//
//   node bench/catalog.mjs [rounds=5]      → bench/results/catalog.md
//
// For two catalogs — the three npm test servers (37 functions) and those plus the GitHub REST
// fixture (tests/catalog/github_api.mjs, 1,223 tools from the pinned @octokit/openapi) — it
// measures, side by side:
//   * the raw tools/list of the upstreams (what a client pays without codemcp), in characters
//     and o200k_base tokens (gpt-tokenizer, pinned in tests/catalog/package.json);
//   * codemcp's execute_python description for clientInfo.name "claude-code" (the default
//     2,000-character budget), and the full listing (CODEMCP_DESCRIBE_BUDGET=full);
//   * search_tools() on the query sets of tests/data/catalog/ (tasks phrased the way people
//     ask, with the tools that do them): top-1 and top-5 per set and the latency of each query,
//     timed inside the worker (perf_counter around the call, the index already built; its
//     one-time build is reported apart), `rounds` rounds, interleaved.
// Targets: description <= 2,000 chars whatever the catalog size; top-1 >= 70 %, top-5 >= 90 %;
// search p50 < 2 ms at 1,200 tools.
import { existsSync, readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { encode } from '../tests/catalog/node_modules/gpt-tokenizer/esm/encoding/o200k_base.js';
import { LinePeer, ROOT, SERVERS, codemcpBin, stats, fmt } from './lib.mjs';

const rounds = Number(process.argv[2] || 5);
const GITHUB = ['node', join(ROOT, 'tests', 'catalog', 'github_api.mjs')];
// The query sets (tests/data/catalog/): queries.json (the first set; its even positions were
// the first ranker's tuning half), tuning.json (more tasks to tune on), heldout.json and
// heldout2.json (written before looking at the ranker), heldout3.json (the same, by the second
// ranking pass): all looked at by earlier passes, so the third pass tuned on them too; and
// heldout4.json (third pass) and heldout5.json (fourth pass, blind), never tuned on until the
// sixth pass read the misses of their even halves; heldout6.json, written blind in the sixth
// session (tuned on by the seventh pass); heldout7.json, written blind in the seventh session (a
// tuning set since the word-vector pass); heldout8.json, written blind during that pass and never
// tuned on: the honest figure (left out while the file is absent).
const DATA = join(ROOT, 'tests', 'data', 'catalog');
const load = (f) => JSON.parse(readFileSync(join(DATA, f), 'utf8'));
const first = load('queries.json');
const SETS = [
  { name: 'queries.json, even (first tuning half)', qs: first.filter((_, i) => i % 2 === 0), tuned: true },
  { name: 'queries.json, odd (first held-out half)', qs: first.filter((_, i) => i % 2 === 1), tuned: true },
  { name: 'tuning.json', qs: load('tuning.json'), tuned: true },
  { name: 'heldout.json (first pass\'s held-out set)', qs: load('heldout.json'), tuned: true },
  { name: 'heldout2.json (first pass\'s second held-out set)', qs: load('heldout2.json'), tuned: true },
  { name: 'heldout3.json (second pass\'s held-out set)', qs: load('heldout3.json'), tuned: true },
  { name: 'heldout4.json (third pass; tuned on by the sixth)', qs: load('heldout4.json'), tuned: true },
  { name: 'heldout5.json (blind in the fourth pass; tuned on by the sixth)', qs: load('heldout5.json'), tuned: true },
  { name: 'heldout6.json (blind in the sixth session; tuned on by the seventh pass)', qs: load('heldout6.json'), tuned: true },
  { name: 'heldout7.json (blind in the seventh session; a tuning set since the word-vector pass)', qs: load('heldout7.json'), tuned: true },
  // Written blind (no ranker code, no other set, no result read) during the word-vector pass; its
  // misses are not shown.
  ...(existsSync(join(DATA, 'heldout8.json'))
    ? [{ name: 'heldout8.json (blind, word-vector pass: never tuned on)', qs: load('heldout8.json'), tuned: false }] : []),
];
// A record, not a measurement of this run: the same sets measured by this bench on main 9d6fbec
// (the ranker before the fourth pass's thesaurus), kept to compare against.
const BEFORE = {
  'queries.json, even (first tuning half)': [94.4, 100.0], 'queries.json, odd (first held-out half)': [91.7, 94.4],
  'tuning.json': [87.7, 96.9], 'heldout.json (first pass\'s held-out set)': [76.0, 92.0],
  'heldout2.json (first pass\'s second held-out set)': [77.2, 93.0], 'heldout3.json (second pass\'s held-out set)': [63.5, 93.7],
  'heldout4.json (third pass; tuned on by the sixth)': [57.0, 81.0],
};
const queries = SETS.flatMap((s) => s.qs.map((q) => ({ ...q, set: s.name })));
const tmp = mkdtempSync(join(tmpdir(), 'codemcp-bench-catalog-'));

async function rawToolsList(argv) {
  const p = new LinePeer(argv);
  await p.initialize();
  const tools = [];
  let cursor;
  do {
    const r = await p.request('tools/list', cursor ? { cursor } : {});
    tools.push(...r.result.tools);
    cursor = r.result.nextCursor;
  } while (cursor);
  await p.close();
  return tools;
}

function writeCfg(name, servers) {
  const mcpServers = {};
  for (const [k, argv] of Object.entries(servers)) {
    mcpServers[k] = { command: argv[0], args: argv.slice(1), timeout: 60000 };
  }
  mcpServers.memory && (mcpServers.memory.env = { MEMORY_FILE_PATH: join(tmp, 'memory.json') });
  const p = join(tmp, `${name}.json`);
  writeFileSync(p, JSON.stringify({ mcpServers }));
  return p;
}

async function gateway(cfg, env = {}, client = 'claude-code') {
  const p = new LinePeer([codemcpBin(), '-c', cfg],
    { CODEMCP_USAGE_FILE: 'off', CODEMCP_DESCRIBE_BUDGET: '', XDG_STATE_HOME: tmp, ...env });
  const r = await p.request('initialize', { protocolVersion: '2025-06-18', capabilities: {},
    clientInfo: { name: client, version: '1' } });
  p.notify('notifications/initialized');
  p.instructions = r.result.instructions;
  return p;
}

async function description(p, wantFns) {
  for (let k = 0; k < 600; k++) {
    const d = (await p.request('tools/list')).result.tools[0].description;
    if (d.includes(`Servers (${wantFns} functions)`)) return d;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error('catalog never complete');
}

// The full listing has no server line: wait until every function is in it.
async function fullListing(p, wantFns) {
  for (let k = 0; k < 600; k++) {
    const d = (await p.request('tools/list')).result.tools[0].description;
    if ((d.match(/^def /gm) || []).length >= wantFns) return d;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error('full listing never complete');
}

async function run(p, code) {
  const r = await p.request('tools/call', { name: 'execute_python', arguments: { code, timeout_ms: 120000 } });
  const env = r.result?.structuredContent;
  if (!env || r.result.isError) throw new Error(JSON.stringify(r.result || r.error).slice(0, 2000));
  return env.result;
}

const SEARCH = (qs, rounds) => `
import time
qs = ${JSON.stringify(qs.map((q) => q.query))}
t = time.perf_counter(); search_tools("warm up the index"); build_ms = (time.perf_counter() - t) * 1000
lat = [[] for _ in qs]
names = [None] * len(qs)
for _ in range(${rounds}):
    for i, q in enumerate(qs):
        t = time.perf_counter()
        r = search_tools(q, 5)
        lat[i].append((time.perf_counter() - t) * 1000)
        names[i] = [x["name"] for x in r]
result = {"build_ms": build_ms, "lat": lat, "names": names}
`;

const catalogs = [
  { name: 'three test servers', servers: SERVERS, fns: 37 },
  { name: 'GitHub REST (1,223) + three test servers', servers: { github: GITHUB, ...SERVERS }, fns: 1260 },
];

const rows = [];
let searchReport = null;
for (const c of catalogs) {
  const raw = [];
  for (const argv of Object.values(c.servers)) raw.push(...(await rawToolsList(argv)));
  const rawText = JSON.stringify(raw);
  const cfg = writeCfg(c.name.replace(/\W+/g, '_'), c.servers);
  const g = await gateway(cfg);
  const desc = await description(g, c.fns);
  const full = await gateway(cfg, { CODEMCP_DESCRIBE_BUDGET: 'full' });
  const fullDesc = await fullListing(full, c.fns);
  await full.close();
  rows.push({
    name: c.name, fns: c.fns, rawChars: rawText.length, rawTok: encode(rawText).length,
    descChars: desc.length, descTok: encode(desc).length, fullChars: fullDesc.length,
    fullTok: encode(fullDesc).length, instrChars: (g.instructions || '').length,
  });
  if (c.fns === 1260) {
    const r = await run(g, SEARCH(queries, rounds));
    const per = Object.fromEntries(SETS.map((x) => [x.name, { n: 0, top1: 0, top5: 0 }]));
    const misses = [];
    queries.forEach((q, i) => {
      const got = r.names[i];
      const ok1 = got.length && q.expect.includes(got[0]);
      const ok5 = got.some((n) => q.expect.includes(n));
      const p = per[q.set];
      p.n++;
      p.top1 += ok1 ? 1 : 0;
      p.top5 += ok5 ? 1 : 0;
      // the held-out sets' misses are not printed: they are not for tuning
      if (!ok1 && SETS.find((x) => x.name === q.set).tuned) {
        misses.push(`| ${q.query} | ${q.expect.join(', ')} | ${got.slice(0, 3).join(', ')} | ${ok5 ? 'top-5' : 'miss'} |`);
      }
    });
    const perQuery = r.lat.map((l) => stats(l).median);
    searchReport = { per, n: queries.length, build: r.build_ms, p50: stats(perQuery).median,
      p95: [...perQuery].sort((a, b) => a - b)[Math.floor(0.95 * (perQuery.length - 1))], max: Math.max(...perQuery), misses };
  }
  await g.close();
}

const lines = [];
lines.push('# catalog — description size and search quality', '');
lines.push(`Run: \`node bench/catalog.mjs ${rounds}\` on ${new Date().toISOString().slice(0, 10)}; ` +
  'tokens are o200k_base (gpt-tokenizer 4.0.0); client "claude-code" (2,000-character budget).', '');
lines.push('| catalog | functions | raw tools/list chars | raw tokens | description chars | description tokens | vs raw (tokens) | full listing chars | full listing tokens | instructions chars |');
lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  lines.push(`| ${r.name} | ${r.fns} | ${r.rawChars} | ${r.rawTok} | ${r.descChars} | ${r.descTok} | ` +
    `${fmt((100 * r.descTok) / r.rawTok, 2)} % | ${r.fullChars} | ${r.fullTok} | ${r.instrChars} |`);
}
lines.push('');
if (rows.length === 2) {
  lines.push(`Description size across catalog sizes: ${rows[0].descChars} → ${rows[1].descChars} characters ` +
    `(${fmt(rows[1].descChars / rows[0].descChars, 2)}×) for ${fmt(rows[1].fns / rows[0].fns, 1)}× the functions; ` +
    `the raw list grows ${fmt(rows[1].rawTok / rows[0].rawTok, 1)}×.`, '');
}
if (searchReport) {
  const s = searchReport;
  lines.push(`## search_tools on ${s.n} paraphrased tasks, 1,260 functions`, '');
  lines.push('| query set | tasks | top-1 | top-5 | before: top-1 | before: top-5 |', '|---|---:|---:|---:|---:|---:|');
  for (const [name, p] of Object.entries(s.per)) {
    const b = BEFORE[name] || [null, null]; // n/a: a set written after that ranker
    lines.push(`| ${name} | ${p.n} | ${fmt((100 * p.top1) / p.n)} % | ${fmt((100 * p.top5) / p.n)} % | ${fmt(b[0])} % | ${fmt(b[1])} % |`);
  }
  lines.push('', 'Targets: top-1 ≥ 70 %, top-5 ≥ 90 %. "before": main 9d6fbec\'s ranker (before the fourth pass\'s ' +
    'thesaurus) on the same sets, by this bench (p50 1.096 ms there). The passes tuned on every set but ' +
    'heldout8.json, which was written blind during the word-vector pass and never read by it (see the passes\' sections below). ' +
    'bench/catalog_rank.py gives the same figures outside the gateway.', '');
  lines.push(`- latency per query (median of ${rounds} rounds each, in the worker): p50 ${fmt(s.p50, 3)} ms, ` +
    `p95 ${fmt(s.p95, 3)} ms, max ${fmt(s.max, 3)} ms (target p50 < 2 ms)`);
  lines.push(`- one-time index build for this SDK snapshot: ${fmt(s.build, 1)} ms (first search of a new catalog)`, '');
  lines.push('Queries of the tuning sets not ranked first (heldout8.json\'s are not shown):', '',
    '| query | expected | got (top 3) | |', '|---|---|---|---|', ...s.misses, '');
}
const out = lines.join('\n');
// Sections written by hand (records of earlier passes) follow a "<!-- kept -->" line; keep them.
const OUT = join(ROOT, 'bench', 'results', 'catalog.md');
let kept = '';
try {
  const old = readFileSync(OUT, 'utf8');
  const at = old.indexOf('<!-- kept -->');
  if (at >= 0) kept = '\n' + old.slice(at);
} catch {}
writeFileSync(OUT, out + '\n' + kept);
console.log(out);
