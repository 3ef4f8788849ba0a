// Saturation: more busy sessions than Python workers. N clients (8 and 32) each run programs
// back to back, one program = 5 upstream calls, against `codemcp start` with its default 16
// workers, side by side in one run with the same load sent straight to the upstream:
//   direct            — N SDK clients (StreamableHTTPClientTransport) to server-everything;
//                       one program = 5 get-sum calls at once (Promise.all);
//   direct 1 session  — the same N loops sharing one SDK client, so one upstream session, as
//                       a gateway has: the upstream's SDK does per-response work that grows
//                       with the requests in flight in the session (webStandardStreamableHttp.js
//                       scans them all on every response), which N separate sessions spread;
//   codemcp           — N SDK clients (2025 sessions, one principal) to `codemcp start`
//                       (CODEMCP_BIN), one program = one execute_python making the 5 calls;
//   codemcp before    — the same from CODEMCP_BIN_BEFORE (e.g. main's build), when set.
// One gateway per (binary, N), all alive for the whole run; one server-everything (streamableHttp)
// serves every arm. The arms never run at the same time: each round runs every arm once for a
// fixed time, arm order rotated round by round.
// Reports per arm: programs/s (completed inside [start + 1 s, end] of each round, / window),
// p50 / p99 / max latency of a program, refusals (an isError saying every worker was taken, or
// a queue bound), other errors (wrong answers included: every answer is checked), worker
// processes started per second (the gateway's "worker N connected" lines at CODEMCP_LOG=info,
// in the window), how busy the machine was (it is shared: other processes show up there), and
// where a program's CPU went: this process (the clients), the upstream, the gateway process (all
// its threads) and the rest of the machine (workers, the prototype, anyone else).
// Usage: node bench/saturation.mjs [seconds_per_round=4] [rounds=3] [clients=8,32]
//        → bench/results/saturation.md (BENCH_OUT=<file> elsewhere; what is below its
//        "<!-- hand-written below -->" line is kept)
// Env: CODEMCP_BIN, CODEMCP_BIN_BEFORE, BENCH_CALLS (default 5), BENCH_GW_ENV='K=V,K=V' (extra
//      settings for the CODEMCP_BIN gateways only, e.g. CODEMCP_WORKER_MIN_HOLD_MS=500),
//      BENCH_ALT (above), BENCH_LOGS=<dir> keeps the gateways' logs (CODEMCP_LOG=info) there.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, buildType, codemcpBin, cpuNs, fmt, machineBusyMs, startEverythingHttp, getSumLoad, startLogged, stats } from './lib.mjs';

const SECONDS = Number(process.argv[2] || 4);
const ROUNDS = Number(process.argv[3] || 3);
const CLIENTS = String(process.argv[4] || '8,32').split(',').map(Number).filter((n) => n > 0);
const CALLS = Number(process.env.BENCH_CALLS || 5);
const RAMP = 1; // seconds at the start of a round not counted in programs/s
const OUT = process.env.BENCH_OUT || join(ROOT, 'bench/results/saturation.md');
const parseEnv = (text) => Object.fromEntries(text.split(',').filter(Boolean).map((kv) => kv.split('=')));
const GW_ENV = parseEnv(process.env.BENCH_GW_ENV || '');
// BENCH_ALT='K=V,K=V;K=V': more gateways from CODEMCP_BIN, one per ';'-separated set of settings
// (e.g. to compare CODEMCP_WORKER_MIN_HOLD_MS values side by side), tagged with their settings.
const ALT = (process.env.BENCH_ALT || '').split(';').filter(Boolean);
const VARIANTS = [{ bin: codemcpBin(), tag: '', env: GW_ENV },
  ...ALT.map((a) => ({ bin: codemcpBin(), tag: ` ${a.replace(/CODEMCP_/g, '')}`, env: { ...GW_ENV, ...parseEnv(a) } })),
  ...(process.env.CODEMCP_BIN_BEFORE ? [{ bin: process.env.CODEMCP_BIN_BEFORE, tag: ' before', env: {} }] : [])];
for (const v of VARIANTS) if (!existsSync(v.bin)) throw new Error(`${v.bin} does not exist`);

