// Redaction by key and by value, through the real gateway and worker: secrets in
// tool arguments, headers, nested JSON, URLs and error text never reach the trace-level log or
// the envelope's error/tool_error, while what the program returns is its own (not mangled).
// The rule corpus itself (>= 30 shapes, >= 10 look-alikes, C and Python agreeing) is
// tests/python/test_redact.py.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { RawClient, ms, servers, tempDir, writeConfig } from './lib.mjs';

const A = 'Q7w8E9r0T1y2U3i4O5p6';
const SECRETS = {
  ghp: `ghp_${A}${A.slice(0, 16)}`,
  bearer: `${A}${A}`,
  sk: `sk-proj-${A}${A}`,
  apiKey: 'plain-api-key-value-77',
  urlpw: 'url-pass-w0rd',
  jwt: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
  xoxb: `xoxb-123456789012-${A}`,
};

test('trace-level log and error envelopes hide secrets; results are left alone', async () => {
  const home = tempDir('codemcp-redact-');
  const tools = path.join(home, 'tools.json');
  const props = { query: { type: 'string' }, apiKey: { type: 'string' }, headers: { type: 'object' }, url: { type: 'string' } };
  fs.writeFileSync(tools, JSON.stringify([
    { name: 'boom', description: 'fails', inputSchema: { type: 'object', properties: props } },
    { name: 'echo', description: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
  ]));
  const c = new RawClient({
    config: writeConfig(home, { fake: servers.fake(['--tools-file', tools]) }),
    home,
    env: { CODEMCP_LOG: 'trace' },
  });
  await c.initialize();
  const call = async (code) => {
    const r = await c.request('tools/call', { name: 'execute_python', arguments: { code } }, { limit: ms(60000) });
    return { text: JSON.stringify(r), env: r.result.structuredContent };
  };
  // A failing call with secrets in every kind of argument.
  const failed = await call(`fake_boom(query="repo:x ${SECRETS.ghp}", apiKey="${SECRETS.apiKey}",
    headers={"Authorization": "Bearer ${SECRETS.bearer}", "X-Trace": "${SECRETS.jwt}"},
    url="https://admin:${SECRETS.urlpw}@db.example/x").result()`);
  assert.equal(failed.env.error_kind || '', 'tool_error', failed.text);
  // A successful call whose result carries a secret, then an error whose text does.
  const echoed = await call(`r = fake_echo(text="${SECRETS.sk} ${SECRETS.xoxb}")\nresult = r`);
  assert.match(JSON.stringify(echoed.env.result), new RegExp(SECRETS.sk), 'a result is the program\'s own: not mangled');
  const raised = await call(`raise RuntimeError("upstream refused ${SECRETS.sk} and ${SECRETS.xoxb}")`);
  assert.match(raised.env.error || '', /RuntimeError: upstream refused \*\*\* and \*\*\*/, raised.text);
  await c.kill();

  for (const [name, s] of Object.entries(SECRETS)) {
    assert.ok(!failed.text.includes(s), `envelope (tool_error) shows ${name}: ${failed.text}`);
    assert.ok(!raised.text.includes(s), `envelope (exception) shows ${name}`);
    assert.ok(!c.stderr.includes(s), `the trace-level log shows ${name}:\n${c.stderr.split('\n').filter((l) => l.includes(s)).join('\n')}`);
  }
  assert.match(failed.text, /\\"apiKey\\":\\"\*\*\*\\"/, 'the secret key is kept, its value hidden');
  // The log really is trace level, with upstream traffic in it.
  assert.match(c.stderr, /\[upstream\] fake <- .*tools\/call/);
  assert.match(c.stderr, /\[upstream\] fake <- .*"apiKey":"\*\*\*"/);
});
