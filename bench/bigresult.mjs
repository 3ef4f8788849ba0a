// Benchmark: big tool results reaching the program. A fast stdio upstream
// (bench/bigresult_upstream.py) answers n GitHub-issue-like records of ~1 KB; the program
// returns len(...). Side by side in one run, arms rotated per round:
//   floor   — Python's own json.loads of the same text (a python3 process, GC on as by default)
//   node    — a hand-written Node client: the same upstream spawned directly, one tools/call,
//             JSON.parse of the reply line and of its text block, .length
//   <build> — execute_python through each codemcp binary given (sandbox on, the default)
// Also structured results (structuredContent, no text to re-parse) and the peak RSS (VmHWM) of
// each gateway and its worker, from a fresh gateway per size.
// Usage: node bench/bigresult.mjs [sizesMB=1,10,50] [name=bin ...]  → bench/results/bigresult.md
//   e.g. node bench/bigresult.mjs 1,10,50 main=/tmp/base/build/src/codemcp new=build/src/codemcp
import { spawn } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LinePeer, codemcpBin, buildType, memKiB, workerPids, stats, fmt, ROOT } from './lib.mjs';

const sizes = (process.argv[2] || '1,10,50').split(',').map(Number);
const builds = process.argv.slice(3).map((a) => a.split('='));
if (!builds.length) builds.push(['codemcp', codemcpBin()]);
const ROUNDS = { 1: 15, 10: 7, 50: 5 };
const REC_BYTES = 1028; // the upstream's mean record size (JSON, compact)
const nFor = (mb) => Math.round((mb * 1e6) / REC_BYTES);
const UPSTREAM = ['python3', join(ROOT, 'bench', 'bigresult_upstream.py')];
const dir = mkdtempSync(join(tmpdir(), 'codemcp-bigres-'));
const cfg = join(dir, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcp: { big: { type: 'local', command: UPSTREAM } } }));
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

// Reads newline-delimited replies as Buffers (no string concatenation per chunk).
class Lines {
  constructor(stream) {
    this.parts = [];
    this.waiter = null;
    stream.on('data', (d) => {
      let i = d.indexOf(10);
      while (i >= 0) {
        this.parts.push(d.subarray(0, i));
        const line = Buffer.concat(this.parts);
        this.parts = [];
        const w = this.waiter;
        this.waiter = null;
        if (w) w(line);
        d = d.subarray(i + 1);
        i = d.indexOf(10);
      }
      if (d.length) this.parts.push(d);
    });
  }
  next() { return new Promise((res) => (this.waiter = res)); }
}

// The hand-written Node client: the upstream alone.
async function nodeClient() {
  const p = spawn(UPSTREAM[0], UPSTREAM.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = new Lines(p.stdout);
  let id = 0;
  const rpc = async (method, params) => {
    const got = lines.next();
    p.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }) + '\n');
    return got;
  };
  await rpc('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'b', version: '1' } });
  return {
    async call(n, structured) {
      const t0 = process.hrtime.bigint();
      const line = await rpc('tools/call', { name: structured ? 'records_structured' : 'records', arguments: { n } });
      const r = JSON.parse(line.toString('utf8')).result;
      const len = structured ? r.structuredContent.records.length : JSON.parse(r.content[0].text).length;
      return { ms: ms(t0), len };
    },
    close() { p.kill(); },
  };
}

