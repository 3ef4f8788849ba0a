// The execute_python description is built once per client budget and kept until its inputs
// change (src/catalog/catalog.c): these tests fail when a kept one is served stale. One HTTP gateway,
// sessions of two clients with different budgets (claude-code 2,000 bytes, opencode 8,000),
// and the three things that must show at once in the next tools/list: a server that was
// connecting becomes ready, an upstream adds tools (list_changed), and call counts change
// which signatures come first. Shape learning is off so that only the usage counts change
// between the last two lists.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { Client, PYTHON, Proc, ms, tempDir, waitFor, writeConfig } from './lib.mjs';

/** A stdio upstream with 40 tools `toolNN` (each about 150 bytes of listing) and `grow`, which
 *  adds `n` tools and announces them; with `gate`, it answers initialize only once that file
 *  exists (a server that stays "connecting" until the test lets it in). */
function deskServer(dir, name, gate) {
  const file = path.join(dir, `${name}.py`);
  fs.writeFileSync(
    file,
    `import json, os, sys, time
gate = ${JSON.stringify(gate || '')}
n = 0
def send(m):
    sys.stdout.write(json.dumps(m) + "\\n"); sys.stdout.flush()
def tool(name, text):
    return {"name": name, "description": text, "inputSchema": {"type": "object", "properties": {"record": {"type": "integer"}, "ledger": {"type": "string"}}, "required": ["record"]}}
def tools():
    t = [tool("tool%02d" % i, "Looks up record %d of the desk ledger and returns every field it holds." % i) for i in range(1, 41)]
    t.append({"name": "grow", "description": "Add tools and announce them.", "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}})
    return t + [tool("extra%d" % i, "Added by grow, number %d." % i) for i in range(1, n + 1)]
for line in sys.stdin:
    m = json.loads(line)
    meth, mid = m.get("method"), m.get("id")
    if meth == "initialize":
        while gate and not os.path.exists(gate):
            time.sleep(0.05)
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {"listChanged": True}}, "serverInfo": {"name": "desk", "version": "0"}}})
    elif meth == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": tools()}})
    elif meth == "tools/call":
        p = m["params"]
        if p["name"] == "grow":
            n += int(p.get("arguments", {}).get("n", 1))
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": str(n)}]}})
        if p["name"] == "grow":
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    elif mid is not None and meth:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "not here"}})
`,
  );
  return { type: 'local', command: [PYTHON, file], timeout: 120000 };
}

async function sdkClient(url, token, name) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: token ? { authorization: `Bearer ${token}` } : {} },
  });
  const client = new Client({ name, version: '0' });
  await client.connect(transport, { timeout: ms(15000) });
  return client;
}

async function describeFor(client) {
  return (await client.listTools(undefined, { timeout: ms(30000) })).tools[0].description;
}

function run(client, code) {
  return client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(90000) });
}

