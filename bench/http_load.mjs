// Benchmark: 50 concurrent Streamable HTTP sessions, each running one
// execute_python with 10 upstream calls per task, against the same load sent by SDK clients
// straight to the upstream. Side by side in one run:
//   direct        — SESSIONS SDK clients (StreamableHTTPClientTransport) connected to
//                   server-everything; one task = 10 get-sum calls at once (Promise.all);
//   codemcp W=<n> — SESSIONS SDK clients connected to `codemcp start` (CODEMCP_WORKERS=n), one
//                   task = one execute_python issuing 10 everything_get_sum calls, then reading
//                   them; one gateway per worker count in the list, all alive for the whole run.
// All arms share ONE server-everything instance in streamableHttp mode: every arm then talks to
// the same process with the same accumulated state (its per-session event stores grow with
// traffic), and because the arms alternate round by round any drift of that process over the
// run is spread over all of them. The arms never run at the same time: each round runs every
// arm once for a fixed duration (all SESSIONS clients looping tasks until the deadline), arm
// order rotated round by round.
// Every answer is checked (each of the 10 texts must be exactly "The sum of A and B is A+B.",
// with A unique per task); an isError, an exception or a wrong answer counts as an error.
// A reference arm (BENCH_RAW=0 drops it) sends the direct load from a minimal node:http client,
// to show what the upstream serves when the SDK client's own CPU is out of the way.
// Reports tasks/s, p50/p99 task latency, errors, CPU per task of every process (and of the rest
// of the machine, which is shared), RSS of the gateways and their codemcp-worker children.
// Usage: node bench/http_load.mjs [seconds_per_round=4] [rounds=4] [workers=4,2]
//        → bench/results/http_load.md
// Env: CODEMCP_BIN (binary), CODEMCP_BIN_BEFORE (a second binary, every gateway again from it,
//      side by side: e.g. a copy of main's build), BENCH_SESSIONS (default 50), BENCH_CALLS (default 10),
//      BENCH_CODEMCP_LOG=<prefix> keeps each gateway's stderr in <prefix>.w<n>.log (combine with
//      CODEMCP_LOG=info or debug; at info the report has each worker's start-up time),
//      BENCH_PRINCIPALS (default SESSIONS / 50, rounded up: bearer tokens the sessions share),
//      BENCH_OUT=<file> writes the report elsewhere,
//      BENCH_CAPS=32,0 runs one gateway per worker count and per upstream connection cap
//      (CODEMCP_HTTP_MAX_CONNECTIONS_PER_UPSTREAM; 0: none), side by side, with a capped /
//      uncapped table; every arm reports its peak upstream sockets.
// 200 sessions (bench/results/http_load_200.md): BENCH_SESSIONS=200 BENCH_CAPS=32,0
//      CODEMCP_LOG=info BENCH_OUT=bench/results/http_load_200.md node bench/http_load.mjs 3 4 200
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync, writeFileSync, mkdtempSync, existsSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import http from 'node:http';
import { join } from 'node:path';
import { ROOT, codemcpBin, stats, fmt, startEverythingHttp, getSumLoad, memKiB, startLogged, workerPids as allWorkerPids } from './lib.mjs';

const SECONDS = Number(process.argv[2] || 4);
const ROUNDS = Number(process.argv[3] || 4);
const WORKERS = String(process.argv[4] || '4,2').split(',').map(Number).filter((n) => n > 0);
// BENCH_CAPS=32,0: one gateway per worker count and per CODEMCP_HTTP_MAX_CONNECTIONS_PER_UPSTREAM
// value (0: no cap), side by side; unset: the gateways' default.
const CAPS = process.env.BENCH_CAPS ? process.env.BENCH_CAPS.split(',').map(Number) : [null];
// CODEMCP_BIN_BEFORE=<binary>: every gateway a second time from that binary (e.g. a copy of
// main's build), " before" in its name, in the same rounds; a before/after table is added.
const VARIANTS = [{ bin: codemcpBin(), tag: '' },
  ...(process.env.CODEMCP_BIN_BEFORE ? [{ bin: process.env.CODEMCP_BIN_BEFORE, tag: ' before' }] : [])];
const GWS = VARIANTS.flatMap((v) => WORKERS.flatMap((w) => CAPS.map((cap) => ({ w, cap, bin: v.bin, tag: v.tag,
  id: (cap === null ? `W=${w}` : `W=${w} ${cap > 0 ? `cap ${cap}` : 'uncapped'}`) + v.tag }))));
const SESSIONS = Number(process.env.BENCH_SESSIONS || 50);
const CALLS = Number(process.env.BENCH_CALLS || 10);
const WARMUP_SECONDS = 3;
const RAMP = 1; // seconds at the start of each round not counted in tasks/s
const TARGET = 0.8;
const RAW = process.env.BENCH_RAW !== '0';
const RAW_ARM = 'direct, raw HTTP (reference)';
if (SECONDS * ROUNDS + WARMUP_SECONDS > 20) throw new Error('keep each arm to ≤ 20 s of load (warm-up + seconds × rounds)');

