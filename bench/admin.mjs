// Benchmark: what live control costs. One stdio gateway in front of everything and
// memory; a line-protocol MCP client runs `execute_python` programs back to back, in blocks
// that alternate (a) quiet and (b) while a tool of the other server is toggled off and on over
// the admin socket every 50 ms (each toggle regenerates the SDK, reloads it into the worker and
// sends tools/list_changed). Also: the admin socket's round trip (`list`), and the time from a
// disable-tool request to the client's tools/list_changed.
// Usage: node bench/admin.mjs [blocks] [ms-per-block]   → bench/results/admin.md
import net from 'node:net';
import { writeFileSync, mkdtempSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LinePeer, SERVERS, codemcpBin, stats, fmt, ROOT, untilSdkReady } from './lib.mjs';

const blocks = Number(process.argv[2] || 6);
const blockMs = Number(process.argv[3] || 1500);
const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-admin-'));
const cfg = join(dir, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcp: {
  everything: { type: 'local', command: SERVERS.everything },
  memory: { type: 'local', command: SERVERS.memory, environment: { MEMORY_FILE_PATH: join(dir, 'm.json') } },
} }));
const rt = join(dir, 'rt');
mkdirSync(rt);
const peer = new LinePeer([codemcpBin()], { CODEMCP_CONFIG: cfg, XDG_RUNTIME_DIR: rt, XDG_CONFIG_HOME: dir });
let listChanged = [];
peer.proc.stdout.on('data', (d) => {
  if (String(d).includes('notifications/tools/list_changed')) listChanged.push(process.hrtime.bigint());
});
await peer.initialize();

function admin(method, params) {
  const recDir = join(rt, 'codemcp');
  const rec = JSON.parse(readFileSync(join(recDir, readdirSync(recDir).find((f) => f.endsWith('.json'))), 'utf8'));
  return new Promise((resolve, reject) => {
    const s = net.createConnection(rec.socket);
    let buf = '';
    s.on('connect', () => s.write(JSON.stringify({ method, params }) + '\n'));
    s.on('data', (d) => { buf += d; });
    s.on('end', () => resolve(JSON.parse(buf)));
    s.on('error', reject);
  });
}

const run = (code) => peer.request('tools/call', { name: 'execute_python', arguments: { code } });
await untilSdkReady(async () => {
  const r = await run('result = everything_echo(message="warm")');
  if (r.result?.isError) throw new Error(JSON.stringify(r.result.structuredContent));
  return r;
});
await peer.request('tools/list');

async function block(toggling) {
  let stop = false, toggles = 0;
  const toggler = (async () => {
    while (toggling && !stop) {
      await admin(toggles % 2 ? 'enable_tool' : 'disable_tool', { server: 'memory', tool: 'read_graph' });
      toggles++;
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const times = [];
  const end = Date.now() + blockMs;
  while (Date.now() < end) {
    const t0 = process.hrtime.bigint();
    const r = await run('result = [everything_echo(message="x%d" % i) for i in range(3)]');
    if (!r.result || r.result.isError) throw new Error(`run failed: ${JSON.stringify(r)}`);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  stop = true;
  await toggler;
  if (toggles % 2) await admin('enable_tool', { server: 'memory', tool: 'read_graph' });
  return { times, toggles };
}

const quiet = [], busy = [];
let totalToggles = 0;
for (let b = 0; b < blocks; b++) {
  quiet.push(...(await block(false)).times);
  const r = await block(true);
  busy.push(...r.times);
  totalToggles += r.toggles;
}

// Admin round trip, and disable-tool -> tools/list_changed at the client.
const rtt = [], notify = [];
for (let i = 0; i < 30; i++) {
  const t0 = process.hrtime.bigint();
  await admin('list');
  rtt.push(Number(process.hrtime.bigint() - t0) / 1e6);
}
for (let i = 0; i < 15; i++) {
  await peer.request('tools/list'); // a session that listed gets the next notification
  listChanged = [];
  const t0 = process.hrtime.bigint();
  await admin('disable_tool', { server: 'memory', tool: 'read_graph' });
  while (!listChanged.length) await new Promise((r) => setTimeout(r, 1));
  notify.push(Number(listChanged[0] - t0) / 1e6);
  await peer.request('tools/list');
  await admin('enable_tool', { server: 'memory', tool: 'read_graph' });
}
await peer.close();

const q = stats(quiet), t = stats(busy), a = stats(rtt), n = stats(notify);
const out = `# Live control benchmark

${new Date().toISOString()} — ${blocks} blocks of ${blockMs} ms each way, interleaved (${q.n} quiet runs,
${t.n} toggling runs); one stdio
gateway (everything + memory), a line-protocol client. A run is
\`result = [everything_echo(message=...) for i in range(3)]\`. "Toggling": \`disable_tool\` /
\`enable_tool\` of memory/read_graph over the admin socket every 50 ms during the block
(${totalToggles} toggles in all; each regenerates the SDK, reloads it into the worker and sends
tools/list_changed).

| | median ms | p99 ms | min ms |
|---|---|---|---|
| execute_python, quiet | ${fmt(q.median, 2)} | ${fmt(q.p99, 2)} | ${fmt(q.min, 2)} |
| execute_python, while toggling | ${fmt(t.median, 2)} | ${fmt(t.p99, 2)} | ${fmt(t.min, 2)} |
| admin \`list\` round trip (connect, request, reply) | ${fmt(a.median, 2)} | ${fmt(a.p99, 2)} | ${fmt(a.min, 2)} |
| \`disable_tool\` sent → client has tools/list_changed | ${fmt(n.median, 2)} | ${fmt(n.p99, 2)} | ${fmt(n.min, 2)} |

- Runs while the SDK is swapped 20 times a second: **${fmt(t.median / q.median, 2)}×** the quiet
  median (p99 ${fmt(t.p99 / q.p99, 2)}×).
- No run failed in either mode (a failed run aborts the benchmark).
`;
writeFileSync(join(ROOT, 'bench', 'results', 'admin.md'), out);
console.log(out);
