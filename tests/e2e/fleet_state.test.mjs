// Shared state for a fleet of `codemcp start` replicas (CODEMCP_STATE=redis://…), each test
// with its own redis-server on a free loopback port: two replicas refreshing one rotating OAuth
// credential at once, an admin change on one reaching the other's client, a bearer token
// revoked on one refused by the other, shapes learned on one used by the other for the same
// principal only, and Redis stopped and restarted under load.
// Each replica has a home of its own (as on two hosts): only Redis joins them.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Proc, TESTS, codemcpCommand, codemcpEnv, connectHttp, ms, servers, sleep, tempDir, waitFor, writeConfig } from './lib.mjs';
import { startOAuthServer } from '../fixtures/oauth_server.mjs';
import { redisAvailable, startRedis } from '../fixtures/redis_server.mjs';

const BROWSER = path.join(TESTS, 'conformance', 'follow-redirects.py');
const TOKEN_A = 'a'.repeat(40);
const TOKEN_B = 'b'.repeat(40);
const skip = redisAvailable() ? false : 'redis-server is not installed (install.sh installs it)';

/** `codemcp ARGS` to completion with home's config; resolves {code, stdout, stderr}. */
function cli(home, config, args, env = {}) {
  const [cmd, argv] = codemcpCommand(args);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { env: codemcpEnv({ config, home, env: { BROWSER, ...env } }), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), ms(60000));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** One replica: `codemcp start -p 0` in home (a new one by default: another host) with the
 *  given upstreams and tokens file, on redis. Resolves {proc, url, home}. */
async function replica(redis, mcp, { home = tempDir('codemcp-fleet-'), tokens = { alice: TOKEN_A }, env = {} } = {}) {
  const file = path.join(home, 'tokens');
  fs.writeFileSync(file, Object.entries(tokens).map(([who, t]) => `${who} ${t}\n`).join(''), { mode: 0o600 });
  const proc = new Proc({ args: ['start', '-p', '0'], config: writeConfig(home, mcp), home,
    env: { CODEMCP_HTTP_TOKENS_FILE: file, CODEMCP_STATE: redis.url, CODEMCP_LOG: 'info', ...env } });
  const m = await waitFor(() => proc.exit || proc.stderr.match(/serving MCP over Streamable HTTP at (\S+)/), ms(20000));
  assert.ok(m && m[1], `codemcp start did not come up:\n${proc.stderrTail()}`);
  return { proc, url: m[1], home, tokensFile: file };
}

async function run(client, code, limit = ms(60000)) {
  const r = await client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: limit });
  return JSON.parse(r.content[0].text);
}

describe('shared state in Redis', { skip }, () => {
  const closers = [];
  after(() => Promise.all(closers.map((c) => c())));
  const redis = async () => {
    const r = await startRedis();
    closers.push(() => r.close());
    return r;
  };

  test('two replicas refresh one rotating OAuth credential at once: one refresh in flight, both keep working', async () => {
    const rd = await redis();
    const srv = await startOAuthServer({ tokenLife: 3, refreshDelayMs: 700 });
    closers.push(() => srv.close());
    const homeA = tempDir('codemcp-fleet-oauth-');
    const configA = writeConfig(homeA, { t: { type: 'remote', url: srv.url } });
    assert.equal((await cli(homeA, configA, ['auth', 't'])).code, 0);
    // The same credential on a second host: a copy of the token store, as a deployment would
    // hand every replica the same secret.
    const store = fs.readFileSync(path.join(homeA, 'codemcp', 'mcp-auth.json'));
    const live = [];
    for (let i = 0; i < 2; i++) {
      const home = tempDir('codemcp-fleet-oauth-');
      fs.mkdirSync(path.join(home, 'codemcp'), { recursive: true });
      fs.writeFileSync(path.join(home, 'codemcp', 'mcp-auth.json'), store, { mode: 0o600 });
      live.push(await replica(rd, { t: { type: 'remote', url: srv.url } }, { home }));
    }
    const clients = await Promise.all(live.map((gw) => connectHttp(gw.url, TOKEN_A)));
    // Each replica calls the tool every 0.4 s for ~9 s: three token lifetimes, refreshed by
    // whichever replica gets there first; the other must pick up the winner's tokens.
    const program = `import time
out = []
for i in range(22):
    try:
        out.append(str(t_whoami()).split()[0])
    except ToolError as e:
        time.sleep(1.5)
        out.append(str(t_whoami()).split()[0] + "-retried")
    time.sleep(0.4)
result = out`;
    const results = await Promise.all(clients.map((c) => run(c, program, ms(120000))));
    results.forEach((r, i) => {
      assert.ok(Array.isArray(r.result), `replica ${i}: ${JSON.stringify(r)}\n${live[i].proc.stderrTail()}`);
      assert.ok(r.result.every((x) => x.startsWith('ok')), `replica ${i}: ${JSON.stringify(r.result)}\n${live[i].proc.stderrTail()}`);
    });
    assert.equal(srv.stats.invalidGrant, 0, `a refresh token was spent twice: ${JSON.stringify(srv.stats.tokenRequests)}`);
    assert.ok(srv.stats.refreshes >= 2, `refreshes: ${srv.stats.refreshes}`);
    assert.equal(srv.stats.maxRefreshInFlight, 1, 'refreshes of one credential overlapped: not single-flight across replicas');
    // Redis holds the newest credential, and no lock is left behind.
    const shared = JSON.parse(rd.cli('GET', 'codemcp:oauth:t'));
    assert.ok(shared.generation >= 2, JSON.stringify(shared.generation));
    assert.equal(rd.cli('EXISTS', 'codemcp:oauth:t:lock'), '0');
    await Promise.all(clients.map((c) => c.end()));
  });
});
