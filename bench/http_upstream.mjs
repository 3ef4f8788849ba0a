// Per-call cost of a Streamable HTTP upstream: one execute_python making 1 / 50
// sequential / 50 concurrent get-sum calls to server-everything in streamableHttp mode, side by
// side in one run with the same programs over a stdio upstream and with a direct SDK client
// (StreamableHTTPClientTransport) making the same calls to the same HTTP server.
// Arms (rounds interleaved, order rotated round by round; all gateways alive for the run):
//   http        — CODEMCP_BIN (default build/src/codemcp), `type: remote` upstream;
//   http-before — CODEMCP_BIN_BEFORE (when set), same config: before/after in one run;
//   stdio       — CODEMCP_BIN, the same server-everything over stdio (its own process);
//   direct      — an SDK client to the HTTP server (no execute_python: the calls only).
// Every gateway is driven over its stdio front (LinePeer). Per workload and arm: median wall
// time of an execute, gateway CPU per call (/proc/<pid>/task/*/schedstat, every thread: the
// curl thread included), and the connections the arm opened to the HTTP server (distinct client
// ports in /proc/net/tcp, TIME_WAIT included, that appeared while the arm ran) per call.
// Then (BENCH_CG=0 skips it) instructions per call of the gateway under callgrind (the method
// of bench/percall_cg.mjs, CG_TARGET=gateway): every binary × {http, stdio}.
// Usage: node bench/http_upstream.mjs [rounds=5] [reps=4] [cg_executes=10]
//        → bench/results/http_upstream.md (BENCH_OUT=<file> elsewhere)
// Env: BENCH_WORKLOADS=one,seq50 (a subset), BENCH_WALL=0 (callgrind only), BENCH_CG=0 (no
//      callgrind) or BENCH_CG=http (the http arm only, then exit), BENCH_CG_KEEP=<prefix>
//      (copy each callgrind dump directory to <prefix>-<arm> for callgrind_annotate).
import { spawn, execFileSync } from 'node:child_process';
import { openSync, closeSync, readFileSync, readdirSync, writeFileSync, mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LinePeer, NM, ROOT, SERVERS, EXEC_PY, EXEC_N, EXEC_EXPECT, codemcpBin, cpuNs, stats, fmt, untilSdkReady, freePort } from './lib.mjs';

const ROUNDS = Number(process.argv[2] || 5);
const REPS = Number(process.argv[3] || 4);
const CG_N = Number(process.argv[4] || 10);
const WORKLOADS = (process.env.BENCH_WORKLOADS || 'one,seq50,conc50').split(',');
const CALLS = { one: 1, seq50: EXEC_N, conc50: EXEC_N };
const SDK = join(ROOT, 'tests/node_modules/@modelcontextprotocol/sdk/dist/esm');
const { Client } = await import(join(SDK, 'client/index.js'));
const { StreamableHTTPClientTransport } = await import(join(SDK, 'client/streamableHttp.js'));
const EVERYTHING = join(NM, 'server-everything/dist/index.js');
const bin = codemcpBin();
const before = process.env.CODEMCP_BIN_BEFORE;
if (before && !existsSync(before)) throw new Error(`CODEMCP_BIN_BEFORE=${before} does not exist`);
const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-httpup-'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const procs = [];
process.on('exit', () => {
  for (const p of procs) try { p.kill('SIGKILL'); } catch {}
  rmSync(dir, { recursive: true, force: true });
});

// server-everything logs every request: into a file, not a pipe to drain.
const upPort = await freePort();
{
  const log = join(dir, 'everything.log');
  const fd = openSync(log, 'w');
  procs.push(spawn('node', [EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(upPort) }, stdio: ['ignore', fd, fd] }));
  closeSync(fd);
  for (let k = 0; !/listening on port/i.test(readFileSync(log, 'utf8')); k++) {
    if (k > 300) throw new Error(`server-everything did not start: ${readFileSync(log, 'utf8')}`);
    await sleep(50);
  }
}
const upUrl = `http://127.0.0.1:${upPort}/mcp`;
const cfgHttp = join(dir, 'http.json');
const cfgStdio = join(dir, 'stdio.json');
writeFileSync(cfgHttp, JSON.stringify({ mcp: { everything: { type: 'remote', url: upUrl } } }));
writeFileSync(cfgStdio, JSON.stringify({ mcp: { everything: { type: 'local', command: SERVERS.everything } } }));

// Client ports of every TCP socket to or from upPort (any state, TIME_WAIT included).
function clientPorts() {
  const out = new Set();
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try { text = readFileSync(f, 'utf8'); } catch { continue; }
    for (const line of text.split('\n').slice(1)) {
      const c = line.trim().split(/\s+/);
      if (c.length < 4) continue;
      const lp = parseInt(c[1].split(':')[1], 16);
      const rp = parseInt(c[2].split(':')[1], 16);
      if (rp === upPort) out.add(lp);
      else if (lp === upPort && rp !== 0) out.add(rp);
    }
  }
  return out;
}