const SDK = join(ROOT, 'tests/node_modules/@modelcontextprotocol/sdk/dist/esm');
const { Client } = await import(join(SDK, 'client/index.js'));
const { StreamableHTTPClientTransport } = await import(join(SDK, 'client/streamableHttp.js'));
const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-sat-'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const procs = [];
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130)); // cleanup below
process.on('exit', () => {
  for (const p of procs) try { p.kill('SIGKILL'); } catch {}
  if (process.env.BENCH_LOGS) {
    mkdirSync(process.env.BENCH_LOGS, { recursive: true });
    for (const f of readdirSync(dir)) if (f.endsWith('.log')) copyFileSync(join(dir, f), join(process.env.BENCH_LOGS, f));
  }
  rmSync(dir, { recursive: true, force: true });
});


// ---- processes ------------------------------------------------------------------------------
const upstream = await startEverythingHttp(dir, procs);
const { port: upPort, url: upUrl, cfg } = upstream;
const TOKEN = 'bench-saturation-token-0123456789';
const tokensFile = join(dir, 'tokens');
writeFileSync(tokensFile, `bench ${TOKEN}\n`, { mode: 0o600 });
const maxN = Math.max(...CLIENTS);
const gateways = {};
for (const v of VARIANTS)
  for (const n of CLIENTS) {
    const id = `codemcp${v.tag} N=${n}`;
    const log = join(dir, `gw-${id.replace(/\W+/g, '_')}.log`);
    const env = { CODEMCP_CONFIG: cfg, XDG_CONFIG_HOME: join(dir, 'xdg'), CODEMCP_HTTP_TOKENS_FILE: tokensFile,
      CODEMCP_LOG: 'info', // the "worker N connected" lines count the worker starts
      // Every client comes from one address and principal: the per-principal and per-peer
      // bounds (meant for floods) must fit the bench's legitimate clients.
      CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL: String(Math.max(64, maxN + 8)),
      CODEMCP_HTTP_MAX_PENDING_PER_PEER: String(Math.max(32, maxN + 8)),
      CODEMCP_HTTP_MAX_PENDING: String(Math.max(256, maxN + 8)),
      CODEMCP_HTTP_MAX_CONN_PER_PEER: String(Math.max(512, 4 * maxN)), ...v.env };
    const st = await startLogged([v.bin, 'start', '-p', '0'], env, log, /serving MCP over Streamable HTTP at (\S+)/, procs);
    gateways[id] = { ...st, url: st.match[1], n };
  }

async function connect(name, url) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } });
  const client = new Client({ name, version: '1' });
  await client.connect(transport);
  return { client, tools: (await client.listTools()).tools.map((t) => t.name) };
}

// ---- programs ---------------------------------------------------------------------------------
let nextA = 1;
const { check, direct: directTask, program } = getSumLoad(CALLS);
class Refused extends Error {}
const REFUSAL = /every Python worker is running|CODEMCP_RUN_QUEUE_MAX|CODEMCP_RUN_QUEUE_WAIT_MS/;
const codemcpTask = async (c, a) => {
  const r = await c.client.callTool({ name: 'execute_python', arguments: { code: program(a) } }, undefined, { timeout: 180000 });
  if (r.isError) {
    const text = JSON.stringify(r.structuredContent ?? r.content);
    throw REFUSAL.test(text) ? new Refused(text.slice(0, 300)) : new Error(`isError: ${text.slice(0, 300)}`);
  }
  check(r.structuredContent?.result, a);
};

// CPU ms by party, summed over the windows, with the programs completed in them.
const newCpu = () => ({ client: 0, upstream: 0, gateway: 0, machine: 0, programs: 0 });

