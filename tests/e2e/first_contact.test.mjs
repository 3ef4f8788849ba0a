// What every client and every new user meets first, through the real binary:
//   * the first answer (initialize, or a 2026 client's server/discover; stdio and HTTP) waits
//     for upstreams still connecting, bounded by CODEMCP_LIST_WAIT_MS, so its instructions
//     name each server's functions (a count), never "(connecting)". The upstream here starts
//     two seconds late (a shell sleeps before exec'ing server-everything), so an answer that
//     does not wait, or waits only one second, names it as connecting.
// Peers: the SDK v1 client (legacy initialize), the SDK v2 client (tests/v2) pinned to
// 2026-07-28 over stdio and Streamable HTTP, server-everything from tests/node_modules.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';

import { NODE, NPM_PEERS, TESTS, codemcpCommand, codemcpEnv, connectClient, ms, sharedHttpGateway, tempDir, writeConfig } from './lib.mjs';

const V2DIR = path.join(TESTS, 'v2', 'node_modules', '@modelcontextprotocol', 'client', 'dist');
const { Client: V2Client, StreamableHTTPClientTransport } = await import(path.join(V2DIR, 'index.mjs'));
const { StdioClientTransport: V2Stdio } = await import(path.join(V2DIR, 'stdio.mjs'));

const EVERYTHING = path.join(NPM_PEERS, 'server-everything', 'dist', 'index.js');
/** server-everything, started `delay` seconds late. */
const lateEverything = (delay = 2) => ({ type: 'local', command: ['/bin/sh', '-c', `sleep ${delay}; exec "$0" "$1" stdio`, NODE, EVERYTHING] });

/** The instructions name the late server with its function count, and nothing as connecting. */
function assertNamesFunctions(instr, server = 'late') {
  assert.ok(typeof instr === 'string' && instr.length > 0, `no instructions: ${instr}`);
  assert.match(instr, new RegExp(`\\b${server} [1-9]\\d*\\b`), `the instructions do not count ${server}'s functions:\n${instr}`);
  assert.doesNotMatch(instr, /connecting|\(0 functions\)/, `the instructions were written before the servers connected:\n${instr}`);
}

describe('the first answer waits for the servers still connecting', () => {
  test('stdio, legacy initialize (SDK v1): the instructions count the late server\'s functions', { timeout: ms(60000) }, async () => {
    const dir = tempDir('codemcp-first-');
    const h = await connectClient({ config: writeConfig(dir, { late: lateEverything() }), env: { CODEMCP_LIST_WAIT_MS: '30000' }, limit: ms(40000) });
    try {
      assertNamesFunctions(h.client.getInstructions());
    } finally {
      await h.close();
    }
  });

  test('stdio, SDK v2 pinned to 2026-07-28 (server/discover): the instructions count the late server\'s functions', { timeout: ms(60000) }, async () => {
    const dir = tempDir('codemcp-first-');
    const [cmd, args] = codemcpCommand([]);
    const transport = new V2Stdio({ command: cmd, args, stderr: 'pipe',
      env: codemcpEnv({ config: writeConfig(dir, { late: lateEverything() }), env: { CODEMCP_LIST_WAIT_MS: '30000' } }) });
    const client = new V2Client({ name: 'first-contact-v2', version: '0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(transport, { timeout: ms(40000) });
    try {
      assertNamesFunctions(client.getInstructions());
    } finally {
      await client.close();
    }
  });
});

describe('over Streamable HTTP, server/discover waits too', () => {
  const TOKEN = 'first-contact-token-0123456789';
  const g = sharedHttpGateway({ prefix: 'codemcp-first-http-', tokens: { alice: TOKEN },
    mcp: { late: lateEverything(3) }, env: { CODEMCP_LIST_WAIT_MS: '30000' } });

  test('SDK v2 pinned to 2026-07-28: the instructions count the late server\'s functions', { timeout: ms(60000) }, async () => {
    const transport = new StreamableHTTPClientTransport(new URL(g.url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } });
    const client = new V2Client({ name: 'first-contact-http', version: '0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(transport, { timeout: ms(40000) });
    try {
      assertNamesFunctions(client.getInstructions());
    } finally {
      await client.close();
    }
  });
});