const FIRST_SIGNATURE = /Functions \(signature {2}# summary\):\n([a-z0-9_]+)\(/;

describe('a kept description is never stale', () => {
  let proc, url, token, gate, claude, opencode;
  before(async () => {
    const home = tempDir('codemcp-desccache-', { shared: true });
    gate = path.join(home, 'late-may-start');
    const config = writeConfig(home, { desk: deskServer(home, 'desk'), late: deskServer(home, 'late', gate) });
    proc = new Proc({
      args: ['start', '-p', '0'],
      config,
      home,
      shared: true,
      env: { CODEMCP_DESCRIBE_BUDGET: '', CODEMCP_LIST_WAIT_MS: '0', CODEMCP_LEARN_SHAPES: '0', CODEMCP_USAGE_FILE: 'off' },
    });
    const found = await waitFor(() => proc.exit || proc.stderr.match(/serving MCP over Streamable HTTP at (\S+)/), ms(20000));
    assert.ok(found && found[1], `codemcp start did not come up:\n${proc.stderrTail()}`);
    url = found[1];
    const tokenFile = path.join(home, 'codemcp', 'http-token');
    token = fs.existsSync(tokenFile) ? fs.readFileSync(tokenFile, 'utf8').trim() : null;
    claude = await sdkClient(url, token, 'claude-code');
    opencode = await sdkClient(url, token, 'opencode');
  });
  after(async () => {
    await claude?.close().catch(() => {});
    await opencode?.close().catch(() => {});
    if (proc) {
      proc.child.kill('SIGTERM');
      const ex = await proc.waitExit(ms(15000));
      assert.equal(ex.code, 0, `codemcp start must exit 0 on SIGTERM:\n${proc.stderrTail()}`);
    }
  });

  test('two budgets in one gateway: each client gets its own description', async () => {
    let a = '';
    assert.ok(await waitFor(async () => /desk 41/.test((a = await describeFor(claude))), ms(30000), 100), a);
    // One call first, so the usage ranking is [desk_grow] from here on: later calls of
    // desk_grow leave it equal, and only the catalog rebuilds can change what is listed.
    const r = await run(claude, 'result = desk_grow(n=0)');
    assert.ok(!r.isError, JSON.stringify(r.structuredContent));
    a = await describeFor(claude);
    const b = await describeFor(opencode);
    assert.ok(a.length <= 2000, `claude-code got ${a.length} bytes`);
    assert.ok(b.length > 2000 && b.length <= 8000, `opencode got ${b.length} bytes:\n${b}`);
    assert.match(a, /late \(connecting\)/, a);
    assert.match(b, /late \(connecting\)/, b);
    // Asked again, and by a new session of the same client: the same text.
    assert.equal(await describeFor(opencode), b);
    assert.equal(await describeFor(claude), a);
    const again = await sdkClient(url, token, 'claude-code');
    assert.equal(await describeFor(again), a);
    await again.close();
  });

  test('a server that was connecting is ready: the next tools/list says so', async () => {
    fs.writeFileSync(gate, '');
    // No call in between (a call changes the usage ranking): the catalog rebuild alone must
    // reach both kept descriptions.
    let b = '';
    assert.ok(await waitFor(async () => /late 41/.test((b = await describeFor(opencode))), ms(30000), 100), b);
    assert.doesNotMatch(b, /connecting/, b);
    const a = await describeFor(claude);
    assert.doesNotMatch(a, /connecting/, a);
    assert.match(a, /late 41/, a);
  });

  test('an upstream adds tools (list_changed): both budgets show them', async () => {
    const r = await run(claude, 'result = desk_grow(n=3)');
    assert.ok(!r.isError, JSON.stringify(r.structuredContent));
    // The gateway lists the upstream again after its notification: wait for that, then
    // both clients must see it (a kept description from before would never say 44).
    let a = '';
    assert.ok(await waitFor(async () => /desk 44/.test((a = await describeFor(claude))), ms(30000), 100), a);
    const b = await describeFor(opencode);
    assert.match(b, /desk 44/, b);
    assert.ok(a.length <= 2000);
  });

  test('call counts change the order: the next tools/list lists the called function first', async () => {
    const before_ = await describeFor(claude);
    const first = before_.match(FIRST_SIGNATURE);
    assert.ok(first && first[1] !== 'desk_tool37', before_);
    const r = await run(claude, 'for i in range(3):\n    desk_tool37(record=i)\nresult = 1');
    assert.ok(!r.isError, JSON.stringify(r.structuredContent));
    for (const c of [claude, opencode]) {
      const d = await describeFor(c);
      assert.equal(d.match(FIRST_SIGNATURE)?.[1], 'desk_tool37', d);
    }
    // Counted again, the order stays: the same text as before the extra call.
    const kept = await describeFor(claude);
    const r2 = await run(claude, 'result = desk_tool37(record=9)');
    assert.ok(!r2.isError);
    assert.equal(await describeFor(claude), kept);
  });
});
