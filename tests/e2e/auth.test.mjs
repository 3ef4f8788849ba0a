// The HTTP front's door: a bearer token is required by default (generated, 0600,
// reused), opting out is explicit and loopback-only, principals come from a tokens file
// (re-read on SIGHUP) with per-principal session quotas, and real clients that are refused
// say why (Claude Code, mcp-remote).
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { Client, NODE, PYTHON, Proc, TESTS, ms, runClient, tempDir, waitFor, writeConfig } from './lib.mjs';

const POST = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'auth-e2e', version: '0' } },
};

/** Starts `codemcp start`; resolves {proc, url, home} once it serves (or rejects with its stderr). */
async function start({ args = [], env = {}, home = tempDir('codemcp-auth-') } = {}) {
  const config = path.join(home, 'mcp.json');
  if (!fs.existsSync(config)) writeConfig(home, {});
  const proc = new Proc({ args: ['start', '-p', '0', ...args], config, env, home });
  const m = await waitFor(() => proc.exit || proc.stderr.match(/serving MCP over Streamable HTTP at (\S+)/), ms(20000));
  if (!m || !m[1]) throw new Error(`codemcp start did not come up (${JSON.stringify(proc.exit)}):\n${proc.stderrTail()}`);
  return { proc, url: m[1], home };
}

async function post(url, body, headers = {}) {
  const r = await fetch(url, { method: 'POST', headers: { ...POST, ...headers }, body: JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, headers: r.headers, text, json: () => JSON.parse(text) };
}

async function sdk(url, headers) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name: 'auth-e2e', version: '0' });
  await client.connect(transport, { timeout: ms(15000) });
  return { client, transport };
}

async function run(client, code) {
  const r = await client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(60000) });
  return r.structuredContent;
}

function withUser(t, fn) {
  return async () => {
    if (process.getuid() !== 0) return t.skip('needs root to create a test user');
    const user = `cmcpauth${process.pid % 100000}`;
    const add = spawnSync('useradd', ['--no-create-home', '--shell', '/usr/sbin/nologin', user]);
    if (add.status !== 0) return t.skip(`useradd failed: ${add.stderr}`);
    try {
      const uid = Number(execFileSync('id', ['-u', user]).toString().trim());
      await fn(uid);
    } finally {
      spawnSync('userdel', [user]);
    }
  };
}

test('the generated token lives in the config directory every codemcp file uses (a relative XDG_CONFIG_HOME is ignored)', () => {
  const home = tempDir('codemcp-auth-home-'), cwd = tempDir('codemcp-auth-cwd-');
  const printed = spawnSync(process.env.CODEMCP_BIN || path.join(TESTS, '..', 'build', 'src', 'codemcp'), ['start', '--print-token'], {
    cwd, env: { ...process.env, HOME: home, XDG_CONFIG_HOME: 'relative/config', CODEMCP_HTTP_TOKEN: '', CODEMCP_HTTP_TOKENS_FILE: '' },
  });
  assert.equal(printed.status, 0, printed.stderr.toString());
  const file = path.join(home, '.config', 'codemcp', 'http-token');
  assert.equal(fs.readFileSync(file, 'utf8').trim(), printed.stdout.toString().trim());
  assert.ok(!fs.existsSync(path.join(cwd, 'relative')), 'nothing is written under the working directory');
});

