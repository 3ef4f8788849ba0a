// Shared state for a fleet of `codemcp start` replicas (CODEMCP_STATE=redis://…), each test
// with its own redis-server on a free loopback port: two replicas refreshing one rotating OAuth
// credential at once, an admin change on one reaching the other's client, a bearer token
// revoked on one refused by the other, shapes learned on one used by the other for the same
// principal only, and Redis stopped and restarted under load.
// Each replica has a home of its own (as on two hosts): only Redis joins them.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Proc, TESTS, connectHttp, runCodemcp, ms, servers, sleep, tempDir, waitFor, writeConfig } from './lib.mjs';
import { ROTATION_PROGRAM, startOAuthServer } from '../fixtures/oauth_server.mjs';
import { redisAvailable, startRedis } from '../fixtures/redis_server.mjs';

const BROWSER = path.join(TESTS, 'conformance', 'follow-redirects.py');
const TOKEN_A = 'a'.repeat(40);
const TOKEN_B = 'b'.repeat(40);
const skip = redisAvailable() ? false : 'redis-server is not installed (install.sh installs it)';

/** `codemcp ARGS` to completion with home's config; resolves {code, stdout, stderr}. */
const cli = (home, config, args, env = {}) =>
  runCodemcp({ args, config, home, env: { BROWSER, ...env } }, ms(60000));

/** One replica: `codemcp start -p 0` in home (a new one by default: another host) with the
 *  given upstreams, tokens file and extra top-level config (e.g. budgets), on redis. Resolves {proc, url, home}. */
