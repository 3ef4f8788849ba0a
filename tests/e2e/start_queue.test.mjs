// Worker starts are bounded (CODEMCP_WORKER_START_CONCURRENCY, src/run/worker_spawn.c): N starts at
// once on P cores each take about N / P times one start, so 200 sessions whose first runs
// arrive together (the exec'd path, CODEMCP_PROTOTYPE=off) all ran past
// CODEMCP_WORKER_START_TIMEOUT_MS, were killed together and started again: no session ever got
// a worker (bench/results/http_load_200.md). Queued starts wait in order, their timeout not yet
// running. These tests read the order of the gateway's own log lines (one loop thread writes
// them), never how long anything took.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, Proc, ms, tempDir, waitFor, writeConfig, survivors, describeProcs } from './lib.mjs';

async function gateway(env) {
  const dir = tempDir('codemcp-start_queue-');
  const proc = new Proc({ args: ['start', '-p', '0', '--no-auth'], config: writeConfig(dir, {}), home: dir,
    env: { CODEMCP_WORKERS: '16', CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL: '64', CODEMCP_LOG: 'debug', ...env } });
  const found = await waitFor(() => proc.exit || proc.stderr.match(/serving MCP over Streamable HTTP at (\S+)/), ms(20000));
  assert.ok(found && found[1], proc.stderrTail());
  const open = async (name) => {
    const client = new Client({ name, version: '0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(found[1])), { timeout: ms(15000) });
    return client;
  };
  return { proc, open };
}

async function run(client, code) {
  const r = await client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(120000) });
  assert.equal(r.isError, false, JSON.stringify(r).slice(0, 2000));
  return r.structuredContent.result;
}

/** The most starts under way at once, from the exec path's log lines: "worker N started (pid
 *  P)" opens one, "worker N connected (pid P)" or "worker N (pid P) exited" closes it. */
function mostUnderWay(log) {
  const open = new Set();
  let most = 0;
  for (const line of log.split('\n')) {
    let m = line.match(/\[worker\] worker (\d+) started \(pid (\d+)\)/);
    if (m) { open.add(m[2]); most = Math.max(most, open.size); continue; }
    m = line.match(/\[worker\] worker \d+ connected \(pid (\d+)\)/) || line.match(/\[worker\] worker \d+ \(pid (\d+)\) exited/);
    if (m) open.delete(m[1]);
  }
  return most;
}

describe('bounded worker starts', () => {
  test('10 sessions whose first runs arrive at once: never more than 2 starts under way, every run answered', { timeout: ms(240000) }, async () => {
    const g = await gateway({ CODEMCP_PROTOTYPE: 'off', CODEMCP_WORKER_START_CONCURRENCY: '2' });
    const clients = await Promise.all(Array.from({ length: 10 }, (_, i) => g.open(`q${i}`)));
    const got = await Promise.all(clients.map((c, i) => run(c, `v = ${i}\nresult = v * 3`)));
    assert.deepEqual(got, Array.from({ length: 10 }, (_, i) => i * 3));
    const starts = (g.proc.stderr.match(/\[worker\] worker \d+ started \(pid/g) || []).length;
    assert.ok(starts >= 10, `only ${starts} starts logged:\n${g.proc.stderrTail()}`);
    const most = mostUnderWay(g.proc.stderr);
    assert.ok(most >= 1 && most <= 2, `${most} starts were under way at once (CODEMCP_WORKER_START_CONCURRENCY=2)`);
    // Each session kept its own interpreter.
    assert.deepEqual(await Promise.all(clients.map((c) => run(c, 'result = v'))), Array.from({ length: 10 }, (_, i) => i));
    for (const c of clients) await c.close().catch(() => {});
    await g.proc.kill();
  });

  test('through the prototype with one start place: 8 sessions at once all get their own worker', { timeout: ms(240000) }, async () => {
    const g = await gateway({ CODEMCP_WORKER_START_CONCURRENCY: '1' });
    const clients = await Promise.all(Array.from({ length: 8 }, (_, i) => g.open(`p${i}`)));
    const got = await Promise.all(clients.map((c, i) => run(c, `w = ${i}\nimport os\nresult = [w, os.getpid()]`)));
    assert.deepEqual(got.map((x) => x[0]), Array.from({ length: 8 }, (_, i) => i));
    assert.deepEqual(await Promise.all(clients.map((c) => run(c, 'result = w'))), Array.from({ length: 8 }, (_, i) => i));
    assert.ok(g.proc.exit === null, 'the gateway died');
    for (const c of clients) await c.close().catch(() => {});
    await g.proc.kill();
  });

  test('a gateway stopped while starts are queued exits and leaves no worker behind', { timeout: ms(120000) }, async () => {
    const g = await gateway({ CODEMCP_PROTOTYPE: 'off', CODEMCP_WORKER_START_CONCURRENCY: '1' });
    const clients = await Promise.all(Array.from({ length: 6 }, (_, i) => g.open(`s${i}`)));
    const pending = clients.map((c) => c.callTool({ name: 'execute_python', arguments: { code: 'result = 1' } },
      undefined, { timeout: ms(60000) }).catch((e) => e));
    // The six runs arrive within milliseconds; one exec'd start takes a whole interpreter's
    // start-up (≥ 100 ms even idle), so the second session's start always finds the place taken.
    assert.ok(await waitFor(() => /start queued/.test(g.proc.stderr), ms(30000)), `no start was queued:\n${g.proc.stderrTail()}`);
    g.proc.snapshot(); // the gateway's descendants now (pid -> start time)
    g.proc.child.kill('SIGTERM');
    const exit = await g.proc.waitExit(ms(30000));
    assert.equal(exit.code, 0, `exit ${JSON.stringify(exit)}:\n${g.proc.stderrTail()}`);
    for (const c of clients) await c.close().catch(() => {}); // their calls end with the gateway
    await Promise.all(pending);
    // Zombies count: a process nobody reaped is left behind too (the gateway reaps its own).
    assert.ok(await waitFor(() => survivors(g.proc.seen).length === 0, ms(10000)),
      `left behind: ${describeProcs(survivors(g.proc.seen))}`);
    await g.proc.kill();
  });
});