test('default: a generated 0600 token, reused across restarts; another user gets 401; the printed snippet works', async (t) => {
  const home = tempDir('codemcp-auth-');
  const gw = await start({ home });
  const file = path.join(home, 'codemcp', 'http-token');
  const st = fs.statSync(file);
  assert.equal(st.mode & 0o777, 0o600, 'the token file must be 0600');
  const token = fs.readFileSync(file, 'utf8').trim();
  assert.match(token, /^[0-9a-f]{64}$/, 'a 256-bit random token');
  assert.match(gw.proc.stderr, /created a new HTTP token in .*http-token \(mode 0600\)/);

  // The ready-to-paste snippet names the URL and the header; a client configured from it works.
  // It is written after the "serving" line start() waits for: under ASan it can come later.
  for (let i = 0; i < 100 && !gw.proc.stderr.includes('Claude Code:'); i++)
    await new Promise((r) => setTimeout(r, 50));
  const line = gw.proc.stderr.split('\n').find((l) => l.includes('Claude Code:'));
  assert.ok(line, `no Claude Code snippet on stderr:\n${gw.proc.stderr}`);
  const m = line.match(/--transport http codemcp (\S+) --header "([^:]+): Bearer ([^"]+)"/);
  assert.ok(m, line);
  assert.equal(m[1], gw.url);
  // stderr is not a terminal here (a service's goes to a journal): the token is not in it, the
  // snippet has a placeholder and says how to print the token.
  assert.ok(!gw.proc.stderr.includes(token), 'the token was written to a stderr that is not a terminal');
  assert.equal(m[3], '<token>');
  assert.match(gw.proc.stderr, new RegExp(`"url": "${gw.url}", "headers": \\{"Authorization": "Bearer <token>"\\}`));
  assert.match(gw.proc.stderr, /`codemcp start --print-token` prints it/);
  const { client, transport } = await sdk(m[1], { [m[2]]: `Bearer ${token}` });
  assert.equal((await run(client, 'result = 6 * 7')).result, 42);
  await transport.terminateSession();
  await client.close();

  // Without it: 401, RFC 6750 style.
  const r = await post(gw.url, INIT);
  assert.equal(r.status, 401);
  assert.match(r.headers.get('www-authenticate'), /^Bearer realm="codemcp", error="invalid_token", error_description="no Authorization header"$/);
  assert.equal(r.json().error, 'invalid_token');

  // Another local user cannot read the token and is refused.
  await withUser(t, async (uid) => {
    fs.chmodSync(home, 0o755);
    fs.chmodSync(path.join(home, 'codemcp'), 0o755);
    const as = (args) => spawnSync('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--', ...args]);
    const read = as(['cat', file]);
    assert.notEqual(read.status, 0, 'another user could read the token file');
    const probe = `import json, urllib.error, urllib.request
req = urllib.request.Request(${JSON.stringify(gw.url)}, data=json.dumps(${JSON.stringify(INIT)}).encode(), method='POST',
    headers={'content-type': 'application/json', 'accept': 'application/json, text/event-stream'})
try:
    print(urllib.request.urlopen(req, timeout=10).status)
except urllib.error.HTTPError as e:
    print(e.code)`;
    const other = as([PYTHON, '-c', probe]);
    assert.equal(other.stdout.toString().trim(), '401', `another user's initialize: ${other.stdout} ${other.stderr}`);
  })();

  // --print-token shows the same token; a restart reuses it.
  const printed = spawnSync(process.env.CODEMCP_BIN || path.join(TESTS, '..', 'build', 'src', 'codemcp'), ['start', '--print-token'], {
    env: { ...process.env, XDG_CONFIG_HOME: home, CODEMCP_HTTP_TOKEN: '' },
  });
  assert.equal(printed.status, 0, printed.stderr.toString());
  assert.equal(printed.stdout.toString().trim(), token);
  gw.proc.child.kill('SIGTERM');
  await gw.proc.waitExit(ms(10000));
  const again = await start({ home });
  assert.doesNotMatch(again.proc.stderr, /created a new HTTP token/);
  assert.equal((await post(again.url, INIT, { authorization: `Bearer ${token}` })).status, 200);
  assert.equal((await post(again.url, INIT, { authorization: `bEaReR ${token}` })).status, 200, 'the scheme is case-insensitive');
  assert.equal((await post(again.url, INIT, { authorization: `Bearer ${token.slice(0, -1)}` })).status, 401);
  await again.proc.kill();
});

test('a token file others can read is refused', async () => {
  const home = tempDir('codemcp-auth-');
  fs.mkdirSync(path.join(home, 'codemcp'), { recursive: true });
  fs.writeFileSync(path.join(home, 'codemcp', 'http-token'), 'f'.repeat(64) + '\n', { mode: 0o644 });
  fs.chmodSync(path.join(home, 'codemcp', 'http-token'), 0o644);
  writeConfig(home, {});
  const p = new Proc({ args: ['start', '-p', '0'], config: path.join(home, 'mcp.json'), home });
  const ex = await p.waitExit(ms(10000));
  assert.notEqual(ex.code, 0);
  assert.match(p.stderr, /readable by other users \(mode 644\): chmod 600/);
});

test('--no-auth: refused on a non-loopback bind, allowed on loopback with a warning', async () => {
  const home = tempDir('codemcp-auth-');
  writeConfig(home, {});
  for (const [args, env] of [
    [['start', '-p', '0', '-H', '0.0.0.0', '--no-auth'], {}],
    [['start', '-p', '0', '-H', '0.0.0.0'], { CODEMCP_HTTP_AUTH: 'none' }],
  ]) {
    const p = new Proc({ args, config: path.join(home, 'mcp.json'), home, env });
    const ex = await p.waitExit(ms(10000));
    assert.notEqual(ex.code, 0, `${args.join(' ')} ${JSON.stringify(env)} must be refused`);
    assert.match(p.stderr, /refusing to serve without authentication on a non-loopback address/);
  }
  const gw = await start({ home, args: ['--no-auth'], env: { CODEMCP_LOG: 'warn' } });
  assert.match(gw.proc.stderr, /authentication is OFF/);
  assert.equal((await post(gw.url, INIT)).status, 200);
  await gw.proc.kill();
});

