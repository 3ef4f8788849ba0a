// Hostile and racing use of the input relay and of the 2026 deferred replies:
// the real binary, the SDK v2 server fixture (tests/v2/server.mjs, its `confirm` tool answers
// an InputRequiredResult until the retry carries ok=true) as the upstream, raw 2026 POSTs.
// - a run that ends while its requestState is pending (the program stopped waiting for the
//   call) keeps its answer for the retry instead of dropping it;
// - two retries of one requestState at once: one continues the run, the other is told;
// - two calls of one run asking at once: one is relayed, the other fails with input_required;
// - the upstream dies while the call waits: the retry still ends the run with an answer;
// - a client that hangs up while its deferred (JSON) reply waits frees its place and worker.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { NODE, Proc, TESTS, descendants, ms, sleep, tempDir, waitFor, writeConfig, sharedHttpGateway, meta2026 } from './lib.mjs';

const V2SERVER = path.join(TESTS, 'v2', 'server.mjs');
const V = '2026-07-28';
const CAPS = { elicitation: { form: {} } };
const meta = (caps = CAPS) => meta2026('relay-review', caps);
const TA = 'alice-token-0123456789abcdef', TB = 'bob-token-0123456789abcdef';
const YES = { ok: { action: 'accept', content: { ok: true } } };