async function replica(redis, mcp, { home = tempDir('codemcp-fleet-'), tokens = { alice: TOKEN_A }, env = {}, extra = {} } = {}) {
  const file = path.join(home, 'tokens');
  fs.writeFileSync(file, Object.entries(tokens).map(([who, t]) => `${who} ${t}\n`).join(''), { mode: 0o600 });
  const config = writeConfig(home, mcp);
  fs.writeFileSync(config, JSON.stringify({ ...JSON.parse(fs.readFileSync(config, 'utf8')), ...extra }, null, 2));
  const proc = new Proc({ args: ['start', '-p', '0'], config, home,
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

  /** An OAuth server (opts) and two replicas on rd holding one credential of it: a login on
   *  one host, its token store copied to both, as a deployment hands every replica the same
   *  secret. Resolves {srv, live}. */
  const sharedCredential = async (rd, opts) => {
    const srv = await startOAuthServer(opts);
    closers.push(() => srv.close());
    const homeA = tempDir('codemcp-fleet-oauth-');
    const configA = writeConfig(homeA, { t: { type: 'remote', url: srv.url } });
    assert.equal((await cli(homeA, configA, ['auth', 't'])).code, 0);
    const store = fs.readFileSync(path.join(homeA, 'codemcp', 'mcp-auth.json'));
    const live = [];
    for (let i = 0; i < 2; i++) {
      const home = tempDir('codemcp-fleet-oauth-');
      fs.mkdirSync(path.join(home, 'codemcp'), { recursive: true });
      fs.writeFileSync(path.join(home, 'codemcp', 'mcp-auth.json'), store, { mode: 0o600 });
      live.push(await replica(rd, { t: { type: 'remote', url: srv.url } }, { home }));
    }
    return { srv, live };
  };

  test('two replicas refresh one rotating OAuth credential at once: one refresh in flight, both keep working', async () => {
    const rd = await redis();
    const { srv, live } = await sharedCredential(rd, { tokenLife: 3, refreshDelayMs: 700 });
    const clients = await Promise.all(live.map((gw) => connectHttp(gw.url, TOKEN_A)));
    // Each replica calls the tool every 0.4 s for ~9 s: three token lifetimes, refreshed by
    // whichever replica gets there first; the other must pick up the winner's tokens.
    const results = await Promise.all(clients.map((c) => run(c, ROTATION_PROGRAM, ms(120000))));
    results.forEach((r, i) => {
      assert.ok(Array.isArray(r.result), `replica ${i}: ${JSON.stringify(r)}\n${live[i].proc.stderrTail()}`);
      assert.ok(r.result.every((x) => x.startsWith('ok')), `replica ${i}: ${JSON.stringify(r.result)}\n${live[i].proc.stderrTail()}`);
    });
    assert.equal(srv.stats.invalidGrant, 0, `a refresh token was spent twice: ${JSON.stringify(srv.stats.tokenRequests)}`);
    assert.ok(srv.stats.refreshes >= 2, `refreshes: ${srv.stats.refreshes}`);
    assert.equal(srv.stats.maxRefreshInFlight, 1, 'refreshes of one credential overlapped: not single-flight across replicas');
    for (const gw of live) assert.doesNotMatch(gw.proc.stderr, /invalid_grant/);
    // Redis holds the newest credential; the lock is released by its owner (a refresh may
    // still be under way: then it expires on its own).
    const shared = JSON.parse(rd.cli('GET', 'codemcp:oauth:t'));
    assert.ok(shared.generation >= 2, JSON.stringify(shared.generation));
    await Promise.all(clients.map((c) => c.end()));
    const released = await waitFor(() => rd.cli('EXISTS', 'codemcp:oauth:t:lock') === '0', ms(10000), 100);
    assert.ok(released || Number(rd.cli('PTTL', 'codemcp:oauth:t:lock')) > 0, 'a refresh lock without an expiry');
  });

  test('a replica SIGKILLed while it refreshes frees the refresh lock within seconds: another replica takes over', async () => {
    const rd = await redis();
    const { srv, live } = await sharedCredential(rd, { tokenLife: 4 });
    const [a, b] = await Promise.all(live.map((gw) => connectHttp(gw.url, TOKEN_A)));
    // From here a refresh hangs at the token endpoint; the credential expires.
    srv.setRefreshDelay(25000);
    await sleep(5000);
    const refreshes = () => srv.stats.tokenRequests.filter((r) => r.grant_type === 'refresh_token').length;
    const before = refreshes();
    run(a, 'result = str(t_whoami())', ms(60000)).catch(() => {});
    assert.ok(await waitFor(() => refreshes() > before && rd.cli('EXISTS', 'codemcp:oauth:t:lock') === '1', ms(20000), 50),
      `replica A did not start a refresh under the lock:\n${live[0].proc.stderrTail()}`);
    const pttl = Number(rd.cli('PTTL', 'codemcp:oauth:t:lock'));
    assert.ok(pttl > 0 && pttl <= 5000, `the lock is a short lease the holder renews, not a long expiry: PTTL ${pttl} ms`);
    await sleep(6000); // longer than one lease: the living holder keeps it
    assert.equal(rd.cli('EXISTS', 'codemcp:oauth:t:lock'), '1', 'a holder still at work lost its lease');
    assert.equal(refreshes(), before + 1, 'nobody else refreshed while the holder lived');
    live[0].proc.child.kill('SIGKILL');
    const killedAt = Date.now();
    run(b, 'result = str(t_whoami())', ms(60000)).catch(() => {});
    // Replica B waits for the lock, which lapses one lease after A's death; then it refreshes.
    assert.ok(await waitFor(() => refreshes() > before + 1, ms(20000), 50),
      `replica B did not take the refresh over within 20 s of A's death (lock PTTL ${rd.cli('PTTL', 'codemcp:oauth:t:lock')} ms):\n${live[1].proc.stderrTail()}`);
    const took = Date.now() - killedAt;
    console.log(`# refresh lock taken over ${took} ms after its holder was SIGKILLed`);
    srv.setRefreshDelay(0);
    await b.end().catch(() => {});
  });

  test('Redis frozen (a silent partition: no reply, no FIN): /readyz says degraded within seconds, ready again when it answers', async () => {
    const rd = await redis();
    const gw = await replica(rd, {});
    const readyz = async () => {
      const r = await fetch(new URL('/readyz', gw.url), { signal: AbortSignal.timeout(ms(10000)) });
      return JSON.parse(await r.text());
    };
    await waitFor(() => /shared state in redis/.test(gw.proc.stderr), ms(10000));
    assert.equal((await readyz()).degraded, undefined);
    rd.child.kill('SIGSTOP');
    try {
      // The subscriber's connection stays open: only an unanswered keepalive can tell.
      assert.ok(await waitFor(async () => (await readyz()).degraded?.state, ms(15000), 200),
        `a frozen Redis went unnoticed: ${JSON.stringify(await readyz())}\n${gw.proc.stderrTail()}`);
      assert.match(gw.proc.stderr, /stopped answering its keepalive/);
    } finally {
      rd.child.kill('SIGCONT');
    }
    assert.ok(await waitFor(async () => (await readyz()).degraded === undefined, ms(15000), 200),
      `still degraded after Redis answered again:\n${gw.proc.stderrTail()}`);
  });

  test('a gateway starved of CPU for longer than the keepalive allows does not call a live Redis gone', async () => {
    const rd = await redis();
    const gw = await replica(rd, {});
    await waitFor(() => /shared state in redis/.test(gw.proc.stderr), ms(10000));
    // A stopped process models a busy machine that ran none of its threads for 7 s: its
    // keepalive asked nothing meanwhile, so there was no silence of Redis to see.
    gw.proc.child.kill('SIGSTOP');
    try {
      await sleep(7000);
    } finally {
      gw.proc.child.kill('SIGCONT');
    }
    await sleep(2000);
    assert.doesNotMatch(gw.proc.stderr, /stopped answering its keepalive|state store .* is unreachable/,
      `a live Redis was called gone after the gateway had no CPU:\n${gw.proc.stderrTail()}`);
    const r = await fetch(new URL('/readyz', gw.url), { signal: AbortSignal.timeout(ms(10000)) });
    assert.equal(JSON.parse(await r.text()).degraded, undefined);
  });

  test('a login and a logout on one replica\'s host reach a running replica', async () => {
    const rd = await redis();
    const srv = await startOAuthServer();
    closers.push(() => srv.close());
    const mcp = { t: { type: 'remote', url: srv.url } };
    const [a, b] = [await replica(rd, mcp), await replica(rd, mcp)];
    const s = await connectHttp(b.url, TOKEN_A);
    assert.match(JSON.stringify(await run(s, 'result = t_whoami()')), /needs_auth/);
    assert.equal((await cli(a.home, path.join(a.home, 'mcp.json'), ['auth', 't'])).code, 0);
    assert.ok(await waitFor(async () => /^ok/.test(String((await run(s, 'result = t_whoami()')).result)), ms(20000), 300),
      `b never got the credential:\n${b.proc.stderrTail()}`);
    assert.equal(JSON.parse(fs.readFileSync(path.join(b.home, 'codemcp', 'mcp-auth.json'), 'utf8')).servers.t.url, srv.url,
      'b keeps its local copy (its last known state)');
    // A logout on a's host removes it everywhere (it is not brought back from another copy).
    assert.equal((await cli(a.home, path.join(a.home, 'mcp.json'), ['logout', 't'])).code, 0);
    assert.ok(await waitFor(async () => /needs_auth/.test(JSON.stringify(await run(s, 'result = t_whoami()'))), ms(20000), 300),
      `b still uses the credential after the logout:\n${b.proc.stderrTail()}`);
    const bToken = () => JSON.parse(fs.readFileSync(path.join(b.home, 'codemcp', 'mcp-auth.json'), 'utf8')).servers.t?.access_token;
    assert.ok(await waitFor(() => rd.cli('EXISTS', 'codemcp:oauth:t') === '0' && bToken() === undefined, ms(10000), 100),
      `the logout did not reach Redis and b's copy:\n${b.proc.stderrTail()}`);
    await sleep(ms(1500));
    assert.equal(JSON.parse(fs.readFileSync(path.join(a.home, 'codemcp', 'mcp-auth.json'), 'utf8')).servers.t?.access_token, undefined, 'the logout was undone');
    assert.equal(rd.cli('EXISTS', 'codemcp:oauth:t'), '0', `back in Redis: ${rd.cli('GET', 'codemcp:oauth:t').slice(0, 400)}\n${a.proc.stderrTail()}`);
    await s.end();
  });
});

/** A client of one replica as token's principal, with its tools/list_changed count. */
async function session(gw, token) {
  const client = await connectHttp(gw.url, token);
  const s = { client, listChanged: 0 };
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => { s.listChanged++; });
  s.run = (code) => run(client, code);
  s.description = async () => (await client.listTools(undefined, { timeout: ms(30000) })).tools[0].description;
  return s;
}

