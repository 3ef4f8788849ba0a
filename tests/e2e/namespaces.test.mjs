// Namespace handles: every
// execute_python envelope carries a server-minted `namespace` handle; passing it back
// continues in that namespace. Handles are bound to the caller's principal, expire after
// CODEMCP_NAMESPACE_IDLE_MS idle, and a malformed, unknown, foreign or expired one is a tool
// error (isError), never a JSON-RPC error. Over stdio (SDK 1.32.2 and raw lines) and the
// 2025 HTTP front (`codemcp start` with a tokens file giving two principals).
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';

import { RawClient, TESTS, codemcpCommand, codemcpEnv, connectClient, connectHttp, ms, sleep, startHttpGateway, tempDir, writeConfig } from './lib.mjs';

const V2DIR = path.join(TESTS, 'v2', 'node_modules', '@modelcontextprotocol', 'client', 'dist');

const HANDLE = /^ns_[A-Za-z0-9_-]{32}$/;

function stdioConfig() {
  return writeConfig(tempDir('codemcp-nsh-'), {});
}

async function call(client, args) {
  return client.callTool({ name: 'execute_python', arguments: args }, undefined, { timeout: ms(60000) });
}

/** The envelope of a CallToolResult, checking that its JSON text says the same. */
function envelope(r) {
  const text = JSON.parse(r.content[0].text);
  assert.deepEqual(text, r.structuredContent, 'the text content is the envelope as JSON');
  return r.structuredContent;
}

test('stdio (SDK 1.32.2): every envelope carries the handle; with or without it the run continues', async () => {
  const c = await connectClient({ config: stdioConfig() });
  try {
    const tool = (await c.client.listTools()).tools[0];
    assert.equal(tool.inputSchema.properties.namespace.type, 'string', 'the schema offers `namespace`');
    assert.match(tool.description, /namespace/, 'the description says how to continue');

    const first = await call(c.client, { code: 'x = 41\nresult = x' });
    assert.equal(first.isError, false, JSON.stringify(first));
    const h = envelope(first).namespace;
    assert.match(h, HANDLE, JSON.stringify(first));
    assert.ok(!c.stderr().includes(h), 'the handle is a secret: never logged');

    // No handle over stdio: the implicit namespace (today's behaviour), same handle.
    const implicit = envelope(await call(c.client, { code: 'result = x + 1' }));
    assert.equal(implicit.result, 42);
    assert.equal(implicit.namespace, h);
    // The handle: the same namespace.
    const cont = envelope(await call(c.client, { code: 'x += 10\nresult = x', namespace: h }));
    assert.equal(cont.result, 51);
    assert.equal(cont.namespace, h);
    // A failing run still names its namespace.
    const failed = await call(c.client, { code: 'raise ValueError("no")', namespace: h });
    assert.equal(failed.isError, true);
    assert.equal(envelope(failed).namespace, h);
    // reset: same handle, fresh variables.
    const reset = await call(c.client, { code: 'result = "x" in dir()', namespace: h, reset: true });
    assert.equal(envelope(reset).result, false);
    assert.equal(envelope(reset).namespace, h);
  } finally {
    await c.close();
  }
});