const SDK = join(ROOT, 'tests/node_modules/@modelcontextprotocol/sdk/dist/esm');
const { Client } = await import(join(SDK, 'client/index.js'));
const { StreamableHTTPClientTransport } = await import(join(SDK, 'client/streamableHttp.js'));
const bin = codemcpBin();
const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-http-'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const procs = [];
const cleanup = () => {
  for (const p of procs) try { p.kill('SIGKILL'); } catch {}
  rmSync(dir, { recursive: true, force: true }); // server-everything logs every request
};
process.on('exit', cleanup);


// codemcp start requires a bearer token; the direct upstream ignores the header.
// Sessions are spread over PRINCIPALS tokens (session k uses token k % PRINCIPALS, from a
// CODEMCP_HTTP_TOKENS_FILE): one principal holding 200 sessions would run into the
// per-principal share of namespaces (CODEMCP_MAX_NAMESPACES_PER_PRINCIPAL, 64) by design.
const PRINCIPALS = Math.max(1, Number(process.env.BENCH_PRINCIPALS || Math.ceil(SESSIONS / 50)));
const tokenOf = (k) => `bench-http-load-token-${String(k % PRINCIPALS).padStart(4, '0')}-0123456789`;
async function connect(name, url, k = 0) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${tokenOf(k)}` } } });
  const client = new Client({ name, version: '1' });
  await client.connect(transport);
  return { client, transport, tools: (await client.listTools()).tools.map((t) => t.name) };
}

// ---- processes ------------------------------------------------------------------------------
const upstream = await startEverythingHttp(dir, procs);
const { port: upPort, url: upUrl, cfg } = upstream;

const tokensFile = join(dir, 'tokens');
writeFileSync(tokensFile, Array.from({ length: PRINCIPALS }, (_, k) => `bench${k} ${tokenOf(k)}\n`).join(''), { mode: 0o600 });
const gateways = {};
for (const g of GWS) {
  const log = process.env.BENCH_CODEMCP_LOG ? `${process.env.BENCH_CODEMCP_LOG}.${g.id.replace(/\W+/g, '_')}.log` : join(dir, `gw-${g.id.replace(/\W+/g, '_')}.log`);
  const env = { CODEMCP_CONFIG: cfg, CODEMCP_WORKERS: String(g.w), XDG_CONFIG_HOME: join(dir, 'xdg'), CODEMCP_HTTP_TOKENS_FILE: tokensFile,
    CODEMCP_LOG: process.env.CODEMCP_LOG || 'warn',
    // Every bench session comes from the same address (and up to SESSIONS / PRINCIPALS share a
    // principal): the per-principal and per-peer bounds (meant for floods) must fit SESSIONS
    // legitimate clients.
    CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL: String(Math.max(64, SESSIONS + 8)),
    CODEMCP_HTTP_MAX_PENDING_PER_PEER: String(Math.max(32, SESSIONS + 8)),
    CODEMCP_HTTP_MAX_PENDING: String(Math.max(256, SESSIONS + 8)),
    CODEMCP_HTTP_MAX_CONN_PER_PEER: String(Math.max(512, 4 * SESSIONS)) };
  if (g.cap !== null) env.CODEMCP_HTTP_MAX_CONNECTIONS_PER_UPSTREAM = String(g.cap);
  const st = await startLogged([g.bin, 'start', '-p', '0'], env, log,
    /serving MCP over Streamable HTTP at (\S+)/, procs);
  gateways[g.id] = { ...st, url: st.match[1], pid: st.proc.pid };
}
// The gateways' memory before any session (the per-session share is the growth from here).
const gwMem0 = Object.fromEntries(GWS.map((g) => [g.id, { ...memKiB(gateways[g.id].pid), pss: pssKiB(gateways[g.id].pid) }]));

// ---- arms -----------------------------------------------------------------------------------
let nextA = 1;
const { check, direct: directTask, program } = getSumLoad(CALLS);
const codemcpTask = async (c, a) => {
  const r = await c.client.callTool({ name: 'execute_python', arguments: { code: program(a) } });
  if (r.isError) throw new Error(`isError: ${JSON.stringify(r.structuredContent ?? r.content).slice(0, 400)}`);
  check(r.structuredContent?.result, a);
};

// Reference only: the same direct load from a lean hand-written client (node:http keep-alive,
// one POST per call, SSE reply parsed by hand), to show what server-everything itself can
// serve when the SDK client's own CPU is out of the way.
// A fresh agent per round: server-everything closes keep-alive sockets idle for 5 s (Node's
// default keepAliveTimeout), which they are while the other arms run, and reusing one of those
// races the close (ECONNRESET).
let rawAgent = new http.Agent({ keepAlive: true });
const freshRawAgent = () => { rawAgent.destroy(); rawAgent = new http.Agent({ keepAlive: true }); };
function rawPost(url, msg, sid) {
  const body = JSON.stringify(msg);
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
    'content-length': Buffer.byteLength(body) };
  if (sid) Object.assign(headers, { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' });
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers,
      agent: rawAgent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}
async function rawConnect(url) {
  const r = await rawPost(url, { jsonrpc: '2.0', id: 0, method: 'initialize', params: {
    protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench-raw', version: '1' } } });
  const sid = r.headers['mcp-session-id'];
  if (r.status !== 200 || !sid) throw new Error(`raw initialize: ${r.status} ${r.text.slice(0, 200)}`);
  await rawPost(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, sid);
  let id = 1;
  const request = async (method, params) => {
    const res = await rawPost(url, { jsonrpc: '2.0', id: id++, method, params }, sid);
    if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${res.text.slice(0, 200)}`);
    const t = res.text.trimStart();
    const msg = t.startsWith('{') ? JSON.parse(t)
      : JSON.parse(t.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n'));
    if (msg.error) throw new Error(JSON.stringify(msg.error));
    return msg.result;
  };
  const tools = (await request('tools/list', {})).tools.map((t) => t.name);
  return { client: { callTool: (p) => request('tools/call', p) }, tools,
    transport: { terminateSession: () => new Promise((resolve) => {
      const u = new URL(url);
      http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'DELETE', agent: rawAgent,
        headers: { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' } }, (res) => {
        res.resume(); res.on('end', resolve);
      }).on('error', resolve).end();
    }) } };
}