// ---- arms -------------------------------------------------------------------------------------
const arms = {};
async function makeArm(name, url, n, task, tool, gw, oneSession = false) {
  const clients = [];
  for (let k = 0; k < n; k++) {
    const c = oneSession && k > 0 ? clients[0] : await connect(`bench-${name}-${k}`, url);
    if (!c.tools.includes(tool)) throw new Error(`${name}: no ${tool} in ${JSON.stringify(c.tools)}`);
    clients.push(c);
  }
  arms[name] = { n, clients, task, gw, windows: [], done: 0, refused: 0, errors: 0, firstError: '', lat: [], spawns: 0, busy: [], cpu: newCpu() };
}
for (const n of CLIENTS) {
  await makeArm(`direct N=${n}`, upUrl, n, directTask, 'get-sum', null);
  await makeArm(`direct 1 session N=${n}`, upUrl, n, directTask, 'get-sum', null, true);
  for (const v of VARIANTS) {
    const id = `codemcp${v.tag} N=${n}`;
    await makeArm(id, gateways[id].url, n, codemcpTask, 'execute_python', gateways[id]);
  }
}
const ARMS = Object.keys(arms);

const workerStarts = (gw) => (readFileSync(gw.log, 'utf8').match(/worker \d+ connected \(pid/g) || []).length;
const machineBusy = () => ({ busy: machineBusyMs() / 10, t: performance.now() }); // in 1/100 s
const cpuSnap = (gw) => {
  const c = process.cpuUsage();
  return { client: (c.user + c.system) / 1e3, upstream: cpuNs(upstream.proc.pid) / 1e6,
    gateway: gw ? cpuNs(gw.proc.pid) / 1e6 : 0, machine: machineBusyMs() };
};

// One round of one arm: every client loops programs until the end; programs/s counts those
// completed inside [start + RAMP, end] (every client has one in flight then).
async function runRound(name) {
  const arm = arms[name];
  let closed = false, open = false, inWindow = 0, w0 = 0, w1 = 0, s0 = 0, s1 = 0, m0 = null, m1 = null, c0 = null, c1 = null;
  const opener = setTimeout(() => { open = true; w0 = performance.now(); m0 = machineBusy(); c0 = cpuSnap(arm.gw); if (arm.gw) s0 = workerStarts(arm.gw); }, RAMP * 1000);
  const closer = setTimeout(() => { open = false; closed = true; w1 = performance.now(); m1 = machineBusy(); c1 = cpuSnap(arm.gw); if (arm.gw) s1 = workerStarts(arm.gw); }, SECONDS * 1000);
  await Promise.all(arm.clients.map(async (c) => {
    while (!closed) {
      const a = nextA; nextA += CALLS + 1;
      const s = performance.now();
      try {
        await arm.task(c, a);
        arm.lat.push(performance.now() - s);
        arm.done++;
        if (open) inWindow++;
      } catch (e) {
        if (e instanceof Refused) arm.refused++; else arm.errors++;
        if (!arm.firstError) arm.firstError = String(e.message || e).slice(0, 300);
        if (!(e instanceof Refused)) await sleep(50); // a broken arm must not spin
      }
    }
  }));
  clearTimeout(opener); clearTimeout(closer);
  const secs = (w1 - w0) / 1000;
  arm.windows.push(inWindow / secs);
  arm.spawns += s1 - s0;
  arm.spawnSecs = (arm.spawnSecs || 0) + secs;
  arm.busy.push(((m1.busy - m0.busy) / 100) / secs);
  for (const k of Object.keys(c0)) arm.cpu[k] += c1[k] - c0[k];
  arm.cpu.programs += inWindow;
}

// Warm-up: one short round per arm (workers started, connections open), not counted.
for (const name of ARMS) {
  await runRound(name);
  Object.assign(arms[name], { windows: [], done: 0, refused: 0, errors: 0, firstError: '', lat: [], spawns: 0, spawnSecs: 0, busy: [], cpu: newCpu() });
}
for (let r = 0; r < ROUNDS; r++) {
  const order = ARMS.map((_, i) => ARMS[(i + r) % ARMS.length]);
  for (const name of order) {
    await runRound(name);
    process.stderr.write(`round ${r + 1} ${name}: ${fmt(arms[name].windows.at(-1))} programs/s\n`);
  }
}

// ---- report -------------------------------------------------------------------------------------
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const rate = (arm) => sum(arm.windows) / arm.windows.length;
const rows = [];
for (const name of ARMS) {
  const arm = arms[name];
  const st = stats(arm.lat);
  const direct = arms[`direct N=${arm.n}`];
  const dst = stats(direct.lat);
  // Paired per round: the arms of one round ran back to back, on the same phase of the machine.
  const paired = arm.windows.map((x, i) => x / direct.windows[i]).sort((a, b) => a - b);
  rows.push({ name, arm, st, ratio: rate(arm) / rate(direct), paired: paired[Math.floor(paired.length / 2)], p99ratio: st.p99 / dst.p99 });
}
let md = `# Saturation: more busy sessions than Python workers\n\n`;
md += `${new Date().toISOString()} — ${ROUNDS} rounds × ${SECONDS} s per arm (the first ${RAMP} s of each not counted in programs/s) after a warm-up round per arm; arm order rotated round by round. ${cpus().length} × ${cpus()[0]?.model?.trim()}, Node ${process.version}. `;
md += VARIANTS.map((v) => `\`codemcp${v.tag}\`: ${v.bin} (${buildType(v.bin)})${Object.keys(v.env).length ? `, ${Object.entries(v.env).map(([k, x]) => `${k}=${x}`).join(' ')}` : ''}`).join('; ') + '.\n\n';
md += `Every client runs programs back to back; one program = ${CALLS} \`get-sum\` calls to one server-everything (streamableHttp) that serves every arm: at once from an SDK client (direct), or from one \`execute_python\` (\`ps = [everything_get_sum(...) for i in range(${CALLS})]\`) through \`codemcp start\` with its default 16 workers, every client a 2025 session of one principal. Every answer is checked.\n\n`;
md += `| arm | programs/s | vs direct | vs direct, paired per round (median) | p50 ms | p90 ms | p99 ms | p99 vs direct | max ms | programs | refused | other errors | worker starts/s | machine cores busy |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n`;
for (const { name, arm, st, ratio, paired, p99ratio } of rows)
  md += `| ${name} | ${fmt(rate(arm))} | ${fmt(ratio, 2)}× | ${fmt(paired, 2)}× | ${fmt(st.median)} | ${fmt(st.p90)} | ${fmt(st.p99)} | ${fmt(p99ratio, 2)}× | ${fmt(st.max)} | ${arm.done} | ${arm.refused} | ${arm.errors} | ${arm.gw ? fmt(arm.spawns / arm.spawnSecs) : '–'} | ${fmt(sum(arm.busy) / arm.busy.length, 2)} |\n`;
md += `\nPrograms/s per round:\n\n| arm | ${Array.from({ length: ROUNDS }, (_, i) => `round ${i + 1}`).join(' | ')} |\n|---|${'---|'.repeat(ROUNDS)}\n`;
for (const name of ARMS) md += `| ${name} | ${arms[name].windows.map((x) => fmt(x)).join(' | ')} |\n`;
md += `\nCPU ms per program, in the counted windows (the gateway: its process, every thread; the rest: the machine's busy time less the three before it, i.e. Python workers, the prototype and anything else running):\n\n| arm | clients (this process) | upstream | gateway | rest | machine |\n|---|---|---|---|---|---|\n`;
for (const name of ARMS) {
  const c = arms[name].cpu, per = (x) => fmt(x / c.programs, 2);
  md += `| ${name} | ${per(c.client)} | ${per(c.upstream)} | ${arms[name].gw ? per(c.gateway) : '–'} | ${per(c.machine - c.client - c.upstream - c.gateway)} | ${per(c.machine)} |\n`;
}
const errs = ARMS.filter((n) => arms[n].firstError);
if (errs.length) md += `\nFirst error per arm:\n\n${errs.map((n) => `- ${n}: \`${arms[n].firstError.replace(/`/g, "'")}\``).join('\n')}\n`;
// What a person wrote below the marker in the previous report stays.
const prev = existsSync(OUT) ? readFileSync(OUT, 'utf8') : '';
const keep = prev.indexOf('\n<!-- hand-written below -->');
writeFileSync(OUT, md + (keep >= 0 ? prev.slice(keep) : ''));
process.stdout.write(md);
process.exit(0);