describe('input relay and deferred replies, hostile peers', () => {
  const g = sharedHttpGateway({ prefix: 'codemcp-relayrev-', tokens: { alice: TA, bob: TB },
    mcp: { v2: { type: 'local', command: [NODE, V2SERVER] }, w2: { type: 'local', command: [NODE, V2SERVER, '--name', 'w2'] } },
    env: { CODEMCP_WORKERS: '4', CODEMCP_INPUT_WAIT_MS: String(ms(30000)), CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL: '2', CODEMCP_LOG: 'info' } });

  /** One raw 2026 tools/call of execute_python; resolves the final JSON-RPC message. */
  function call(token, id, args, extra = {}, { signal } = {}) {
    const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { _meta: meta(), name: 'execute_python', arguments: args, ...extra } });
    const u = new URL(g.url);
    return new Promise((resolve, reject) => {
      const req = http.request({ hostname: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent: false, signal, headers: {
        'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`,
        'mcp-protocol-version': V, 'mcp-method': 'tools/call', 'mcp-name': 'execute_python', 'content-length': Buffer.byteLength(body) } }, (res) => {
        let t = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (t += d));
        res.on('end', () => {
          try {
            const msgs = /event-stream/.test(res.headers['content-type'] || '')
              ? t.split('\n').filter((l) => l.startsWith('data: ') && l.length > 6).map((l) => JSON.parse(l.slice(6)))
              : [JSON.parse(t)];
            resolve({ status: res.statusCode, msg: msgs.filter((m) => m.id === id).at(-1), text: t });
          } catch (e) {
            resolve({ status: res.statusCode, msg: null, text: t });
          }
        });
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  test('a run that ends while its requestState is pending keeps its answer for the retry', async () => {
    // The program does not wait for the call that asks: it raises after 3 s (the upstream's
    // input_required comes back within milliseconds), so the run ends while the client holds
    // the requestState. Its answer must not be lost: the retry gets it.
    const args = { code: 'p = v2_confirm(action="a")\nimport time\ntime.sleep(3)\nraise ValueError("stopped waiting")' };
    const mark = g.proc.stderr.length;
    const first = await call(TA, 1, args);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.msg.result.resultType, 'input_required', first.text);
    const st = first.msg.result.requestState;
    // The run ends meanwhile (the log says so), then the retry comes.
    assert.ok(await waitFor(() => /finished in \d+ ms/.test(g.proc.stderr.slice(mark)) || null,
      ms(20000), 50), `the run never ended:\n${g.proc.stderrTail()}`);
    const retry = await call(TA, 2, args, { requestState: st, inputResponses: YES });
    assert.equal(retry.status, 200, retry.text);
    assert.ok(retry.msg.result, `the run's answer was lost: ${retry.text}`);
    assert.equal(retry.msg.result.isError, true, retry.text);
    assert.match(retry.msg.result.structuredContent.error, /stopped waiting/, retry.text);
    assert.equal(retry.msg.result.resultType, 'complete', retry.text);
    // Kept for that principal and those arguments only, and for one retry.
    const bob = await call(TB, 3, args, { requestState: st, inputResponses: YES });
    assert.match(bob.msg.error?.message ?? '', /already answered|another principal/, bob.text);
    const again = await call(TA, 4, args, { requestState: st, inputResponses: YES });
    assert.match(again.msg.error?.message ?? '', /already answered/, again.text);
  });

  test('a pending requestState (the run waits for its call) goes only to its principal and arguments', async () => {
    const args = { code: 'p = v2_confirm(action="b")\nimport time\ntime.sleep(2)\nresult = "went on"' };
    const first = await call(TA, 10, args);
    assert.equal(first.msg.result.resultType, 'input_required', first.text);
    const st = first.msg.result.requestState;
    const mark = g.proc.stderr.length;
    // settle_open_calls waits for the call at the end: this run stays until the retry.
    await sleep(ms(2500));
    assert.ok(!/finished in/.test(g.proc.stderr.slice(mark)), 'the run ended without its call');
    const bob = await call(TB, 11, args, { requestState: st, inputResponses: YES });
    assert.match(bob.msg.error?.message ?? '', /another principal/, bob.text);
    const other = await call(TA, 12, { code: 'result = 1' }, { requestState: st, inputResponses: YES });
    assert.match(other.msg.error?.message ?? '', /other arguments/, other.text);
    const done = await call(TA, 13, args, { requestState: st, inputResponses: YES });
    assert.equal(done.msg.result?.structuredContent?.result, 'went on', done.text);
  });

  test('two retries of one requestState at once: exactly one continues the run', async () => {
    const args = { code: 'result = str(v2_confirm(action="twice"))' };
    const first = await call(TA, 20, args);
    const st = first.msg.result.requestState;
    assert.ok(st, first.text);
    const [a, b] = await Promise.all([
      call(TA, 21, args, { requestState: st, inputResponses: YES }),
      call(TA, 22, args, { requestState: st, inputResponses: YES }),
    ]);
    const won = [a, b].filter((r) => r.msg?.result?.structuredContent?.result === 'done: twice');
    const lost = [a, b].filter((r) => /already answered/.test(r.msg?.error?.message ?? ''));
    assert.equal(won.length, 1, `${a.text}\n${b.text}`);
    assert.equal(lost.length, 1, `${a.text}\n${b.text}`);
  });

  test('two calls of one run asking at once: one is relayed, the other fails or waits its turn', async () => {
    // Two servers: calls that write to one server go in program order, so confirm on v2 and on
    // w2 overlap. One relayed input per run at a time: the other call's input_required fails
    // it (kind input_required), or, when it comes after the retry, is relayed in its turn.
    const code = [
      'a = v2_confirm(action="one")',
      'b = w2_confirm(action="two")',
      'out = []',
      'for p in (a, b):',
      '    try:',
      '        out.append(str(p))',
      '    except ToolError as e:',
      '        out.append(e.kind)',
      'result = out',
    ].join('\n');
    let r = await call(TA, 30, { code });
    const asked = [];
    for (let id = 31; r.msg?.result?.resultType === 'input_required' && id < 36; id++) {
      asked.push(r.msg.result.inputRequests.ok.params.message);
      r = await call(TA, id, { code }, { requestState: r.msg.result.requestState, inputResponses: YES });
    }
    const out = r.msg?.result?.structuredContent?.result;
    assert.ok(Array.isArray(out), r.text);
    assert.ok(asked.length >= 1 && asked.length <= 2, JSON.stringify(asked));
    const want = ['one', 'two'].map((x) => (asked.includes(`Really ${x}?`) ? `done: ${x}` : 'input_required'));
    assert.deepEqual(out, want, `${JSON.stringify(asked)} ${r.text}`);
  });

  test('deeply nested and large inputResponses: answered, the gateway lives', async () => {
    const args = { code: 'result = str(v2_confirm(action="deep"))' };
    const first = await call(TA, 35, args);
    const st = first.msg.result.requestState;
    assert.ok(st, first.text);
    // Past the JSON parser's depth bound (2048): the request is refused as a parse error,
    // the requestState stays good.
    const deep = '['.repeat(5000) + ']'.repeat(5000);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 36, method: 'tools/call', params: { _meta: meta(), name: 'execute_python', arguments: args, requestState: st, inputResponses: { x: 0 } } })
      .replace('{"x":0}', `{"x":${deep}}`);
    const u = new URL(g.url);
    const refused = await new Promise((resolve, reject) => {
      const req = http.request({ hostname: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent: false, headers: {
        'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${TA}`,
        'mcp-protocol-version': V, 'mcp-method': 'tools/call', 'mcp-name': 'execute_python', 'content-length': Buffer.byteLength(body) } }, (res) => {
        let t = '';
        res.on('data', (d) => (t += d));
        res.on('end', () => resolve({ status: res.statusCode, text: t }));
      });
      req.on('error', reject);
      req.end(body);
    });
    assert.equal(refused.status, 400, refused.text);
    // Nested 1,000 deep and 300 kB wide (within the bounds): passed on to the upstream.
    const nested = JSON.parse('['.repeat(1000) + ']'.repeat(1000));
    const done = await call(TA, 37, args, { requestState: st, inputResponses: { ...YES, junk: { nested, wide: 'x'.repeat(300000) } } });
    assert.equal(done.msg?.result?.structuredContent?.result, 'done: deep', done.text.slice(0, 2000));
  });

  test('bodies with a NUL byte, a \\u0000, duplicate keys: a clear 400 or the last key, never both', async () => {
    const u = new URL(g.url);
    const raw = (body, method) => new Promise((resolve, reject) => {
      const buf = Buffer.from(body, 'latin1');
      const req = http.request({ hostname: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent: false, headers: {
        'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${TA}`,
        'mcp-protocol-version': V, 'mcp-method': method, 'content-length': buf.length } }, (res) => {
        let t = '';
        res.on('data', (d) => (t += d));
        res.on('end', () => resolve({ status: res.statusCode, text: t }));
      });
      req.on('error', reject);
      req.end(buf);
    });
    const m = JSON.stringify(meta());
    const nul = await raw(`{"jsonrpc":"2.0","id":1,\u0000"method":"tools/list","params":{"_meta":${m}}}`, 'tools/list');
    assert.equal(nul.status, 400, nul.text);
    assert.match(nul.text, /-32700/, nul.text);
    const esc = await raw(`{"jsonrpc":"2.0","id":2,"method":"tools/list\\u0000x","params":{"_meta":${m}}}`, 'tools/list');
    assert.equal(esc.status, 400, esc.text);
    const keyNul = await raw(`{"jsonrpc":"2.0","id":3,"method\\u0000x":"ping","method":"tools/list","params":{"_meta":${m}}}`, 'tools/list');
    assert.equal(keyNul.status, 400, keyNul.text);
    // Duplicate "method": the last one is the method (one parse), checked against Mcp-Method.
    const dup = `{"jsonrpc":"2.0","id":4,"method":"tools/call","method":"tools/list","params":{"_meta":${m}}}`;
    const last = await raw(dup, 'tools/list');
    assert.equal(last.status, 200, last.text);
    assert.ok(JSON.parse(last.text).result.tools.some((t) => t.name === 'execute_python'), last.text);
    const first = await raw(dup, 'tools/call');
    assert.equal(first.status, 400, first.text);
    assert.match(first.text, /-32020|-32001|mismatch/i, first.text);
  });

  test('the upstream dies while the call waits: the retry still gets an answer, the gateway lives', async () => {
    const args = { code: 'try:\n    result = str(v2_confirm(action="die"))\nexcept ToolError as e:\n    result = "tool error: " + e.kind' };
    const first = await call(TA, 40, args);
    const st = first.msg.result.requestState;
    assert.ok(st, first.text);
    const ups = descendants(g.proc.child.pid).filter((p) => p.comm.startsWith('node'));
    assert.ok(ups.length >= 1, 'no upstream process found');
    for (const p of ups) process.kill(p.pid, 'SIGKILL');
    await sleep(ms(300));
    const r = await call(TA, 41, args, { requestState: st, inputResponses: YES });
    assert.equal(r.status, 200, r.text);
    assert.equal(typeof r.msg.result?.structuredContent?.result, 'string', r.text);
    // The upstream comes back (restart) and the next run works.
    assert.ok(await waitFor(async () => (await call(TA, 42, { code: 'result = v2_add(a=1, b=2)' })).msg?.result?.structuredContent?.result === 3 || null,
      ms(30000), 500), `the upstream never came back:\n${g.proc.stderrTail()}`);
  });

  test('clients that hang up while their deferred replies wait free their places and the worker', async () => {
    // CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL=2: bob's third request is refused while two are
    // open (one runs, one is queued behind it on bob's worker). Nothing has been written on
    // them (a JSON reply waits for the answer).
    const acs = [new AbortController(), new AbortController()];
    let answered = 0;
    const ps = acs.map((ac, i) => call(TB, 50 + i, { code: 'import time\ntime.sleep(60)\nresult = "late"' }, {}, { signal: ac.signal })
      .then(() => answered++, () => {}));
    assert.ok(await waitFor(async () => (await call(TB, 59, { code: 'result = 0' })).status === 429 || null, ms(10000), 100),
      'the open requests did not hold their places');
    for (const ac of acs) ac.abort();
    await Promise.all(ps);
    assert.equal(answered, 0, 'a deferred reply was answered before the hang-up');
    // The places come back and bob's worker is held neither by the running nor the queued run.
    assert.ok(await waitFor(async () => (await call(TB, 60, { code: 'result = 5' })).msg?.result?.structuredContent?.result === 5 || null,
      ms(20000), 200), `the places or the worker were never released:\n${g.proc.stderrTail()}`);
  });
});