test('principals: tokens file (0600, SIGHUP), sessions are per principal, 429 over quota, others keep their variables', async () => {
  const home = tempDir('codemcp-auth-');
  const tokens = path.join(home, 'tokens');
  const ta = 'alice-token-0123456789abcdef', tb = 'bob-token-0123456789abcdef', tc = 'carol-token-0123456789abcdef';
  fs.writeFileSync(tokens, `# name token\nalice ${ta}\nbob ${tb}\n`, { mode: 0o600 });
  const gw = await start({
    home,
    env: { CODEMCP_HTTP_TOKENS_FILE: tokens, CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL: '5', CODEMCP_LOG: 'info' },
  });
  assert.doesNotMatch(gw.proc.stderr, /created a new HTTP token/, 'no generated token when a tokens file is set');
  // Bob's session holds a variable.
  const bob = await sdk(gw.url, { authorization: `Bearer ${tb}` });
  assert.equal((await run(bob.client, 'x = 41\nresult = x')).result, 41);
  // Alice floods initialize: after her quota, 429 with Retry-After; Bob is unaffected.
  const statuses = [];
  let retry;
  for (let i = 0; i < 40; i++) {
    const r = await post(gw.url, INIT, { authorization: `Bearer ${ta}` });
    statuses.push(r.status);
    if (r.status === 429) retry = r.headers.get('retry-after');
  }
  assert.deepEqual(statuses.slice(0, 5), [200, 200, 200, 200, 200]);
  assert.ok(statuses.slice(5).every((s) => s === 429), statuses.join(','));
  assert.match(retry || '', /^[1-9][0-9]*$/, 'Retry-After in seconds');
  assert.match(gw.proc.stderr, /alice has 5 sessions/);
  assert.equal((await run(bob.client, 'result = x + 1')).result, 42, "bob's variables survive alice's flood");
  const bobNew = await post(gw.url, INIT, { authorization: `Bearer ${tb}` });
  assert.equal(bobNew.status, 200, "bob may still open sessions");
  // A session is its principal's: alice cannot use bob's session id.
  const sid = bobNew.headers.get('mcp-session-id');
  const steal = await post(gw.url, { jsonrpc: '2.0', id: 2, method: 'ping' }, { authorization: `Bearer ${ta}`, 'mcp-session-id': sid });
  assert.equal(steal.status, 404, steal.text);
  // Carol is unknown until the file lists her and the gateway gets SIGHUP.
  assert.equal((await post(gw.url, INIT, { authorization: `Bearer ${tc}` })).status, 401);
  fs.appendFileSync(tokens, `carol ${tc}\n`);
  gw.proc.child.kill('SIGHUP');
  await waitFor(() => /SIGHUP: 3 principals loaded/.test(gw.proc.stderr), ms(5000));
  assert.equal((await post(gw.url, INIT, { authorization: `Bearer ${tc}` })).status, 200, gw.proc.stderrTail());
  assert.match(gw.proc.stderr, /session [0-9a-f]{8} opened for carol/);
  // A bad file on SIGHUP keeps the previous set.
  fs.writeFileSync(tokens, 'not a valid line\n');
  gw.proc.child.kill('SIGHUP');
  await waitFor(() => /keeping the 3 principals/.test(gw.proc.stderr), ms(5000));
  assert.equal((await post(gw.url, INIT, { authorization: `Bearer ${tc}` })).status, 200);
  assert.equal(gw.proc.exit, null, 'SIGHUP must not stop the gateway');
  await bob.client.close();
  await gw.proc.kill();
});

test('without authentication, sessions are counted per peer address', async () => {
  const gw = await start({ args: ['--no-auth'], env: { CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL: '3' } });
  const got = [];
  for (let i = 0; i < 5; i++) got.push((await post(gw.url, INIT)).status);
  assert.deepEqual(got, [200, 200, 200, 429, 429]);
  assert.match(gw.proc.stderr, /127\.0\.0\.1 has 3 sessions/);
  await gw.proc.kill();
});

// Real clients, offline, from tests/clients (pinned): each must name the missing token.
const CLIENTS = path.join(TESTS, 'clients', 'node_modules');
const CLAUDE = path.join(CLIENTS, '.bin', 'claude'); // the package's native executable
const haveClients = fs.existsSync(CLAUDE) && fs.existsSync(path.join(CLIENTS, 'mcp-remote', 'dist', 'proxy.js'));


