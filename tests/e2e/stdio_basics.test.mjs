// MCP over stdio, spoken line by line to the real binary with no upstreams (an empty
// XDG_CONFIG_HOME, no CODEMCP_CONFIG): version negotiation, ping, tools/list, notifications,
// logging/setLevel and every JSON-RPC error class.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { RawClient, ms, sleep, tempDir } from './lib.mjs';

const VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];

/** A codemcp with zero upstreams. */
function bare(env = {}) {
  return new RawClient({ home: tempDir('codemcp-noconf-'), env });
}

function assertError(msg, code, id) {
  assert.ok(msg.error, `expected an error ${code}, got ${JSON.stringify(msg)}`);
  assert.equal(msg.error.code, code, JSON.stringify(msg));
  assert.equal(typeof msg.error.message, 'string');
  assert.ok(msg.error.message.length > 0, 'error message is empty');
  assert.equal(msg.jsonrpc, '2.0');
  assert.ok(!('result' in msg), 'an error response must not carry a result');
  if (id !== undefined) assert.deepEqual(msg.id, id);
}

function assertStdoutClean(c) {
  assert.deepEqual(c.nonJson, [], 'stdout must carry only JSON-RPC messages');
}

for (const v of VERSIONS) {
  test(`initialize negotiates ${v}`, async () => {
    const c = bare();
    const r = await c.request('initialize', {
      protocolVersion: v,
      capabilities: {},
      clientInfo: { name: 'e2e', version: '0' },
    });
    assert.equal(r.jsonrpc, '2.0');
    assert.equal(r.result.protocolVersion, v);
    assert.equal(r.result.capabilities.tools.listChanged, true);
    assert.equal(typeof r.result.serverInfo.name, 'string');
    assert.equal(typeof r.result.serverInfo.version, 'string');
    assertStdoutClean(c);
  });
}

test('initialize with an unknown version answers our latest, 2025-11-25', async () => {
  for (const v of ['1999-01-01', '2099-12-31', 'not-a-version']) {
    const c = bare();
    const r = await c.request('initialize', {
      protocolVersion: v,
      capabilities: {},
      clientInfo: { name: 'e2e', version: '0' },
    });
    assert.equal(r.result?.protocolVersion, '2025-11-25', `for ${v}: ${JSON.stringify(r)}`);
    await c.kill();
  }
});

test('initialize is answered at once, before any tools/list', async () => {
  const c = bare();
  const t0 = Date.now();
  await c.initialize();
  // Generous bound: a gateway with no upstreams has nothing to wait for.
  assert.ok(Date.now() - t0 < ms(3000), `initialize took ${Date.now() - t0} ms`);
});

test('ping answers an empty result and echoes ids of every JSON type', async () => {
  const c = bare();
  await c.initialize();
  for (const id of [0, 7, -3, 2 ** 40, 'abc', 'p-1', '']) {
    const r = await c.request('ping', undefined, { id });
    assert.deepEqual(r.id, id);
    assert.deepEqual(r.result, {}, JSON.stringify(r));
  }
  const withParams = await c.request('ping', {});
  assert.deepEqual(withParams.result, {});
  assertStdoutClean(c);
});

test('tools/list has exactly execute_python with code required', async () => {
  const c = bare();
  await c.initialize();
  const r = await c.request('tools/list', {}, { limit: ms(15000) });
  const tools = r.result.tools;
  assert.equal(tools.length, 1, JSON.stringify(tools.map((t) => t.name)));
  const t = tools[0];
  assert.equal(t.name, 'execute_python');
  assert.equal(typeof t.description, 'string');
  assert.ok(t.description.length > 0);
  const s = t.inputSchema;
  assert.equal(s.type, 'object');
  assert.deepEqual(s.required, ['code']);
  assert.equal(s.properties.code.type, 'string');
  assert.ok(['integer', 'number'].includes(s.properties.timeout_ms.type), JSON.stringify(s.properties.timeout_ms));
  assert.equal(s.properties.dry_run.type, 'boolean');
  assert.equal(s.properties.allow_mutations.type, 'array');
  assert.equal(s.properties.allow_mutations.items?.type, 'string');
  // No nextCursor: one page.
  assert.equal(r.result.nextCursor, undefined);
  // Without params at all it is the same list.
  const again = await c.request('tools/list');
  assert.deepEqual(again.result.tools, tools);
  assertStdoutClean(c);
});

test('notifications are never answered', async () => {
  const c = bare();
  await c.initialize();
  c.notify('notifications/cancelled', { requestId: 4242, reason: 'nothing to cancel' });
  c.notify('notifications/initialized');
  c.notify('notifications/some_future_thing', { x: 1 });
  c.notify('notifications/roots/list_changed');
  const r = await c.request('ping', undefined, { id: 'after-notes' });
  assert.deepEqual(r.result, {});
  await sleep(300);
  const stray = c.messages.filter((m) => !('method' in m));
  assert.deepEqual(stray, [], 'a notification got a response');
  assertStdoutClean(c);
});