test('stdio (SDK v2 pinned to 2026-07-28): the handle continues a namespace without any session', async () => {
  const { Client: V2Client } = await import(path.join(V2DIR, 'index.mjs'));
  const { StdioClientTransport: V2Stdio } = await import(path.join(V2DIR, 'stdio.mjs'));
  const [cmd, args] = codemcpCommand([]);
  const transport = new V2Stdio({ command: cmd, args, env: codemcpEnv({ config: stdioConfig() }), stderr: 'pipe' });
  const client = new V2Client({ name: 'nsh-v2', version: '0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(transport, { timeout: ms(20000) });
  try {
    assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
    const run = (a) => client.callTool({ name: 'execute_python', arguments: a }, { timeout: ms(60000) });
    const h = envelope(await run({ code: 'w = [1]\nresult = w' })).namespace;
    assert.match(h, HANDLE);
    const cont = envelope(await run({ code: 'w.append(2)\nresult = w', namespace: h }));
    assert.deepEqual(cont.result, [1, 2]);
    assert.equal(cont.namespace, h);
  } finally {
    await client.close();
  }
});

test('stdio (raw lines): malformed, unknown and mistyped handles are tool errors naming what happened', async () => {
  const c = new RawClient({ config: stdioConfig() });
  try {
    await c.initialize();
    const exec = async (args) => (await c.request('tools/call', { name: 'execute_python', arguments: args }, { limit: ms(60000) }));
    const ok = await exec({ code: 'y = 1\nresult = y' });
    assert.match(ok.result.structuredContent.namespace, HANDLE);

    for (const [arg, want] of [
      ['ns_short', /^malformed namespace handle/],
      ['not-a-handle-at-all-0123456789abcdefghijk', /^malformed namespace handle/],
      ['ns_' + 'A'.repeat(32), /^unknown namespace handle/],
      [5, /"namespace" must be the handle string/],
    ]) {
      const r = await exec({ code: 'result = y', namespace: arg });
      assert.ok(r.result, `a tool result, not a JSON-RPC error: ${JSON.stringify(r)}`);
      assert.equal(r.result.isError, true, JSON.stringify(r));
      assert.match(r.result.content[0].text, want, JSON.stringify(r));
      assert.equal(r.result.structuredContent.namespace, undefined, 'no namespace was used');
    }
    // The implicit namespace is untouched by the refused runs.
    assert.equal((await exec({ code: 'result = y' })).result.structuredContent.result, 1);
  } finally {
    await c.kill();
  }
});

test('stdio: an expired handle says so; the implicit namespace starts over with a note', async () => {
  const c = await connectClient({ config: stdioConfig(), env: { CODEMCP_NAMESPACE_IDLE_MS: '1000' } });
  try {
    const h = envelope(await call(c.client, { code: 'z = 5\nresult = z' })).namespace;
    assert.match(h, HANDLE);
    await sleep(1600);
    const r = await call(c.client, { code: 'result = z', namespace: h });
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.match(r.content[0].text, /^namespace expired after \d+ s idle; its variables were discarded/, JSON.stringify(r));
    // Without a handle: a new implicit namespace (a new handle); the NameError says why.
    const again = await call(c.client, { code: 'result = z' });
    assert.match(envelope(again).error, /NameError[\s\S]*this session's variables were discarded after \d+ s idle/, JSON.stringify(again));
    assert.match(envelope(again).namespace, HANDLE);
    assert.notEqual(envelope(again).namespace, h, 'an expired handle is never revived');
  } finally {
    await c.close();
  }
});

// ---- the 2025 HTTP front: two principals -------------------------------------------------------

const TA = 'alice-token-0123456789abcdef', TB = 'bob-token-0123456789abcdef';

const start = (env) => startHttpGateway({ prefix: 'codemcp-nsh-http-', env, tokens: { alice: TA, bob: TB } });
const session = (url, token) => connectHttp(url, token, 'nsh-e2e');

test('HTTP sessions: handles continue across sessions of one principal; another principal cannot use them', async () => {
  const gw = await start({ CODEMCP_WORKERS: '4' });
  const clients = [];
  try {
    const a1 = await session(gw.url, TA);
    const a2 = await session(gw.url, TA);
    const b = await session(gw.url, TB);
    clients.push(a1, a2, b);

    const ha = envelope(await call(a1, { code: 'x = "alice"\nresult = x' })).namespace;
    assert.match(ha, HANDLE);
    // No handle in a session: that session's own namespace (today's behaviour).
    const own = await call(a2, { code: 'result = x' });
    assert.match(envelope(own).error, /NameError: name 'x' is not defined/, JSON.stringify(own));
    const ha2 = envelope(own).namespace;
    assert.match(ha2, HANDLE);
    assert.notEqual(ha2, ha, 'each session has its own namespace and handle');
    // Alice's handle from her other session: her namespace, routed to the worker holding it.
    const cross = await call(a2, { code: 'x += "!"\nresult = x', namespace: ha });
    assert.equal(envelope(cross).result, 'alice!', JSON.stringify(cross));
    assert.equal(envelope(cross).namespace, ha);
    assert.equal(envelope(await call(a1, { code: 'result = x' })).result, 'alice!', 'the same namespace, seen from a1');
    // Isolation: what a2 sets in its own namespace is not in a1's, and the other way round.
    await call(a2, { code: 'only_a2 = 1' });
    assert.match(envelope(await call(a1, { code: 'result = only_a2', namespace: ha })).error, /NameError/);
    assert.equal(envelope(await call(a1, { code: 'result = only_a2', namespace: ha2 })).result, 1);

    // Bob with Alice's handle: the same answer as for a handle never issued, and no variables.
    const foreign = await call(b, { code: 'result = x', namespace: ha });
    const madeUp = await call(b, { code: 'result = x', namespace: 'ns_' + 'Q'.repeat(32) });
    assert.equal(foreign.isError, true, JSON.stringify(foreign));
    assert.match(foreign.content[0].text, /^unknown namespace handle/);
    assert.equal(foreign.content[0].text, madeUp.content[0].text, 'foreign and unknown look alike (no oracle)');
    assert.ok(!JSON.stringify(foreign).includes('alice'), 'nothing of Alice leaks');
    const bobs = await call(b, { code: 'result = x' });
    assert.match(envelope(bobs).error, /NameError/, 'Bob cannot read Alice\'s variables');
    assert.match(gw.proc.stderr, /named a namespace of another principal/, 'the operator sees the attempt');

    // A handle of a closed session: its namespace went with it, and the error says so.
    await a1.end();
    clients.shift();
    const closed = await call(a2, { code: 'result = x', namespace: ha });
    assert.equal(closed.isError, true, JSON.stringify(closed));
    assert.match(closed.content[0].text, /^namespace ended with the MCP session that held it/);
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    await gw.proc.kill();
  }
});

test('HTTP: a full pool with even shares never ends another principal\'s recently used worker (namespaces.c decides)', async () => {
  const gw = await start({ CODEMCP_WORKERS: '2' });
  const clients = [];
  try {
    const a = await session(gw.url, TA);
    const b = await session(gw.url, TB);
    clients.push(a, b);
    assert.equal(envelope(await call(a, { code: 'k = 7\nresult = k' })).result, 7);
    assert.equal(envelope(await call(b, { code: 'j = 8\nresult = j' })).result, 8);
    // One worker each: Alice's new session waits, then her own idle session gives way.
    const a2 = await session(gw.url, TA);
    clients.push(a2);
    assert.equal(envelope(await call(a2, { code: 'result = 2' })).result, 2);
    assert.equal(envelope(await call(b, { code: 'result = j' })).result, 8, 'Bob keeps his variables');
    const lost = envelope(await call(a, { code: 'result = k' }));
    assert.match(lost.error, /NameError/, JSON.stringify(lost));
    assert.match(lost.notice, /its variables were discarded \(every namespace it held\)/, JSON.stringify(lost));
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    await gw.proc.kill();
  }
});

test('HTTP: an expired handle says so to its principal, and looks unknown to another', async () => {
  const gw = await start({ CODEMCP_NAMESPACE_IDLE_MS: '1000' });
  const clients = [];
  try {
    const a = await session(gw.url, TA);
    const b = await session(gw.url, TB);
    clients.push(a, b);
    const h = envelope(await call(a, { code: 'v = 1\nresult = v' })).namespace;
    await sleep(1600);
    const mine = await call(a, { code: 'result = v', namespace: h });
    assert.equal(mine.isError, true, JSON.stringify(mine));
    assert.match(mine.content[0].text, /^namespace expired after \d+ s idle; its variables were discarded/);
    const theirs = await call(b, { code: 'result = v', namespace: h });
    assert.match(theirs.content[0].text, /^unknown namespace handle/, 'no oracle: Bob learns nothing of the expiry');
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    await gw.proc.kill();
  }
});

test('HTTP, both eras: a handle from a 2026 request works in a 2025 session of the principal, and back', async () => {
  const { Client: V2Client, StreamableHTTPClientTransport: V2Http } = await import(path.join(V2DIR, 'index.mjs'));
  const gw = await start({ CODEMCP_WORKERS: '4' });
  const clients = [];
  const modern = async (token) => {
    const transport = new V2Http(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
    const c = new V2Client({ name: 'nsh-v2-http', version: '0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await c.connect(transport, { timeout: ms(20000) });
    clients.push(c);
    return (a) => c.callTool({ name: 'execute_python', arguments: a }, { timeout: ms(60000) });
  };
  try {
    const a26 = await modern(TA);
    const b26 = await modern(TB);
    const a25 = await session(gw.url, TA);
    clients.push(a25);

    const h26 = envelope(await a26({ code: 'm = "from 2026"\nresult = m' })).namespace;
    assert.match(h26, HANDLE);
    // A 2026 request without a handle: a fresh namespace, not the last one.
    const fresh = envelope(await a26({ code: 'result = m' }));
    assert.match(fresh.error, /NameError/, JSON.stringify(fresh));
    assert.notEqual(fresh.namespace, h26);
    // The 2025 session of the same principal continues the session-less namespace...
    const in25 = envelope(await call(a25, { code: 'm += " and 2025"\nresult = m', namespace: h26 }));
    assert.equal(in25.result, 'from 2026 and 2025', JSON.stringify(in25));
    // ...and a 2026 request continues the 2025 session's own namespace by its handle.
    const h25 = envelope(await call(a25, { code: 's = 25\nresult = s' })).namespace;
    assert.notEqual(h25, h26);
    assert.equal(envelope(await a26({ code: 'result = s + 1', namespace: h25 })).result, 26);
    // Bob, in either era, gets "unknown" for both.
    for (const h of [h26, h25]) {
      const r = await b26({ code: 'result = 1', namespace: h });
      assert.equal(r.isError, true, JSON.stringify(r));
      assert.match(r.content[0].text, /^unknown namespace handle/);
    }
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    await gw.proc.kill();
  }
});