const arms = {};
async function makeArm(name, url, task, tool, connectFn = connect) {
  const clients = [];
  for (let k = 0; k < SESSIONS; k++) {
    const c = await connectFn(`bench-${name}-${k}`, url, k);
    if (!c.tools.includes(tool)) throw new Error(`${name}: no ${tool} in ${JSON.stringify(c.tools)}`);
    clients.push(c);
  }
  arms[name] = { clients, task, rounds: [], errors: [], lat: [] };
}
await makeArm('direct', upUrl, directTask, 'get-sum');
for (const g of GWS) await makeArm(`codemcp ${g.id}`, gateways[g.id].url, codemcpTask, 'execute_python');
if (RAW) await makeArm(RAW_ARM, upUrl, directTask, 'get-sum', (_, url) => rawConnect(url));
const ARMS = Object.keys(arms);

// ---- CPU accounting (ns on CPU, from /proc/<pid>/task/*/schedstat) ---------------------------
function cpuNs(pid) {
  let ns = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`))
      try { ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]); } catch {}
  } catch {}
  return ns;
}
// Every codemcp-worker below the gateway: sandboxed workers are grandchildren (waiter ->
// worker), so walk the tree (lib.mjs workerPids).
const workerPids = (gw) => allWorkerPids(gw);
// Proportional set size (KiB): shared pages (libpython, the SDK's code) split among the
// processes that map them, so a sum over processes is what the machine really holds.
function pssKiB(pid) {
  try { return Number(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').match(/^Pss:\s+(\d+)/m)?.[1] ?? NaN); }
  catch { return NaN; }
}
// All CPU time of the machine (ns), to tell how much of it other processes took: the VM is
// shared, and a round that ran while something else was busy is visible as such.
function machineNs() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const busy = f.reduce((a, b) => a + b, 0) - f[3] - (f[4] ?? 0); // minus idle and iowait
  return (busy * 1e9) / 100; // USER_HZ is 100 on Linux
}
const selfNs = () => { const u = process.cpuUsage(); return (u.user + u.system) * 1e3; };
function snapCpu() {
  const s = { machine: machineNs(), 'bench clients (node)': selfNs(), 'server-everything': cpuNs(upstream.proc.pid) };
  for (const g of GWS) {
    s[`gateway ${g.id}`] = cpuNs(gateways[g.id].pid);
    s[`workers ${g.id}`] = workerPids(gateways[g.id].pid).reduce((n, p) => n + cpuNs(p), 0);
  }
  return s;
}

// ---- upstream connections of one process ---------------------------------------------------
// Established TCP connections from `pid` to the upstream: the socket inodes of /proc/net/tcp
// (and tcp6) whose remote port is the upstream's, intersected with pid's descriptors. Sampled
// every SOCK_SAMPLE_MS during a round; the other arms' idle keep-alive sockets (the upstream
// closes them after 5 s) belong to other processes and are not counted.
const SOCK_SAMPLE_MS = 500;
const upPortHex = upPort.toString(16).toUpperCase().padStart(4, '0');
function upstreamSockets(pid) {
  const inodes = new Set();
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try { text = readFileSync(f, 'utf8'); } catch { continue; }
    for (const line of text.split('\n').slice(1)) {
      const c = line.trim().split(/\s+/);
      if (c.length > 9 && c[3] === '01' && c[2].endsWith(`:${upPortHex}`)) inodes.add(c[9]);
    }
  }
  let n = 0;
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const m = readlinkSync(`/proc/${pid}/fd/${fd}`).match(/^socket:\[(\d+)\]$/);
        if (m && inodes.has(m[1])) n++;
      } catch {}
    }
  } catch {}
  return n;
}
const armPid = (name) => { const g = GWS.find((q) => name === `codemcp ${q.id}`); return g ? gateways[g.id].pid : process.pid; };

// ---- rounds ---------------------------------------------------------------------------------
// One round: every client of the arm loops tasks until the deadline. Throughput counts the
// tasks completed inside the window [start + RAMP, deadline] — the load is then at full
// concurrency (every client has a task in flight), unlike at the start, when no task has
// completed yet, or after the deadline, when tasks drain. CPU is sampled at the window's ends
// too. Every task, ramp and drain included, is checked and its latency kept.
async function runRound(name, seconds, keep) {
  const arm = arms[name];
  if (name === RAW_ARM) freshRawAgent();
  const lat = [];
  let tasks = 0, errors = 0, inWindow = 0, open = false, w0 = 0, w1 = 0, before = null, after = null;
  // The round ends when the closer fires (not at a clock reading): a client whose last task
  // ended between a computed deadline and the closer's turn could otherwise finish the round
  // before the closer ran.
  let closed = false;
  const opener = setTimeout(() => { open = true; w0 = performance.now(); before = snapCpu(); }, RAMP * 1000);
  const closer = setTimeout(() => { open = false; closed = true; w1 = performance.now(); after = snapCpu(); }, seconds * 1000);
  let peakSockets = 0;
  const pid = armPid(name);
  const sampler = setInterval(() => { peakSockets = Math.max(peakSockets, upstreamSockets(pid)); }, SOCK_SAMPLE_MS);
  await Promise.all(arm.clients.map(async (c) => {
    while (!closed) {
      const a = nextA; nextA += CALLS + 1;
      const s = performance.now();
      try {
        await arm.task(c, a);
        lat.push(performance.now() - s);
        tasks++;
        if (open) inWindow++;
      } catch (e) {
        errors++;
        if (arm.errors.length < 5) arm.errors.push(String(e?.message ?? e).slice(0, 300));
        // A client whose calls fail at once (a closed transport rejects in a microtask) would
        // otherwise spin without ever yielding to the round's timers.
        await sleep(20);
      }
    }
  }));
  clearTimeout(opener);
  clearTimeout(closer);
  clearInterval(sampler);
  if (!keep) { arm.warmErrors = errors; arm.warmTasks = tasks; return; }
  if (!before || !after) throw new Error('round timers did not fire: the event loop was blocked');
  const cpu = Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - before[k]]));
  arm.rounds.push({ tasks: inWindow, all: tasks, errors, wall: w1 - w0, cpu, peakSockets });
  arm.lat.push(...lat);
}

// Every session runs one task first (untimed, answers checked): with one worker per session,
// 200 sessions start 200 sandboxed interpreters, which takes longer than any warm-up round.
const startT0 = performance.now();
const startErrors = {}, startArm = {};
for (const name of ARMS) {
  if (name === RAW_ARM) freshRawAgent(); // its keep-alive sockets idled while the others ran
  const a = arms[name], t = performance.now();
  const rs = await Promise.allSettled(a.clients.map((c) => a.task(c, (nextA += 1000))));
  startErrors[name] = rs.filter((r) => r.status === 'rejected').length;
  startArm[name] = (performance.now() - t) / 1000;
  const first = rs.find((r) => r.status === 'rejected');
  if (first && a.errors.length < 5) a.errors.push(`first task: ${String(first.reason?.message ?? first.reason).slice(0, 300)}`);
}
const startSeconds = (performance.now() - startT0) / 1000;
for (const name of ARMS) await runRound(name, WARMUP_SECONDS, false); // JIT, worker start, pools
for (let r = 0; r < ROUNDS; r++) {
  for (let k = 0; k < ARMS.length; k++) {
    await runRound(ARMS[(k + r) % ARMS.length], SECONDS, true);
    await sleep(300); // let the last responses and GC settle before the next arm
  }
}

// ---- memory at the end ----------------------------------------------------------------------
const memory = { 'server-everything': [memKiB(upstream.proc.pid)] }, perSession = {};
const threads = (pid) => { try { return Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/^Threads:\s+(\d+)/m)[1]); } catch { return 0; } };
const parentPid = (pid) => { try { return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[1]); } catch { return 0; } };
for (const g of GWS) {
  memory[`gateway ${g.id}`] = [{ ...memKiB(gateways[g.id].pid), pss: pssKiB(gateways[g.id].pid) }];
  // The codemcp-worker processes below the gateway, in three groups (summed): the sessions'
  // interpreters (the only ones with more than one thread: Python + its I/O thread), each one's
  // sandbox waiter (its parent), and the rest (the prototype and its sandbox's waiter and init).
  // RSS counts the prototype's shared pages in every forked process; Pss splits them.
  const wp = workerPids(gateways[g.id].pid);
  const interp = wp.filter((p) => threads(p) > 1);
  const parents = new Set(interp.map(parentPid));
  const waiters = wp.filter((p) => parents.has(p)), rest = wp.filter((p) => !interp.includes(p) && !parents.has(p));
  const group = (ps, n) => {
    const ms = ps.map(memKiB);
    return [{ rss: ms.reduce((a, m) => a + (m.rss || 0), 0), hwm: ms.reduce((a, m) => a + (m.hwm || 0), 0),
      pss: ps.reduce((a, p) => a + (pssKiB(p) || 0), 0), n }];
  };
  memory[`interpreters ${g.id} (${interp.length} processes)`] = group(interp, interp.length);
  memory[`their sandbox waiters ${g.id} (${waiters.length})`] = group(waiters, waiters.length);
  memory[`prototype + its sandbox ${g.id} (${rest.length})`] = group(rest, 0);
  const g1 = memory[`gateway ${g.id}`][0];
  perSession[g.id] = { n: interp.length, gwRss: (g1.rss - gwMem0[g.id].rss) / SESSIONS, gwPss: (g1.pss - gwMem0[g.id].pss) / SESSIONS,
    interp: memory[`interpreters ${g.id} (${interp.length} processes)`][0].pss / Math.max(1, interp.length),
    waiter: memory[`their sandbox waiters ${g.id} (${waiters.length})`][0].pss / Math.max(1, waiters.length) };
}
for (const name of ARMS) for (const c of arms[name].clients) {
  try { await c.transport.terminateSession(); } catch {}
  try { await c.client.close?.(); } catch {}
}
for (const g of GWS) gateways[g.id].proc.kill('SIGTERM');
await sleep(500);
upstream.proc.kill('SIGKILL');

// Worker start-up, from each gateway's log when it is at info level or above ("worker N
// connected (pid P) in X ms": from the start request to the worker's authenticated control
// connection, through the prototype), and the starts that hit CODEMCP_WORKER_START_TIMEOUT_MS.
const START_TIMEOUT = Number(process.env.CODEMCP_WORKER_START_TIMEOUT_MS || 15000);
const startRows = GWS.map((g) => {
  let text = '';
  try { text = readFileSync(gateways[g.id].log, 'utf8'); } catch {}
  const hits = [...text.matchAll(/worker \d+ connected \(pid \d+\) in (\d+) ms(?: \((\d+) ms queued\))?/g)];
  const ms = hits.map((m) => Number(m[1])), queued = hits.map((m) => Number(m[2] || 0));
  const own = ms.map((x, i) => x - queued[i]); // from its launch: what the start timeout measures
  const late = (text.match(/did not connect in time/g) || []).length;
  const protoFail = (text.match(/prototype[^\n]*(fail|exit|died|could not)/gi) || []).length;
  if (!ms.length) return `| codemcp ${g.id} | (log not at info level: run with CODEMCP_LOG=info) | | | | | | |`;
  const st = stats(ms), so = stats(own), sq = stats(queued);
  return `| codemcp ${g.id} | ${ms.length} | ${fmt(st.median, 0)} / ${fmt(st.p99, 0)} / ${fmt(st.max, 0)} | ` +
    `${fmt(sq.median, 0)} / ${fmt(sq.max, 0)} | ${fmt(so.median, 0)} / ${fmt(so.p99, 0)} / ${fmt(so.max, 0)} | ` +
    `${own.filter((x) => x > START_TIMEOUT).length} | ${late} | ${protoFail} |`;
});

// ---- report ---------------------------------------------------------------------------------
const sum = (xs) => xs.reduce((s, x) => s + x, 0);
const R = Object.fromEntries(ARMS.map((name) => {
  const a = arms[name];
  const tasks = sum(a.rounds.map((r) => r.tasks)), wall = sum(a.rounds.map((r) => r.wall));
  const errors = sum(a.rounds.map((r) => r.errors)), all = sum(a.rounds.map((r) => r.all));
  const cpu = {};
  for (const r of a.rounds) for (const [k, v] of Object.entries(r.cpu)) cpu[k] = (cpu[k] ?? 0) + v;
  return [name, { tasks, all, wall, errors, tps: tasks / (wall / 1000), lat: stats(a.lat), cpu,
    meanLat: sum(a.lat) / a.lat.length, peakSockets: Math.max(...a.rounds.map((r) => r.peakSockets)),
    perRound: a.rounds.map((r) => r.tasks / (r.wall / 1000)) }];
}));
const d = R.direct;
const MB = (k) => k / 1024;
const rows = ARMS.map((name) => {
  const x = R[name];
  const ratio = x.tps / d.tps;
  return `| ${name} | ${x.tasks} (${x.all}) | ${fmt(x.tps, 1)} | ${fmt(x.tps * CALLS, 0)} | ${fmt(x.lat.median, 1)} | ` +
    `${fmt(x.lat.p99, 1)} | ${fmt(x.lat.max, 1)} | ${x.errors} | ${x.peakSockets} | ` +
    (name === 'direct' ? '1.00× | – |' : name === RAW_ARM ? `${fmt(ratio, 2)}× | (reference) |`
      : `**${fmt(ratio, 2)}×** | ${ratio >= TARGET ? 'met' : '**missed**'} |`);
});
const roundRows = ARMS.map((name) => `| ${name} | ${R[name].perRound.map((t) => fmt(t, 1)).join(' | ')} |`);
// Paired per-round ratio: this round's codemcp tasks/s over the same round's direct tasks/s.
const paired = (name) => stats(R[name].perRound.map((t, i) => t / d.perRound[i])).median;
const procNames = Object.keys(d.cpu).filter((k) => k !== 'machine' &&
  ARMS.some((n) => R[n].cpu[k] / R[n].tasks > 1e3));
const cpuRows = ARMS.map((name) => {
  const x = R[name];
  const total = sum(Object.entries(x.cpu).filter(([k]) => k !== 'machine').map(([, v]) => v));
  return `| ${name} | ${procNames.map((k) => fmt(x.cpu[k] / 1e3 / x.tasks, 0)).join(' | ')} | ` +
    `${fmt(total / 1e3 / x.tasks, 0)} | ${fmt(total / 1e6 / x.wall, 2)} | ` +
    `${fmt(Math.max(0, x.cpu.machine - total) / 1e6 / x.wall, 2)} |`;
});
// Where a codemcp task's time goes, by Little's law: a worker runs one execute at a time, so
// with W workers always busy each run occupies its worker for W / throughput; the rest of the
// client-side latency is waiting for the session's pinned worker. Of the occupied time, the
// worker's own CPU is the Python part; the remainder is waiting for upstream replies (and
// hops through the gateway).
const busiest = (x) => Object.entries(x.cpu).filter(([k]) => k !== 'machine')
  .map(([k, v]) => [k, v / 1e6 / x.wall]).sort((p, q) => q[1] - p[1])[0];
const timeRows = ARMS.filter((n) => n.startsWith('codemcp')).map((n) => {
  const x = R[n], g = GWS.find((q) => n === `codemcp ${q.id}`);
  const service = (g.w * 1000) / x.tps;
  const workerCpu = x.cpu[`workers ${g.id}`] / 1e6 / x.tasks, gwCpu = x.cpu[`gateway ${g.id}`] / 1e6 / x.tasks;
  return `| ${n} | ${fmt(x.meanLat, 0)} | ${fmt(Math.max(0, x.meanLat - service), 0)} | ${fmt(service, 1)} | ` +
    `${fmt(workerCpu, 2)} | ${fmt(gwCpu, 2)} | ${fmt(service - workerCpu, 1)} |`;
});
const machineRows = ARMS.map((n) => {
  const x = R[n], [bk, bv] = busiest(x);
  return `| ${n} | ${bk} (${fmt(bv, 2)} cores) | ${fmt(x.cpu['server-everything'] / 1e6 / x.wall, 2)} | ` +
    `${fmt(x.cpu.machine / 1e6 / x.wall, 2)} of ${cpus().length} |`;
});
const memRows = Object.entries(memory).flatMap(([k, ms]) => ms.map((m, i) =>
  `| ${k}${ms.length > 1 ? ` #${i}` : ''} | ${fmt(MB(m.rss))} | ${fmt(MB(m.hwm))} | ${fmt(MB(m.pss ?? NaN))} | ` +
  `${m.n ? fmt(MB(m.pss / m.n), 2) : '–'} |`));
const cpuInfo = cpus();
const rev = (() => { try { return execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(); } catch { return '?'; } })();
const ver = (() => { try { return execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim(); } catch { return bin; } })();
const warmNote = ARMS.map((n) => `${n} ${arms[n].warmTasks} tasks / ${arms[n].warmErrors} errors`).join(', ');
const allErrors = ARMS.flatMap((n) => arms[n].errors.map((e) => `- ${n}: ${e}`));
const verdicts = ARMS.filter((n) => n.startsWith('codemcp')).map((n) => {
  const ratio = R[n].tps / d.tps;
  return `- ${n}: ${fmt(ratio, 2)}× direct throughput (paired per-round median ${fmt(paired(n), 2)}×), ` +
    `target ≥ ${TARGET}× ${ratio >= TARGET ? 'met' : '**missed**'}; errors ${R[n].errors} ` +
    `(target 0: ${R[n].errors === 0 ? 'met' : '**missed**'})` +
    (RAW ? `; against the raw-HTTP reference ${fmt(R[n].tps / R[RAW_ARM].tps, 2)}×` : '');
});

// Capped against uncapped gateways of the same worker count (BENCH_CAPS), per round and overall.
const capRows = WORKERS.flatMap((w) => {
  return GWS.filter((g) => g.w === w && g.cap > 0).flatMap((g) => {
    const un = GWS.find((q) => q.w === w && q.cap === 0 && q.tag === g.tag);
    return un ? [{ g, un }] : [];
  }).map(({ g, un }) => {
    const a = R[`codemcp ${g.id}`], b = R[`codemcp ${un.id}`];
    const pr = stats(a.perRound.map((t, i) => t / b.perRound[i])).median;
    return `| ${g.id} / ${un.id} | ${fmt(a.tps / b.tps, 2)}× (paired ${fmt(pr, 2)}×) | ${fmt(a.lat.median / b.lat.median, 2)}× | ` +
      `${fmt(a.lat.p99 / b.lat.p99, 2)}× | ${a.peakSockets} / ${b.peakSockets} | ${a.errors} / ${b.errors} |`;
  });
});
const capSection = capRows.length ? `
## Connection cap: capped against uncapped (same run, same worker count)

Peak upstream sockets = the most established TCP connections from the arm's process (the
gateway; for the two direct arms this Node process, which holds the sockets of both) to
server-everything, sampled every
${SOCK_SAMPLE_MS} ms during the rounds.