test('Claude Code and mcp-remote without the header print an error that names the missing token', { skip: !haveClients && 'tests/clients/node_modules is missing (tests/run.sh runs npm ci there)' }, async () => {
  const gw = await start();
  const home = tempDir('codemcp-claude-home-');
  // Offline and anonymous: no telemetry, no updates, no account.
  const env = {
    ...process.env, HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_TELEMETRY: '1', NO_PROXY: '127.0.0.1,localhost',
  };
  const add = await runClient(CLAUDE, ['mcp', 'add', '--transport', 'http', 'codemcp', gw.url], { ...env }, ms(60000));
  assert.equal(add.code, 0, add.out);
  const list = await runClient(CLAUDE, ['mcp', 'list'], { ...env }, ms(60000));
  assert.match(list.out, /codemcp: .*Failed to connect/, list.out);
  assert.match(list.out, /bearer token.*Authorization: Bearer <token>.*--print-token/, `claude mcp list does not name the token:\n${list.out}`);

  const remote = await runClient(NODE, [path.join(CLIENTS, 'mcp-remote', 'dist', 'proxy.js'), gw.url], { ...env }, ms(30000));
  assert.match(remote.out, /bearer token.*Authorization: Bearer <token>.*--print-token/, `mcp-remote does not name the token:\n${remote.out}`);
  assert.ok(remote.code !== null, 'mcp-remote must give up instead of waiting forever');
  await gw.proc.kill();
});

test('namespaces: idle ones are dropped with a note; room is made from the same principal, never from another', async () => {
  const home = tempDir('codemcp-auth-');
  const tokens = path.join(home, 'tokens');
  const ta = 'alice-token-0123456789abcdef', tb = 'bob-token-0123456789abcdef';
  fs.writeFileSync(tokens, `alice ${ta}\nbob ${tb}\n`, { mode: 0o600 });
  const gw = await start({
    home,
    env: { CODEMCP_HTTP_TOKENS_FILE: tokens, CODEMCP_MAX_NAMESPACES: '3', CODEMCP_WORKERS: '8', CODEMCP_LOG: 'info' },
  });
  const bob = await sdk(gw.url, { authorization: `Bearer ${tb}` });
  assert.equal((await run(bob.client, 'x = 41\nresult = x')).result, 41);
  const alice = [];
  for (let i = 0; i < 4; i++) {
    const a = await sdk(gw.url, { authorization: `Bearer ${ta}` });
    assert.equal((await run(a.client, `y = ${i}\nresult = y`)).result, i);
    alice.push(a);
  }
  // Alice's fourth session needed room: her own least recently used namespace went, not Bob's.
  assert.equal((await run(bob.client, 'result = x + 1')).result, 42, gw.proc.stderrTail());
  const lost = await run(alice[0].client, 'result = y');
  assert.match(lost.error || '', /NameError: name 'y' is not defined/, JSON.stringify(lost) + gw.proc.stderr.split('\n').filter((l) => /namespaces|worker/.test(l)).join('\n'));
  assert.match(lost.error, /variables were discarded to make room: its principal has more namespaces/);
  for (const a of alice) await a.client.close();
  await bob.client.close();
  await gw.proc.kill();

  // No room and nothing that may be taken (the only namespace is another principal's, in
  // use recently): the run is refused with a message, the other principal keeps its variables.
  const full = await start({ env: { CODEMCP_HTTP_TOKENS_FILE: tokens, CODEMCP_MAX_NAMESPACES: '1', CODEMCP_WORKERS: '8' } });
  const b1 = await sdk(full.url, { authorization: `Bearer ${tb}` });
  assert.equal((await run(b1.client, 'x = 1\nresult = x')).result, 1);
  const a1 = await sdk(full.url, { authorization: `Bearer ${ta}` });
  const refused = await run(a1.client, 'result = 2');
  assert.match(JSON.stringify(refused), /keeps the variables of at most 1 namespaces \(CODEMCP_MAX_NAMESPACES\)/);
  assert.equal((await run(b1.client, 'result = x')).result, 1);
  await a1.client.close();
  await b1.client.close();
  await full.proc.kill();

  // Idle: the next run says so instead of a bare NameError.
  const idle = await start({ env: { CODEMCP_HTTP_TOKEN: ta, CODEMCP_NAMESPACE_IDLE_MS: '1000' } });
  const c = await sdk(idle.url, { authorization: `Bearer ${ta}` });
  assert.equal((await run(c.client, 'z = 5\nresult = z')).result, 5);
  await waitFor(() => /variables dropped \(idle\)/.test(idle.proc.stderr), ms(8000));
  const gone = await run(c.client, 'result = z');
  assert.match(gone.error || '', /NameError[\s\S]*this session's variables were discarded after \d+ s idle/, JSON.stringify(gone));
  assert.equal((await run(c.client, 'z = 6\nresult = z')).result, 6, 'the session goes on with a fresh namespace');
  await c.client.close();
  await idle.proc.kill();
});