const run = async (peer, code) => {
  const r = await peer.request('tools/call', { name: 'execute_python', arguments: { code } });
  if (r.error || r.result?.isError) throw new Error(JSON.stringify(r.error ?? r.result).slice(0, 400));
  return r.result;
};
const checkExec = (w, r) => {
  const got = r.structuredContent?.result;
  if (JSON.stringify(got) !== JSON.stringify(EXEC_EXPECT[w])) throw new Error(`${w}: wrong result ${JSON.stringify(got)}`);
};

async function gatewayArm(name, b, cfg) {
  const peer = new LinePeer([b, '--config', cfg], { CODEMCP_LOG: 'error', XDG_CONFIG_HOME: join(dir, `xdg-${name}`) });
  procs.push(peer.proc);
  await peer.initialize();
  await untilSdkReady(() => run(peer, EXEC_PY.one));
  for (let i = 0; i < 3; i++) await run(peer, EXEC_PY.seq50);
  return {
    name, pid: peer.proc.pid,
    exec: async (w) => { const r = await run(peer, EXEC_PY[w]); checkExec(w, r); },
  };
}

async function directArm() {
  // The SDK client leaves an abort listener per call on its transport's signal (Node warns
  // past 1,500): a fresh client per round (connected outside the timing) keeps that list short.
  let client;
  const reconnect = async () => {
    await client?.close();
    client = new Client({ name: 'bench-direct', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(upUrl)));
  };
  await reconnect();
  const n = (r) => {
    if (r.isError) throw new Error(JSON.stringify(r.content));
    return Number(r.content[0].text.match(/is (\d+)\.$/)[1]);
  };
  const call = (a, b) => client.callTool({ name: 'get-sum', arguments: { a, b } });
  const work = {
    one: async () => { if (n(await call(1, 2)) !== 3) throw new Error('direct one: wrong'); },
    seq50: async () => {
      let s = 0;
      for (let i = 0; i < EXEC_N; i++) s += n(await call(i, 1));
      if (s !== EXEC_EXPECT.seq50) throw new Error('direct seq50: wrong');
    },
    conc50: async () => {
      const rs = await Promise.all(Array.from({ length: EXEC_N }, (_, i) => call(i, 1)));
      if (rs.reduce((s, r) => s + n(r), 0) !== EXEC_EXPECT.conc50) throw new Error('direct conc50: wrong');
    },
  };
  for (let i = 0; i < 3; i++) await work.seq50();
  return { name: 'direct', pid: null, exec: (w) => work[w](), newRound: reconnect };
}