| gateways | throughput | p50 latency | p99 latency | peak upstream sockets | errors |
|---|---|---|---|---|---|
${capRows.join('\n')}
` : '';

// This build against CODEMCP_BIN_BEFORE's (same worker count and cap), per round and overall.
const beforeRows = GWS.filter((g) => g.tag).map((b) => {
  const g = GWS.find((q) => !q.tag && q.w === b.w && q.cap === b.cap);
  const x = R[`codemcp ${g.id}`], y = R[`codemcp ${b.id}`];
  const pr = stats(x.perRound.map((t, i) => t / y.perRound[i])).median;
  const gw = (n, q) => R[n].cpu[`gateway ${q.id}`] / 1e3 / R[n].tasks;
  const wk = (n, q) => R[n].cpu[`workers ${q.id}`] / 1e3 / R[n].tasks;
  return `| ${g.id} / ${b.id} | ${fmt(x.tps / d.tps, 2)}× / ${fmt(y.tps / d.tps, 2)}× | ${fmt(x.tps / y.tps, 2)}× (paired ${fmt(pr, 2)}×) | ` +
    `${fmt(gw(`codemcp ${g.id}`, g), 0)} / ${fmt(gw(`codemcp ${b.id}`, b), 0)} | ${fmt(wk(`codemcp ${g.id}`, g), 0)} / ${fmt(wk(`codemcp ${b.id}`, b), 0)} | ` +
    `${fmt(x.lat.p99, 0)} / ${fmt(y.lat.p99, 0)} | ${x.errors} / ${y.errors} |`;
});
const beforeSection = beforeRows.length ? `
## This build against CODEMCP_BIN_BEFORE (${process.env.CODEMCP_BIN_BEFORE}), same rounds