/** The status of a bare initialize POST with token (200 served, 401 refused). */
async function initStatus(gw, token) {
  const r = await fetch(gw.url, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'probe', version: '0' } } }),
  });
  await r.text();
  return r.status;
}

describe('a fleet of replicas on one Redis', { skip }, () => {
  const closers = [];
  after(() => Promise.all(closers.map((c) => c())));
  const rt = tempDir('codemcp-fleet-rt-');
  const adminEnv = () => ({ ...process.env, XDG_RUNTIME_DIR: rt });
  const two = async (rd, opts = {}) => {
    const mcp = { fake: servers.fake() };
    const env = { XDG_RUNTIME_DIR: rt, CODEMCP_DESCRIBE_BUDGET: 'full', ...opts.env };
    const a = await replica(rd, mcp, { tokens: { alice: TOKEN_A, bob: TOKEN_B }, ...opts, env });
    const b = await replica(rd, mcp, { tokens: { alice: TOKEN_A, bob: TOKEN_B }, ...opts, env });
    return [a, b];
  };
  const redis = async () => {
    const r = await startRedis();
    closers.push(() => r.close());
    return r;
  };
  const connected = (s) => waitFor(async () => (await s.description()).includes('fake_echo'), ms(30000), 200);

  test('an admin disable on one replica reaches the other\'s connected client as tools/list_changed', async () => {
    const rd = await redis();
    const [a, b] = await two(rd);
    const s = await session(b, TOKEN_A);
    assert.ok(await connected(s), `fake never connected on b:\n${b.proc.stderrTail()}`);
    await waitFor(() => /shared state in redis/.test(a.proc.stderr) && /shared state in redis/.test(b.proc.stderr), ms(10000));
    const before = s.listChanged;
    const r = await cli(a.home, path.join(a.home, 'mcp.json'), ['disable', 'fake', '-i', String(a.proc.pid)], { XDG_RUNTIME_DIR: rt });
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.ok(await waitFor(() => s.listChanged > before, ms(15000), 100), `no tools/list_changed on b:\n${b.proc.stderrTail()}`);
    assert.doesNotMatch(await s.description(), /fake_echo/);
    assert.match(b.proc.stderr, /applied disable from another replica/);
    // And back: enable on b reaches a.
    const sa = await session(a, TOKEN_A);
    assert.doesNotMatch(await sa.description(), /fake_echo/);
    const on = await cli(b.home, path.join(b.home, 'mcp.json'), ['enable', 'fake', '-i', String(b.proc.pid)], { XDG_RUNTIME_DIR: rt });
    assert.equal(on.code, 0, on.stderr + on.stdout);
    assert.ok(await connected(sa), `enable did not reach a:\n${a.proc.stderrTail()}`);
    await Promise.all([s.client.end(), sa.client.end()]);
  });

  test('a token revoked on one replica is refused by the other', async () => {
    const rd = await redis();
    const [a, b] = await two(rd);
    await waitFor(() => /shared state in redis/.test(a.proc.stderr) && /shared state in redis/.test(b.proc.stderr), ms(10000));
    assert.equal(await initStatus(b, TOKEN_B), 200);
    // Bob's token leaves a's tokens file; a reloads it (SIGHUP). b's own file still lists it.
    fs.writeFileSync(a.tokensFile, `alice ${TOKEN_A}\n`, { mode: 0o600 });
    a.proc.child.kill('SIGHUP');
    assert.ok(await waitFor(async () => (await initStatus(b, TOKEN_B)) === 401, ms(15000), 200),
      `b still accepts the revoked token:\n${b.proc.stderrTail()}`);
    assert.equal(await initStatus(a, TOKEN_B), 401);
    assert.equal(await initStatus(b, TOKEN_A), 200, 'the other principal is untouched');
    // A restart of b with its stale file does not bring the token back.
    b.proc.child.kill('SIGKILL');
    await b.proc.exited;
    const b2 = await replica(rd, { fake: servers.fake() }, { tokens: { alice: TOKEN_A, bob: TOKEN_B }, env: { XDG_RUNTIME_DIR: rt } });
    assert.ok(await waitFor(() => /shared state in redis/.test(b2.proc.stderr), ms(10000)));
    assert.ok(await waitFor(async () => (await initStatus(b2, TOKEN_B)) === 401, ms(10000), 200), 'a restarted replica accepts a revoked token');
    assert.equal(await initStatus(b2, TOKEN_A), 200);
    assert.doesNotMatch(rd.cli('HGETALL', 'codemcp:tokens') + rd.cli('SMEMBERS', 'codemcp:revoked'), new RegExp(TOKEN_B), 'tokens are stored as digests only');
  });

  test('a program reaches the state store neither over loopback nor through a descriptor the gateway holds to it', async () => {
    const rd = await redis();
    const [a] = await two(rd);
    const alice = await session(a, TOKEN_A);
    await waitFor(() => /shared state in redis/.test(a.proc.stderr), ms(10000));
    const r = await alice.run(`import os, socket
out = {"peers": []}
try:
    s = socket.create_connection(("127.0.0.1", ${rd.port}), timeout=2)
    s.sendall(b"PING\\r\\n")
    out["connect"] = s.recv(16).decode(errors="replace")
except Exception as e:
    out["connect"] = type(e).__name__
for fd in os.listdir("/proc/self/fd"):
    try:
        s = socket.socket(fileno=int(fd))
    except Exception:
        continue
    try:
        out["peers"].append(repr(s.getpeername()))
    except Exception:
        pass
    finally:
        s.detach()
result = out`);
    assert.ok(r.result, JSON.stringify(r).slice(0, 500));
    assert.ok(!String(r.result.connect).includes('PONG'), `a program talked to Redis: ${JSON.stringify(r.result)}`);
    assert.ok(!r.result.peers.some((p) => p.includes(String(rd.port))), `a descriptor to Redis in the worker: ${JSON.stringify(r.result)}`);
  });

  test('shapes learned and call counts on one replica are used by the other for the same principal, never for another', async () => {
    const rd = await redis();
    const [a, b] = await two(rd);
    const aliceA = await session(a, TOKEN_A);
    const aliceB = await session(b, TOKEN_A);
    const bobB = await session(b, TOKEN_B);
    assert.ok(await connected(aliceA) && await connected(aliceB));
    await waitFor(() => /shared state in redis/.test(a.proc.stderr) && /shared state in redis/.test(b.proc.stderr), ms(10000));
    const KEY = 'fleet_learned_field';
    const taught = await aliceA.run(`import json\nresult = fake_echo(text=json.dumps({"${KEY}": 1}))`);
    assert.equal(taught.result?.[KEY], 1, JSON.stringify(taught));
    assert.ok(await waitFor(async () => JSON.stringify((await aliceB.run('result = describe("fake_echo")')).result).includes(KEY), ms(20000), 300),
      `alice's shape did not reach her sessions on b:\n${b.proc.stderrTail()}`);
    // The validator on b uses it: a field the shape says cannot exist is flagged before the run.
    const flagged = await aliceB.run(`import json\nr = fake_echo(text=json.dumps({"${KEY}": 1}))\nresult = r["${KEY}_typo"]`);
    assert.match(JSON.stringify(flagged), new RegExp(`${KEY}_typo`), JSON.stringify(flagged));
    const theirs = await bobB.run('result = describe("fake_echo")');
    assert.ok(!JSON.stringify(theirs.result).includes(KEY), `bob sees alice's shape: ${JSON.stringify(theirs)}`);
    assert.doesNotMatch(await bobB.description(), new RegExp(KEY));
    // Call counts are summed per principal too: alice's calls on both replicas, none for bob.
    assert.equal((await aliceB.run('result = fake_echo(text="again")')).result, 'again');
    assert.ok(await waitFor(() => Number(rd.cli('HGET', 'codemcp:usage:salice', 'fake_echo')) >= 2, ms(15000), 200),
      rd.cli('HGETALL', 'codemcp:usage:salice'));
    assert.equal(rd.cli('EXISTS', 'codemcp:usage:sbob'), '0');
    await Promise.all([aliceA.client.end(), aliceB.client.end(), bobB.client.end()]);
  });

  test('Redis stopped and restarted under load: no call fails, one log line each way, state catches up', async () => {
    const rd = await redis();
    const [a, b] = await two(rd);
    const clients = [await session(a, TOKEN_A), await session(b, TOKEN_A), await session(b, TOKEN_B)];
    for (const s of clients) assert.ok(await connected(s));
    await waitFor(() => /shared state in redis/.test(a.proc.stderr) && /shared state in redis/.test(b.proc.stderr), ms(10000));
    const listChangedB = clients[1].listChanged;
    let stop = false;
    const failures = [];
    let calls = 0;
    const load = clients.map(async (s, i) => {
      for (let n = 0; !stop; n++) {
        try {
          const r = await s.run(`import json\nresult = fake_add(a=${i}, b=${n})`);
          if (r.result !== i + n) failures.push(JSON.stringify(r));
          calls++;
        } catch (e) {
          failures.push(String(e));
        }
      }
    });
    await sleep(ms(1000));
    await rd.stop();
    // While Redis is away: an admin change on a applies there at once, and reaches b later.
    const off = await cli(a.home, path.join(a.home, 'mcp.json'), ['disable-tool', 'fake', 'echo', '-i', String(a.proc.pid)], { XDG_RUNTIME_DIR: rt });
    await sleep(ms(2500));
    assert.ok(await waitFor(() => /state store .* is unreachable/.test(a.proc.stderr) && /state store .* is unreachable/.test(b.proc.stderr), ms(10000)));
    await rd.start();
    assert.ok(await waitFor(() => /reachable again; catching up/.test(a.proc.stderr) && /reachable again; catching up/.test(b.proc.stderr), ms(15000), 100),
      `no reconnect:\n${a.proc.stderrTail()}\n${b.proc.stderrTail()}`);
    await sleep(ms(1500));
    stop = true;
    await Promise.all(load);
    assert.deepEqual(failures, [], `calls failed while Redis was away (${calls} ran)`);
    assert.ok(calls >= 6, `too little load: ${calls} calls`);
    for (const gw of [a, b]) {
      assert.equal(gw.proc.stderr.match(/is unreachable/g).length, 1, `one line for one outage:\n${gw.proc.stderrTail()}`);
    }
    // Caught up: the restarted (empty) Redis has every replica's tokens again, and the change
    // made on a during the outage reached b's client.
    assert.ok(await waitFor(() => Number(rd.cli('HLEN', 'codemcp:tokens')) === 2, ms(10000), 200), rd.cli('HGETALL', 'codemcp:tokens'));
    if (off.code === 0) {
      assert.ok(await waitFor(async () => !(await clients[1].description()).includes('def fake_echo('), ms(15000), 200),
        `the change made during the outage never reached b:\n${b.proc.stderrTail()}`);
      assert.ok(clients[1].listChanged > listChangedB);
    } else {
      assert.fail(`disable_tool failed: ${off.stderr}${off.stdout}`);
    }
    await Promise.all(clients.map((s) => s.client.end()));
  });
});