// ---- wall time, CPU, connections ----------------------------------------------------------------
async function wall() {
  const arms = [await gatewayArm('http', bin, cfgHttp)];
  if (before) arms.push(await gatewayArm('http-before', before, cfgHttp));
  arms.push(await gatewayArm('stdio', bin, cfgStdio));
  arms.push(await directArm());
  const res = {};
  for (const a of arms) for (const w of WORKLOADS) res[`${a.name}/${w}`] = { ms: [], cpu: 0, calls: 0, conns: 0 };
  for (let round = 0; round < ROUNDS; round++) {
    for (const a of arms) await a.newRound?.();
    for (const w of WORKLOADS) {
      for (let k = 0; k < arms.length; k++) {
        const a = arms[(k + round) % arms.length];
        const r = res[`${a.name}/${w}`];
        const ports0 = clientPorts();
        const cpu0 = a.pid ? cpuNs(a.pid) : 0;
        for (let i = 0; i < REPS; i++) {
          const t0 = process.hrtime.bigint();
          await a.exec(w);
          r.ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
        if (a.pid) r.cpu += cpuNs(a.pid) - cpu0;
        r.calls += REPS * CALLS[w];
        for (const p of clientPorts()) if (!ports0.has(p)) r.conns++;
      }
    }
    console.error(`round ${round + 1}/${ROUNDS} done`);
  }
  return { arms: arms.map((a) => a.name), res };
}

// ---- instructions per call (callgrind) ----------------------------------------------------------
async function cg(name, b, cfg) {
  const cgdir = mkdtempSync(join(dir, 'cg-'));
  const peer = new LinePeer(['valgrind', '-q', '--tool=callgrind', `--callgrind-out-file=${cgdir}/cg.%p`, b, '--config', cfg],
    { CODEMCP_LOG: 'error', CODEMCP_WORKER_START_TIMEOUT_MS: '120000', XDG_CONFIG_HOME: join(dir, `xdg-cg-${name}`) });
  procs.push(peer.proc);
  await peer.initialize();
  await untilSdkReady(() => run(peer, EXEC_PY.one));
  for (let i = 0; i < 3; i++) await run(peer, EXEC_PY.seq50);
  const pid = readdirSync(cgdir).map((f) => f.slice(3)).find((p) => {
    try { return readFileSync(`/proc/${p}/comm`, 'utf8').length > 0; } catch { return false; }
  });
  const out = {};
  for (const w of WORKLOADS) {
    for (let i = 0; i < 2; i++) await run(peer, EXEC_PY[w]);
    execFileSync('callgrind_control', ['-z', pid], { stdio: 'ignore' });
    for (let i = 0; i < CG_N; i++) checkExec(w, await run(peer, EXEC_PY[w]));
    execFileSync('callgrind_control', ['-d', w, pid], { stdio: 'ignore' });
    await sleep(300);
    let total = 0;
    for (const f of readdirSync(cgdir).filter((f) => f.startsWith(`cg.${pid}.`) && !f.endsWith('.done'))) {
      const text = readFileSync(join(cgdir, f), 'utf8');
      if (!text.includes(`\ndesc: Trigger: dump ${w}\n`)) continue;
      const m = text.match(/\nsummary: (\d+)/) || text.match(/\ntotals: (\d+)/);
      if (m) total += Number(m[1]);
      writeFileSync(join(cgdir, f + '.done'), '');
    }
    out[w] = Math.round(total / (CG_N * CALLS[w]));
    console.error(`cg ${name} ${w}: ${out[w]} instructions/call`);
  }
  await peer.close();
  if (process.env.BENCH_CG_KEEP) execFileSync('cp', ['-r', cgdir, `${process.env.BENCH_CG_KEEP}-${name}`]);
  return out;
}

const W = process.env.BENCH_WALL === '0' ? null : await wall();
const CG = {};
if (process.env.BENCH_CG !== '0') {
  CG.http = await cg('http', bin, cfgHttp);
  if (process.env.BENCH_CG === 'http') process.exit(0);
  if (before) CG['http-before'] = await cg('http-before', before, cfgHttp);
  CG.stdio = await cg('stdio', bin, cfgStdio);
}

// ---- report -------------------------------------------------------------------------------------
const med = (k) => stats(W.res[k].ms).median;
const L = [];
L.push('# HTTP upstream per-call cost (bench/http_upstream.mjs)', '');
L.push(`Run ${new Date().toISOString()}: ${ROUNDS} rounds × ${REPS} executes per workload and arm, arms interleaved` +
  ` (order rotated); server-everything streamableHttp on 127.0.0.1 shared by every HTTP arm.`);
L.push(`codemcp = ${bin}${before ? `; codemcp-before = ${before}` : ''}. Load average at the end: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}.`, '');
if (W) {
L.push('## Wall time per execute (median ms) and ratios', '');
const hdr = ['workload', ...W.arms.map((a) => `${a} ms`), 'http/stdio', 'http/direct'];
if (before) hdr.push('http/http-before');
L.push(`| ${hdr.join(' | ')} |`, `|${hdr.map(() => '---').join('|')}|`);
for (const w of WORKLOADS) {
  const row = [w, ...W.arms.map((a) => fmt(med(`${a}/${w}`), 2)),
    fmt(med(`http/${w}`) / med(`stdio/${w}`), 2), fmt(med(`http/${w}`) / med(`direct/${w}`), 2)];
  if (before) row.push(fmt(med(`http/${w}`) / med(`http-before/${w}`), 2));
  L.push(`| ${row.join(' | ')} |`);
}
L.push('', '## Gateway CPU per call (µs, all threads) and connections opened per call', '');
const gws = W.arms.filter((a) => a !== 'direct');
const h2 = ['workload', ...gws.map((a) => `${a} CPU µs`), ...W.arms.filter((a) => a !== 'stdio').map((a) => `${a} conns/call`)];
L.push(`| ${h2.join(' | ')} |`, `|${h2.map(() => '---').join('|')}|`);
for (const w of WORKLOADS) {
  const row = [w, ...gws.map((a) => fmt(W.res[`${a}/${w}`].cpu / 1e3 / W.res[`${a}/${w}`].calls, 1)),
    ...W.arms.filter((a) => a !== 'stdio').map((a) => fmt(W.res[`${a}/${w}`].conns / W.res[`${a}/${w}`].calls, 3))];
  L.push(`| ${row.join(' | ')} |`);
}
L.push('', 'CPU per call includes the run around the calls (one execute per `one` call; 1/50 of it for seq50/conc50).');
}
if (Object.keys(CG).length) {
  L.push('', `## Gateway instructions per call (callgrind, ${CG_N} executes per workload, all threads)`, '');
  const ks = Object.keys(CG);
  const h3 = ['workload', ...ks, 'http/stdio', ...(CG['http-before'] ? ['http/http-before'] : [])];
  L.push(`| ${h3.join(' | ')} |`, `|${h3.map(() => '---').join('|')}|`);
  for (const w of WORKLOADS) {
    const row = [w, ...ks.map((k) => CG[k][w].toLocaleString('en')), fmt(CG.http[w] / CG.stdio[w], 2)];
    if (CG['http-before']) row.push(fmt(CG.http[w] / CG['http-before'][w], 2));
    L.push(`| ${row.join(' | ')} |`);
  }
}
const outFile = process.env.BENCH_OUT || join(ROOT, 'bench/results/http_upstream.md');
const prev = existsSync(outFile) ? readFileSync(outFile, 'utf8') : '';
const keep = prev.indexOf('\n<!-- hand-written below -->');
writeFileSync(outFile, L.join('\n') + '\n' + (keep >= 0 ? prev.slice(keep) : ''));
console.log(L.join('\n'));
process.exit(0);