| gateways (this / before) | throughput vs direct | this / before | gateway CPU per task µs | workers CPU per task µs | p99 ms | errors |
|---|---|---|---|---|---|---|
${beforeRows.join('\n')}
` : '';

const report = `# Streamable HTTP load benchmark

${new Date().toISOString()} — ${SESSIONS} concurrent sessions per arm, ${CALLS} upstream calls per task,
${ROUNDS} rounds × ${SECONDS} s per arm after a ${WARMUP_SECONDS} s warm-up per arm; arm order rotated
round by round. ${cpuInfo.length} × ${cpuInfo[0]?.model ?? '?'}, Node ${process.version}, codemcp
\`${ver}\` at commit ${rev} (${bin}). Loopback only.

Arms (clients are the official SDK \`Client\` + \`StreamableHTTPClientTransport\`, all in this one
Node process; every arm talks to the same server-everything process in \`streamableHttp\` mode,
one arm at a time):
- **direct**: ${SESSIONS} sessions to server-everything; one task = ${CALLS} \`get-sum\` calls at once
  (\`Promise.all\`).
- **codemcp W=n**: ${SESSIONS} sessions to \`codemcp start\` with \`CODEMCP_WORKERS=n\` (server-everything
  configured as a \`remote\` upstream); one task = one \`execute_python\` running
  \`ps = [everything_get_sum(a=A + i, b=i) for i in range(${CALLS})]; result = [str(p) for p in ps]\`.
  One gateway per worker count, all started before the first round. A worker runs one execute
  at a time, so at most W × ${CALLS} upstream calls are in flight (direct: ${SESSIONS} × ${CALLS}).

One server-everything serves every arm (sessions are independent; a fresh process per arm
would hand each arm a different process age). Its in-memory event store keeps every SSE event
of every session, so it grows during the run (its RSS below); since the arms alternate round by
round, that drift falls on all of them alike.
${RAW ? `- **${RAW_ARM}**: the direct load from a minimal hand-written client (\`node:http\` keep-alive
  agent, one POST per call, the SSE reply parsed by hand) — not a target, it shows what the
  upstream serves when the SDK client's CPU is out of the way.
` : ''}
The codemcp sessions belong to ${PRINCIPALS} principal${PRINCIPALS > 1 ? 's' : ''} (bearer tokens of a \`CODEMCP_HTTP_TOKENS_FILE\`,
session k with token k mod ${PRINCIPALS}); the per-peer and per-principal session bounds are raised to
fit ${SESSIONS} sessions from one address, the namespace bounds are the defaults.

Every answer is checked text by text (A is unique per task); an \`isError\`, an exception or a
wrong answer is an error (warm-up, not counted below: ${warmNote}). Before the warm-up every
session ran one task (all arms: ${fmt(startSeconds, 1)} s — ${ARMS.map((n) => `${n} ${fmt(startArm[n], 1)} s`).join(', ')}; failed: ${JSON.stringify(startErrors)}), so every worker exists.
Latency is one task, client side, over all measured tasks. Throughput = tasks completed inside
each round's window [start + ${RAMP} s, deadline], when every client has a task in flight, / the
windows' length; tasks of the first second and those still in flight at a deadline (which drain
afterwards) are checked and timed, and counted in "incl. ramp+drain", not in tasks/s. CPU is
sampled at the windows' ends.

## Results

| arm | tasks (incl. ramp+drain) | tasks/s | upstream calls/s | p50 ms | p99 ms | max ms | errors | peak upstream sockets | throughput vs direct | target ≥ ${TARGET}× |
|---|---|---|---|---|---|---|---|---|---|---|
${rows.join('\n')}

${verdicts.join('\n')}

${capSection}${beforeSection}
Tasks/s per round (same round = same machine phase):

| arm | ${Array.from({ length: ROUNDS }, (_, i) => `round ${i + 1}`).join(' | ')} |
|---|${'---|'.repeat(ROUNDS)}
${roundRows.join('\n')}

## Worker start-up (the first task of every session, through the prototype)

Per worker, ms from the gateway asking for it to its authenticated control connection (gateway
log), split into the wait for a start place (CODEMCP_WORKER_START_CONCURRENCY) and the start
itself (from its launch: what CODEMCP_WORKER_START_TIMEOUT_MS = ${START_TIMEOUT} measures).

| gateway | workers started | total p50 / p99 / max | queued p50 / max | start itself p50 / p99 / max | over the timeout | killed by the timeout | prototype failures logged |
|---|---|---|---|---|---|---|---|
${startRows.join('\n')}

## CPU per task (µs on CPU, all threads; from /proc schedstat and process.cpuUsage)

| arm | ${procNames.join(' | ')} | total | cores busy | other processes (cores) |
|---|${'---|'.repeat(procNames.length + 3)}
${cpuRows.join('\n')}

"cores busy" = CPU used by the processes of this benchmark during the arm's windows / the
windows' length (the machine has ${cpuInfo.length}); "other processes" = the rest of the machine's busy
time in the same windows (/proc/stat; the VM is shared, so this says how quiet it was). The
bench clients' column is this Node process (the SDK clients of the arm).

## Where the time goes

Which process was busiest, and how full the machine was (all processes, /proc/stat), per arm:

| arm | busiest process | server-everything cores | machine busy (cores) |
|---|---|---|---|
${machineRows.join('\n')}

codemcp tasks, in ms (mean latency; a worker runs one execute at a time, so with every worker
busy a run holds its worker for W / throughput, and the rest of the latency is the wait for the
session's pinned worker; of the held time, worker CPU is Python and the remainder is waiting
for the upstream's replies through the gateway):

| arm | mean latency | waiting for the worker | run holds the worker | worker CPU per run | gateway CPU per run | worker waiting on upstream |
|---|---|---|---|---|---|---|
${timeRows.join('\n')}

## Memory at the end (MB; VmRSS, VmHWM = peak, Pss = shared pages split among their users)

Worker rows are sums over the codemcp-worker processes below the gateway, in three groups: the
sessions' interpreters (forked from the prototype; the processes with more than one thread), the
sandbox waiter of each, and the prototype with its own sandbox's waiter and init. RSS counts
the prototype's shared pages again in every process forked from it; Pss splits them among
their users, so Pss sums are what the machine holds. "Pss each" = the group's Pss / its processes.

| process | RSS | peak | Pss | Pss each |
|---|---|---|---|---|
${memRows.join('\n')}

Per session (memory that one more session costs):

| gateway | sessions | gateway RSS growth / session | gateway Pss growth / session | interpreter Pss | waiter Pss | total Pss per session |
|---|---|---|---|---|---|---|
${GWS.map((g) => { const m = perSession[g.id]; return `| ${g.id} | ${SESSIONS} (${m.n} interpreters) | ${fmt(m.gwRss, 0)} KiB | ${fmt(m.gwPss, 0)} KiB | ` +
  `${fmt(MB(m.interp), 2)} MB | ${fmt(MB(m.waiter), 2)} MB | **${fmt(MB(m.interp + m.waiter + m.gwPss), 2)} MB** |`; }).join('\n')}

${allErrors.length ? `## Errors (first of each arm)\n\n${allErrors.join('\n')}\n` : 'No errors in the measured rounds.\n'}`;

// A hand-written "## Findings" section at the end of the previous report (profiling notes, fixes)
// is carried over, so a re-run refreshes the numbers without losing it; edit it by hand.
const out = process.env.BENCH_OUT || join(ROOT, 'bench/results/http_load.md');
const prev = existsSync(out) ? readFileSync(out, 'utf8') : '';
const findings = prev.includes('\n## Findings') ? prev.slice(prev.indexOf('\n## Findings') + 1) : '';
writeFileSync(out, findings ? `${report}\n${findings}` : report);
process.stdout.write(report);
process.exit(0);
