// More sessions than Python workers: a program waits for a worker in a fair queue instead of
// being refused. Principals take turns (round-robin), one principal's idle sessions give way
// to another principal that waits (fair share of CODEMCP_WORKERS), the evicted session is told
// what it lost, and the queue is bounded (CODEMCP_RUN_QUEUE_MAX, CODEMCP_RUN_QUEUE_WAIT_MS)
// with errors naming the setting. All through `codemcp start` with a tokens file giving two
// principals, alice and bob, and the real worker pool.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { connectHttp, ms, startHttpGateway, waitFor } from './lib.mjs';

const TA = 'alice-token-0123456789abcdef', TB = 'bob-token-0123456789abcdef';
const start = (env) => startHttpGateway({ prefix: 'codemcp-fair-', env, tokens: { alice: TA, bob: TB } });
const session = (url, token) => connectHttp(url, token, 'fair-e2e');

function call(client, code) {
  return client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(60000) });
}

/** The envelope of a successful run (fails the test with the whole answer otherwise). */
function ok(r) {
  assert.equal(r.isError, false, JSON.stringify(r));
  return r.structuredContent;
}

test('three idle sessions of one principal holding variables do not lock another principal out of CODEMCP_WORKERS=3', async () => {
  const gw = await start({ CODEMCP_WORKERS: '3' });
  const clients = [];
  try {
    const alice = [];
    for (let i = 0; i < 3; i++) alice.push(await session(gw.url, TA));
    clients.push(...alice);
    for (let i = 0; i < 3; i++) assert.equal(ok(await call(alice[i], `mine = ${i}\nresult = mine`)).result, i);
    // Every worker now holds one of alice's sessions, all idle. Bob's program is not refused:
    // it waits (at most CODEMCP_WORKER_MIN_HOLD_MS) and one of alice's idle sessions gives way.
    const bob = await session(gw.url, TB);
    clients.push(bob);
    assert.equal(ok(await call(bob, 'b = 40 + 2\nresult = b')).result, 42);
    assert.equal(ok(await call(bob, 'result = b')).result, 42, 'bob keeps his worker and variables');
    // Only the least recently used of alice's sessions lost its worker (bob got one share).
    assert.equal(ok(await call(alice[1], 'result = mine')).result, 1);
    assert.equal(ok(await call(alice[2], 'result = mine')).result, 2);
    // The evicted session is told on its next run what was lost and why; its name is gone.
    const lost = await call(alice[0], 'result = mine');
    const env = lost.structuredContent;
    assert.match(env.error, /NameError/, JSON.stringify(lost));
    assert.match(env.notice, /its variables were discarded \(every namespace it held\)/, JSON.stringify(lost));
    assert.match(env.notice, /another session was waiting for a Python worker/);
    assert.match(env.notice, /fair share/);
    assert.doesNotMatch(JSON.stringify(lost), /try again in a moment/);
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    await gw.proc.kill();
  }
});

for (const hold of ['1000', '0']) {
  test(`twice as many busy sessions as workers, two principals: every program completes, none refused (CODEMCP_WORKER_MIN_HOLD_MS=${hold})`, async () => {
    const gw = await start({ CODEMCP_WORKERS: '2', CODEMCP_WORKER_MIN_HOLD_MS: hold });
    const clients = [];
    try {
      const tokens = [TA, TA, TA, TB];
      for (const t of tokens) clients.push(await session(gw.url, t));
      // Each session runs programs back to back, all sessions at once: 4 sessions on 2 workers.
      const loops = clients.map(async (c, k) => {
        const answers = [];
        for (let i = 0; i < 4; i++) answers.push(await call(c, `import time\ntime.sleep(0.05)\nresult = ${k * 100 + i}`));
        return answers;
      });
      const all = (await Promise.all(loops)).flat();
      for (const r of all) assert.equal(r.isError, false, JSON.stringify(r));
      assert.deepEqual(all.map((r) => r.structuredContent.result).sort((a, b) => a - b),
        [0, 1, 2, 3, 100, 101, 102, 103, 200, 201, 202, 203, 300, 301, 302, 303]);
      assert.doesNotMatch(gw.proc.stderr, /CODEMCP_RUN_QUEUE_WAIT_MS/);
    } finally {
      for (const c of clients) await c.close().catch(() => {});
      await gw.proc.kill();
    }
  });
}