/** A program making up to k tool calls one after another: {ok: calls that went through,
 *  refused: the first ToolError's kind and message, or null}. */
const SPEND = (k, tag) => `ok = 0
refused = None
for i in range(${k}):
    try:
        r = fake_echo(text="${tag}-%d" % i)
        r = r.result() if hasattr(r, "result") else r
        ok += 1
    except ToolError as e:
        refused = {"kind": e.kind, "message": str(e)}
        break
result = {"ok": ok, "refused": refused}`;

describe('budgets per principal across a fleet of replicas', { skip }, () => {
  const closers = [];
  after(() => Promise.all(closers.map((c) => c())));
  const N = 6;
  // What a replica may admit before it hears of the others' calls (docs/policy.md): each sync
  // is awaited below, so one call of slack is enough on this machine however slow it is.
  const SLACK = 1;
  const budgets = [
    { name: 'alice-hourly', principal: 'alice', window_s: 3600, calls: N },
    { name: 'bob-runs', principal: 'bob', window_s: 3600, runs: 3 },
  ];
  const pair = async (rd, env = {}) => {
    const mcp = { fake: servers.fake() };
    const opts = { tokens: { alice: TOKEN_A, bob: TOKEN_B }, extra: { budgets }, env };
    return [await replica(rd, mcp, opts), await replica(rd, mcp, opts)];
  };
  const sessions = async (gws) => {
    const s = [];
    for (const [gw, token] of gws) s.push(await session(gw, token));
    for (const x of s) assert.ok(await waitFor(async () => (await x.description()).includes('fake_echo'), ms(30000), 200));
    return s;
  };
  const aliceKey = (rd) => rd.cli('KEYS', 'codemcp:budget:*').split('\n').find((k) => k.endsWith(':alice'));

  test('calls spent on one replica count on the other: refused there once the shared total reaches the budget; bob is untouched', async () => {
    const rd = await startRedis();
    closers.push(() => rd.close());
    const [a, b] = await pair(rd);
    await waitFor(() => /shared state in redis/.test(a.proc.stderr) && /shared state in redis/.test(b.proc.stderr), ms(10000));
    const [aliceA, aliceB, bobB] = await sessions([[a, TOKEN_A], [b, TOKEN_A], [b, TOKEN_B]]);
    const first = await aliceA.run(SPEND(4, 'a'));
    assert.deepEqual(first.result, { ok: 4, refused: null }, JSON.stringify(first));
    // Wait for the sync: a's count in Redis, and a moment for its total to reach b.
    assert.ok(await waitFor(() => aliceKey(rd) && rd.cli('GET', aliceKey(rd)) === '4', ms(15000), 100),
      `a's calls never reached Redis: ${rd.cli('KEYS', 'codemcp:budget:*')}\n${a.proc.stderrTail()}`);
    await sleep(ms(1000));
    const second = await aliceB.run(SPEND(N, 'b'));
    assert.ok(second.result.ok >= N - 4 && second.result.ok <= N - 4 + SLACK,
      `b admitted ${second.result.ok} of alice's calls after a spent 4 of ${N}: ${JSON.stringify(second)}\n${b.proc.stderrTail()}`);
    assert.equal(second.result.refused?.kind, 'budget', JSON.stringify(second));
    assert.match(second.result.refused.message, new RegExp(`budget alice-hourly exceeded: principal alice made its ${N} tool calls of this 3600 s window; it resets in \\d+ s`));
    // Bob has no budget: b serves him as before.
    assert.deepEqual((await bobB.run(SPEND(N + 2, 'bob'))).result, { ok: N + 2, refused: null });
    // And a hears of b's calls: alice is refused there too (after at most the slack).
    let extra = 0;
    assert.ok(await waitFor(async () => {
      const r = (await aliceA.run(SPEND(1, 'again'))).result;
      extra += r.ok;
      return r.refused?.kind === 'budget';
    }, ms(15000), 300), `a never refused alice:\n${a.proc.stderrTail()}`);
    assert.ok(extra <= SLACK, `a admitted ${extra} more of alice's calls`);
    const key = aliceKey(rd);
    const total = Number(rd.cli('GET', key));
    assert.ok(total >= N && total <= N + 2 * SLACK, `the fleet counted ${total} calls of alice`);
    assert.ok(Number(rd.cli('PTTL', key)) > 0, 'the count never expires');
    assert.equal(rd.cli('KEYS', 'codemcp:budget:*').split('\n').filter((k) => /:c:\d+:bob$/.test(k)).length, 0, 'bob\'s calls were counted');
    await Promise.all([aliceA, aliceB, bobB].map((s) => s.client.end()));
  });

  test('runs started on one replica count on the other: the run past the budget is refused before it starts', async () => {
    const rd = await startRedis();
    closers.push(() => rd.close());
    const [a, b] = await pair(rd);
    await waitFor(() => /shared state in redis/.test(a.proc.stderr) && /shared state in redis/.test(b.proc.stderr), ms(10000));
    const [bobA, bobB] = await sessions([[a, TOKEN_B], [b, TOKEN_B]]);
    for (let i = 0; i < 2; i++) assert.equal((await bobA.run('result = 1')).result, 1);
    const runsKey = () => rd.cli('KEYS', 'codemcp:budget:*').split('\n').find((k) => /:r:\d+:bob$/.test(k));
    assert.ok(await waitFor(() => runsKey() && rd.cli('GET', runsKey()) === '2', ms(15000), 100),
      `a's runs never reached Redis: ${rd.cli('KEYS', 'codemcp:budget:*')}\n${a.proc.stderrTail()}`);
    await sleep(ms(1000));
    const started = [];
    for (let i = 0; i < 1 + SLACK + 1; i++) {
      const r = await bobB.client.callTool({ name: 'execute_python', arguments: { code: 'result = 2' } }, undefined, { timeout: ms(60000) });
      started.push(r.isError ? JSON.stringify(r) : 'ran');
      if (r.isError) break;
    }
    const refused = started.at(-1);
    assert.match(refused, /budget bob-runs exceeded: principal bob started its 3 runs of this 3600 s window; it resets in \d+ s/, JSON.stringify(started));
    assert.ok(started.length - 1 >= 1 && started.length - 1 <= 1 + SLACK, `b started ${started.length - 1} of bob's runs after a started 2 of 3`);
    await Promise.all([bobA, bobB].map((s) => s.client.end()));
  });

  test('Redis away: each replica keeps enforcing what it counted, and the fleet catches up after', async () => {
    const rd = await startRedis();
    closers.push(() => rd.close());
    const [a, b] = await pair(rd);
    await waitFor(() => /shared state in redis/.test(a.proc.stderr) && /shared state in redis/.test(b.proc.stderr), ms(10000));
    const [aliceA, aliceB] = await sessions([[a, TOKEN_A], [b, TOKEN_A]]);
    await rd.stop();
    assert.ok(await waitFor(() => /state store .* is unreachable/.test(a.proc.stderr), ms(10000), 100));
    // Counted alone meanwhile, never more: a refuses alice past her budget with Redis away.
    const away = await aliceA.run(SPEND(N + 2, 'away'));
    assert.equal(away.result.ok, N, JSON.stringify(away));
    assert.equal(away.result.refused?.kind, 'budget', JSON.stringify(away));
    await rd.start();
    assert.ok(await waitFor(() => /reachable again; catching up/.test(a.proc.stderr) && /reachable again; catching up/.test(b.proc.stderr), ms(15000), 100));
    assert.ok(await waitFor(() => aliceKey(rd) && rd.cli('GET', aliceKey(rd)) === String(N), ms(20000), 200),
      `a's count never reached the restarted Redis: ${rd.cli('KEYS', 'codemcp:budget:*')}\n${a.proc.stderrTail()}`);
    await sleep(ms(1000));
    const after = await aliceB.run(SPEND(N, 'b'));
    assert.ok(after.result.ok <= SLACK, `b admitted ${after.result.ok} of alice's spent calls: ${JSON.stringify(after)}`);
    assert.equal(after.result.refused?.kind, 'budget', JSON.stringify(after));
    await Promise.all([aliceA, aliceB].map((s) => s.client.end()));
  });

  test('Redis frozen while a count is on its way: the fleet total counts those calls once, not once per retry', async () => {
    const rd = await startRedis();
    closers.push(() => rd.close());
    const [a] = await pair(rd);
    await waitFor(() => /shared state in redis/.test(a.proc.stderr), ms(10000));
    const [aliceA] = await sessions([[a, TOKEN_A]]);
    // One call first: its count is known to a (read from Redis), so what follows is sent at once.
    assert.deepEqual((await aliceA.run(SPEND(1, 'before'))).result, { ok: 1, refused: null });
    assert.ok(await waitFor(() => aliceKey(rd) && rd.cli('GET', aliceKey(rd)) === '1', ms(15000), 100));
    rd.child.kill('SIGSTOP');
    let spent;
    try {
      spent = await aliceA.run(SPEND(3, 'frozen'));
      // The sync (within a second) waits on the frozen Redis past its command timeout; Redis
      // still holds the command in its socket and runs it once it answers again.
      await sleep(6000);
    } finally {
      rd.child.kill('SIGCONT');
    }
    assert.deepEqual(spent.result, { ok: 3, refused: null }, JSON.stringify(spent));
    assert.ok(await waitFor(() => aliceKey(rd) && rd.cli('GET', aliceKey(rd)) === '4', ms(20000), 200),
      `a's 4 calls never reached Redis as 4: ${aliceKey(rd) && rd.cli('GET', aliceKey(rd))}\n${a.proc.stderrTail()}`);
    await sleep(3000); // a second sending of the same calls would land by now
    assert.equal(rd.cli('GET', aliceKey(rd)), '4', `alice's calls counted twice:\n${a.proc.stderrTail()}`);
    await aliceA.client.end();
  });

  test('without CODEMCP_STATE each replica counts alone', async () => {
    const [a, b] = await pair({ url: '' }, { CODEMCP_STATE: '' });
    const [aliceA, aliceB] = await sessions([[a, TOKEN_A], [b, TOKEN_A]]);
    const onA = await aliceA.run(SPEND(N + 1, 'a'));
    assert.equal(onA.result.ok, N, JSON.stringify(onA));
    assert.equal(onA.result.refused?.kind, 'budget');
    assert.deepEqual((await aliceB.run(SPEND(N, 'b'))).result, { ok: N, refused: null });
    await Promise.all([aliceA, aliceB].map((s) => s.client.end()));
  });
});