// Python's json.loads of the same text, timed inside the interpreter.
async function pyFloor() {
  const code = `
import json, sys, time
sys.path.insert(0, ${JSON.stringify(join(ROOT, 'bench'))})
import bigresult_upstream as u
texts = {}
for line in sys.stdin:
    n = int(line)
    if n not in texts:
        texts[n] = json.dumps(u.records(n), separators=(",", ":"))
    t = time.perf_counter()
    v = json.loads(texts[n])
    d = (time.perf_counter() - t) * 1000
    del v
    print(d, len(texts[n]), flush=True)
`;
  const p = spawn('python3', ['-c', code], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = new Lines(p.stdout);
  return {
    async call(n) {
      const got = lines.next();
      p.stdin.write(`${n}\n`);
      const [d, bytes] = (await got).toString().trim().split(' ').map(Number);
      return { ms: d, len: n, bytes };
    },
    close() { p.kill(); },
  };
}

async function gateway(bin) {
  const peer = new LinePeer([bin], { CODEMCP_CONFIG: cfg, CODEMCP_LOG: 'warn' });
  await peer.initialize();
  const run = async (code) => {
    const r = await peer.request('tools/call', { name: 'execute_python', arguments: { code } });
    const res = r.result;
    if (!res || res.isError) throw new Error(`${bin}: ${JSON.stringify(r).slice(0, 400)}`);
    return res.structuredContent.result;
  };
  for (let k = 0; ; k++) { // the SDK function exists once the upstream is listed
    try { await run('big_records(n=1)'); break; } catch (e) {
      if (k > 100 || !/NameError|not_found|not yet/.test(String(e))) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    async call(n, structured) {
      const t0 = process.hrtime.bigint();
      const len = await run(structured ? `len(big_records_structured(n=${n})["records"])` : `len(big_records(n=${n}))`);
      return { ms: ms(t0), len };
    },
    mem() {
      const g = memKiB(peer.proc.pid);
      const w = workerPids(peer.proc.pid).map(memKiB).reduce((a, m) => (m.hwm > a.hwm ? m : a), { hwm: 0 });
      return { gw: g.hwm, wk: w.hwm };
    },
    close() { return peer.close(); },
  };
}

const rows = [];
const summary = {};
for (const mb of sizes) {
  const n = nFor(mb);
  for (const structured of [false, true]) {
    const arms = { floor: await pyFloor(), node: await nodeClient() };
    for (const [name, bin] of builds) arms[name] = await gateway(bin);
    const names = Object.keys(arms);
    const t = Object.fromEntries(names.map((k) => [k, []]));
    let bytes = 0;
    for (const k of names) await arms[k].call(n, structured); // warm: answers built, shapes learned
    const rounds = ROUNDS[mb] ?? 5;
    for (let r = 0; r < rounds; r++) {
      for (let i = 0; i < names.length; i++) {
        const k = names[(i + r) % names.length];
        const x = await arms[k].call(n, structured);
        if (x.len !== n) throw new Error(`${k}: got ${x.len} records, want ${n}`);
        if (x.bytes) bytes = x.bytes;
        t[k].push(x.ms);
      }
    }
    const kind = structured ? 'structured' : 'text';
    const med = Object.fromEntries(names.map((k) => [k, stats(t[k]).median]));
    for (const [name] of builds) {
      const m = arms[name].mem();
      summary[`${mb}/${kind}/${name}`] = { ms: med[name], floor: med.floor, node: med.node, ...m, bytes };
      rows.push(`| ${mb} MB | ${kind} | ${name} | ${fmt(med[name])} | ${fmt(stats(t[name]).min)} | ${fmt(med.floor)} | ${fmt(med.node)} | ` +
        `**${fmt(med[name] / med.floor, 2)}×** | **${fmt(med[name] / med.node, 2)}×** | ${fmt(m.gw / 1024, 0)} / ${fmt(m.wk / 1024, 0)} | ${fmt((m.gw + m.wk) * 1024 / bytes, 1)}× |`);
    }
    for (const k of names) await arms[k].close();
  }
}

const report = `# Big results: codemcp against Python's json.loads and a hand-written Node client

${new Date().toISOString()} — one run, arms rotated per round, medians in ms from the request
to the program's \`len(...)\`. Upstream: bench/bigresult_upstream.py (python3, ~${REC_BYTES} B
records, answers built once). Floor: \`json.loads\` of the same text in python3 (GC on, the
default). Node: a hand-written client of the same upstream (JSON.parse of the line and of the
text). Memory: peak RSS (VmHWM) of the gateway / its worker after the rounds of that size and
kind (a fresh gateway each), and (gateway + worker) ÷ payload bytes.

Builds: ${builds.map(([n, b]) => `${n} = \`${b}\` (${buildType(b)})`).join('; ')}

| size | result | build | median ms | min ms | floor ms | node ms | ÷ floor | ÷ node | peak RSS MB gw / worker | (gw + wk) ÷ payload |
|---|---|---|---|---|---|---|---|---|---|---|
${rows.join('\n')}
`;
const out = process.env.BENCH_OUT || 'bigresult'; // bench/results/<out>.md and .json
writeFileSync(join(ROOT, 'bench', 'results', `${out}.md`), report);
writeFileSync(join(ROOT, 'bench', 'results', `${out}.json`), JSON.stringify(summary, null, 1));
console.log(report);