test('logging/setLevel accepts MCP levels and rejects others with -32602', async () => {
  const c = bare();
  await c.initialize();
  for (const level of ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']) {
    const r = await c.request('logging/setLevel', { level });
    assert.deepEqual(r.result, {}, `level ${level}: ${JSON.stringify(r)}`);
  }
  assertError(await c.request('logging/setLevel', { level: 'loud' }, { id: 'lv1' }), -32602, 'lv1');
  assertError(await c.request('logging/setLevel', {}, { id: 'lv2' }), -32602, 'lv2');
  assertError(await c.request('logging/setLevel', undefined, { id: 'lv3' }), -32602, 'lv3');
  assertStdoutClean(c);
});

test('unknown method gets -32601 with the request id', async () => {
  const c = bare();
  await c.initialize();
  assertError(await c.request('no/such/method', {}, { id: 11 }), -32601, 11);
  assertError(await c.request('resources/unknown', undefined, { id: 'u' }), -32601, 'u');
  // The session goes on.
  assert.deepEqual((await c.request('ping')).result, {});
});

test('malformed JSON gets -32700 and the next request is still answered', async () => {
  const c = bare();
  await c.initialize();
  const bad = [
    '{"jsonrpc": "2.0", "id": 1, "method": ',
    'this is not json',
    '{"jsonrpc":"2.0","id":2,"method":"ping"',
    '{"a":1}}',
    "{'jsonrpc':'2.0'}",
  ];
  for (const line of bad) {
    c.send(line);
    const err = await c.next((m) => m.error?.code === -32700, ms(5000), `-32700 for ${line}`);
    assertError(err, -32700, null);
    const r = await c.request('ping', undefined, { id: `after-${bad.indexOf(line)}` });
    assert.deepEqual(r.result, {});
  }
  assertStdoutClean(c);
});

test('invalid requests get -32600', async () => {
  const c = bare();
  await c.initialize();
  c.send('{"jsonrpc":"2.0","id":7}'); // no method
  assertError(await c.response(7), -32600, 7);
  c.send('{"jsonrpc":"2.0","id":8,"method":42}'); // method not a string
  assertError(await c.response(8), -32600, 8);
  c.send('{"jsonrpc":"1.0","id":9,"method":"ping"}'); // wrong version
  assertError(await c.response(9), -32600, 9);
  // Valid JSON that is not a request object: -32600, not -32700.
  for (const line of ['42', '"ping"', 'null', 'true']) {
    c.send(line);
    const err = await c.next((m) => 'error' in m && m.id === null, ms(5000), `an error for ${line}`);
    assert.equal(err.error.code, -32600, `for ${line}: ${JSON.stringify(err)}`);
  }
  assert.deepEqual((await c.request('ping', undefined, { id: 'still' })).result, {});
  assertStdoutClean(c);
});

test('bad params get -32602', async () => {
  const c = bare();
  await c.initialize();
  assertError(await c.request('tools/call', {}, { id: 'p1' }), -32602, 'p1'); // no name
  assertError(await c.request('tools/call', { name: 42 }, { id: 'p2' }), -32602, 'p2');
  assertError(await c.request('tools/call', { name: 'no_such_tool', arguments: {} }, { id: 'p3' }), -32602, 'p3');
  assert.deepEqual((await c.request('ping', undefined, { id: 'still' })).result, {});
  assertStdoutClean(c);
});

test('framing: pipelined requests in one write, a request split byte by byte, CRLF, a 512 KiB line', async () => {
  const c = bare();
  await c.initialize();
  c.child.stdin.write(
    ['a', 'b', 'c'].map((id) => JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' })).join('\n') + '\n',
  );
  for (const id of ['a', 'b', 'c']) assert.deepEqual((await c.response(id)).result, {});

  const split = JSON.stringify({ jsonrpc: '2.0', id: 'split', method: 'ping' }) + '\n';
  for (const ch of split) {
    c.child.stdin.write(ch);
    await sleep(1);
  }
  assert.deepEqual((await c.response('split')).result, {});

  c.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 'crlf', method: 'ping' }) + '\r\n');
  assert.deepEqual((await c.response('crlf')).result, {});

  const pad = 'x'.repeat(512 * 1024);
  c.send({ jsonrpc: '2.0', id: 'big', method: 'ping', params: { _meta: { pad } } });
  assert.deepEqual((await c.response('big', ms(10000))).result, {});
  assertStdoutClean(c);
});

test('CODEMCP_LOG sets the stderr level', async () => {
  const lineRe = (levels) => new RegExp(`codemcp (${levels}) \\[`);
  const quiet = bare({ CODEMCP_LOG: 'error' });
  await quiet.initialize();
  await quiet.request('tools/list', {}, { limit: ms(15000) });
  await quiet.request('no/such/method');
  quiet.closeStdin();
  await quiet.waitExit(ms(10000));
  assert.doesNotMatch(quiet.stderr, lineRe('warn|info|debug|trace'), quiet.stderr);

  const loud = bare({ CODEMCP_LOG: 'debug' });
  await loud.initialize();
  await loud.request('tools/list', {}, { limit: ms(15000) });
  loud.closeStdin();
  await loud.waitExit(ms(10000));
  assert.match(loud.stderr, lineRe('info|debug'), 'CODEMCP_LOG=debug logged nothing at info or debug');
  assertStdoutClean(loud);
});