test('principals take turns: with one worker, bob\'s program queued after three of alice\'s runs second, not last', async () => {
  const gw = await start({ CODEMCP_WORKERS: '1', CODEMCP_WORKER_MIN_HOLD_MS: '0', CODEMCP_LOG: 'debug' });
  const clients = [];
  try {
    const alice = [];
    for (let i = 0; i < 4; i++) alice.push(await session(gw.url, TA));
    const bob = await session(gw.url, TB);
    clients.push(...alice, bob);
    const done = [];
    const track = (who, p) => p.then((r) => { done.push(who); return r; });
    // One worker: alice's first program holds it while the others queue, alice's first.
    const running = track('a0', call(alice[0], 'import time\ntime.sleep(1)\nresult = 0'));
    await waitFor(() => /r\d+ sent to worker 0/.test(gw.proc.stderr), ms(20000));
    const queued = [];
    for (let i = 1; i < 4; i++) {
      queued.push(track(`a${i}`, call(alice[i], `result = ${i}`)));
      await waitFor(() => (gw.proc.stderr.match(/queued for session/g) || []).length >= i + 1, ms(10000));
    }
    queued.push(track('bob', call(bob, 'result = "bob"')));
    const all = await Promise.all([running, ...queued]);
    for (const r of all) assert.equal(r.isError, false, JSON.stringify(r));
    // The programs ran one at a time, so they finished in the order they got the worker.
    assert.deepEqual(done, ['a0', 'bob', 'a1', 'a2', 'a3'], 'round-robin across principals, FIFO within one');
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    await gw.proc.kill();
  }
});

test('a program queued behind its session\'s running one still runs when that session gives its worker to another principal: fresh, and told why', async () => {
  const gw = await start({ CODEMCP_WORKERS: '1', CODEMCP_LOG: 'debug' });
  const clients = [];
  try {
    const alice = await session(gw.url, TA);
    const bob = await session(gw.url, TB);
    clients.push(alice, bob);
    const first = call(alice, 'x = 1\nimport time\ntime.sleep(1.5)\nresult = x');
    first.catch(() => {});
    await waitFor(() => /r\d+ sent to worker 0/.test(gw.proc.stderr), ms(20000));
    const second = call(alice, 'result = x'); // waits behind the first, in alice's namespace
    second.catch(() => {});
    await waitFor(() => (gw.proc.stderr.match(/queued for session/g) || []).length >= 2, ms(10000));
    const bobs = call(bob, 'result = "bob"'); // alice holds the only worker: bob waits his turn
    assert.equal(ok(await first).result, 1);
    assert.equal(ok(await bobs).result, 'bob');
    const r = await second;
    const env = r.structuredContent;
    assert.match(env.error, /NameError/, JSON.stringify(r));
    assert.doesNotMatch(env.error, /discarded while the run waited/);
    assert.match(env.notice, /another session was waiting for a Python worker/, JSON.stringify(r));
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    await gw.proc.kill();
  }
});

test('the queue is bounded: past CODEMCP_RUN_QUEUE_MAX and past CODEMCP_RUN_QUEUE_WAIT_MS a program gets an error naming the setting', async () => {
  const gw = await start({ CODEMCP_WORKERS: '1', CODEMCP_RUN_QUEUE_MAX: '2', CODEMCP_RUN_QUEUE_WAIT_MS: '1500', CODEMCP_LOG: 'debug' });
  const clients = [];
  try {
    for (let i = 0; i < 4; i++) clients.push(await session(gw.url, TA));
    const bob = await session(gw.url, TB);
    clients.push(bob);
    // The one worker runs a long program of alice's first session.
    const long = call(clients[0], 'import time\ntime.sleep(6)\nresult = "slept"');
    long.catch(() => {}); // awaited below; a failed assertion first must not hide behind it
    await waitFor(() => /r\d+ sent to worker 0/.test(gw.proc.stderr), ms(20000));
    // Two more of alice's programs wait (the bound); a third is refused at once, naming it.
    const waiting = [call(clients[1], 'result = 1'), call(clients[2], 'result = 2')];
    for (const w of waiting) w.catch(() => {});
    await waitFor(() => (gw.proc.stderr.match(/queued for session/g) || []).length >= 3, ms(10000));
    const refused = await call(clients[3], 'result = 3');
    assert.equal(refused.isError, true, JSON.stringify(refused));
    assert.match(refused.content[0].text, /CODEMCP_RUN_QUEUE_MAX/, JSON.stringify(refused));
    // The bound is per principal: bob's program is queued, not refused.
    const bobs = call(bob, 'result = "bob"');
    bobs.catch(() => {});
    // Nobody gets the worker within CODEMCP_RUN_QUEUE_WAIT_MS: each waiting program fails,
    // saying so and naming the setting (a run is never stopped to make room).
    for (const r of [...await Promise.all(waiting), await bobs]) {
      assert.equal(r.isError, true, JSON.stringify(r));
      assert.match(JSON.stringify(r), /waited 1500 ms for a Python worker/);
      assert.match(JSON.stringify(r), /CODEMCP_RUN_QUEUE_WAIT_MS/);
    }
    assert.equal(ok(await long).result, 'slept', 'the running program was not disturbed');
    // With the worker free again, the queue serves the next program.
    assert.equal(ok(await call(clients[3], 'result = 3')).result, 3);
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    await gw.proc.kill();
  }
});
