// OAuth for remote upstreams against tests/fixtures/oauth_server.mjs, for what the
// conformance suite (conformance_auth) does not cover: discovery past 401/403 on well-known
// paths, a server that rejects RFC 8707 `resource` (and codemcp remembering that), the token
// file's mode, logout with revocation, two gateways refreshing rotating refresh tokens at
// once (no invalid_grant, both keep working), a restart after the access token expired, and
// the token never reaching the worker's memory or environment, nor the trace log.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { TESTS, connectClient, ms, runCodemcp, sleep, tempDir, waitFor, writeConfig } from './lib.mjs';
import { ROTATION_PROGRAM, startOAuthServer } from '../fixtures/oauth_server.mjs';

const BROWSER = path.join(TESTS, 'conformance', 'follow-redirects.py');

/** A home with a one-server config at srv.url. */
function setup(srv) {
  const home = tempDir('codemcp-oauth-');
  const config = writeConfig(home, { t: { type: 'remote', url: srv.url } });
  return { home, config, store: path.join(home, 'codemcp', 'mcp-auth.json') };
}

/** Runs `codemcp ARGS` (auth, logout) to completion; resolves {code, stdout, stderr}. */
const cli = (h, args, env = {}) =>
  runCodemcp({ args, config: h.config, home: h.home, env: { BROWSER, ...env } }, ms(60000));

/** Runs one program through the gateway; resolves {code, envelope, stderr}. */
async function smoke(h, program, env = {}) {
  const r = await runCodemcp({ config: h.config, home: h.home, env: { CODEMCP_SMOKE: program, ...env } }, ms(60000));
  let envelope = null;
  try {
    envelope = JSON.parse(r.stdout);
  } catch {
    // reported below
  }
  return { ...r, envelope };
}

const entry = (h) => JSON.parse(fs.readFileSync(h.store, 'utf8')).servers.t;

describe('OAuth for remote upstreams (test authorization server)', () => {
  const servers = [];
  after(() => Promise.all(servers.map((s) => s.close())));
  const start = async (opts) => {
    const s = await startOAuthServer(opts);
    servers.push(s);
    return s;
  };

  test('discovery past 401/403 well-known answers, a server that rejects resource, mode 0600, logout', async () => {
    const srv = await start({ rejectResource: true });
    const h = setup(srv);
    // Before any login the gateway marks the server needs_auth with the hint and goes on.
    const first = await smoke(h, 'result = "ran"');
    assert.equal(first.envelope?.result, "ran", first.stdout + first.stderr);
    assert.match(first.stderr, /needs_auth \(Run: codemcp auth t\)/);

    const r = await cli(h, ['auth', 't']);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(srv.stats.prmPathBased >= 1 && srv.stats.prmRoot >= 1, JSON.stringify(srv.stats));
    assert.deepEqual(srv.stats.asMeta.slice(0, 3), [401, 403, 200], 'RFC 8414, OpenID path-inserted, then path-appended');
    // The first authorization carried resource and was refused; the second went without.
    assert.equal(srv.stats.authorize.length, 2);
    assert.ok(srv.stats.authorize[0].resource);
    assert.equal(srv.stats.authorize[1].resource, undefined);
    assert.equal(srv.stats.authorize[1].code_challenge_method, 'S256');
    assert.ok(srv.stats.authorize[1].state);
    assert.equal((fs.statSync(h.store).mode & 0o777), 0o600, 'the token store is 0600');
    assert.equal(entry(h).send_resource, false);

    // Remembered: a second login does not try resource again.
    const again = await cli(h, ['auth', 't']);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(srv.stats.authorize.length, 3);
    assert.equal(srv.stats.authorize[2].resource, undefined);

    const s = await smoke(h, 'result = t_whoami()');
    assert.match(String(s.envelope?.result), /^ok \d+$/, s.stderr);
    const list = await cli(h, ['auth', '--list']);
    assert.match(list.stdout, /^t\s.*authenticated/m);

    // Any local process can reach the 127.0.0.1 callback: one that gets there first with
    // another state is answered 400 and ignored, and the real answer still completes the login.
    const forger = path.join(h.home, 'forge-then-follow.py');
    fs.writeFileSync(forger, `#!/usr/bin/python3
import sys, urllib.parse, urllib.request, urllib.error
q = urllib.parse.parse_qs(urllib.parse.urlparse(sys.argv[1]).query)
try:
    urllib.request.urlopen(q["redirect_uri"][0] + "?code=forged&state=forged", timeout=10).read()
except urllib.error.HTTPError as e:
    print("forged callback:", e.code, file=sys.stderr)
urllib.request.urlopen(sys.argv[1], timeout=30).read()
`);
    fs.chmodSync(forger, 0o755);
    const forged = await cli(h, ['auth', 't'], { BROWSER: forger });
    assert.equal(forged.code, 0, forged.stderr);
    assert.match(forged.stderr, /ignored a callback with another state/);

    const out = await cli(h, ['logout', 't']);
    assert.equal(out.code, 0, out.stderr);
    assert.ok(srv.stats.revoked >= 1, 'RFC 7009 revocation');
    assert.equal(JSON.parse(fs.readFileSync(h.store, 'utf8')).servers.t, undefined);
    // A program that names the server's functions is told to log in (pre-flight check).
    const gone = await smoke(h, 'result = t_whoami()');
    assert.match(String(gone.envelope?.error), /t is configured but failed \(needs_auth \(Run: codemcp auth t\)/, gone.stdout + gone.stderr);
  });

  test('a running gateway picks up `codemcp auth` and `codemcp logout` without a restart', async () => {
    const srv = await start();
    const h = setup(srv);
    const g = await connectClient({ config: h.config, home: h.home, env: { CODEMCP_LOG: 'info' } });
    await g.client.listTools();
    const run = async (code) => {
      const r = await g.client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(30000) });
      return JSON.parse(r.content[0].text);
    };
    assert.match(g.stderr(), /needs_auth \(Run: codemcp auth t\)/);
    assert.match(String((await run('result = t_whoami()')).error), /needs_auth \(Run: codemcp auth t\)/);
    const before = await cli(h, ['list']);
    assert.match(before.stdout, /^t\s.*\bneeds_auth\b/m, before.stdout + before.stderr);
    assert.equal((await cli(h, ['auth', 't'])).code, 0);
    assert.ok(await waitFor(async () => (await run('result = "t_whoami" in dir()')).result === true, ms(15000), 300),
      `the gateway did not pick up the new token\n${g.stderr().slice(-2000)}`);
    assert.match(String((await run('result = t_whoami()')).result), /^ok/);
    // The admin socket's view (codemcp list) shows the stored credentials.
    const list = await cli(h, ['list']);
    assert.match(list.stdout, /^t\s.*\boauth\b/m, list.stdout + list.stderr);
    assert.equal((await cli(h, ['logout', 't'])).code, 0);
    // Disconnected: its tools stay in the SDK (as for any server that went down) but fail.
    const probe = 'try:\n    str(t_whoami())\n    result = "called"\nexcept ToolError as e:\n    result = e.kind + ": " + str(e)';
    assert.ok(await waitFor(async () => /needs_auth/.test(JSON.stringify(await run(probe))), ms(15000), 300),
      `the gateway did not drop the server after logout\n${g.stderr().slice(-2000)}`);
    assert.equal(g.stderr().match(/t: needs_auth \(Run: codemcp auth t\)/g).length, 2, g.stderr().slice(-2000));
  });

  test('two gateways refresh rotating refresh tokens at once: no invalid_grant, both keep working', async () => {
    const srv = await start({ tokenLife: 3, refreshDelayMs: 700 });
    const h = setup(srv);
    assert.equal((await cli(h, ['auth', 't'])).code, 0);
    // Each gateway calls the tool every 0.4 s for ~9 s: three token lifetimes, refreshed by
    // whichever gateway gets there first; the other must pick up the winner's tokens.
    const [a, b] = await Promise.all([smoke(h, ROTATION_PROGRAM), smoke(h, ROTATION_PROGRAM)]);
    for (const r of [a, b]) {
      assert.ok(Array.isArray(r.envelope?.result), r.stderr.slice(-3000));
      assert.ok(r.envelope.result.every((x) => x.startsWith('ok')), JSON.stringify(r.envelope.result));
    }
    assert.equal(srv.stats.invalidGrant, 0, `a refresh token was spent twice: ${JSON.stringify(srv.stats.tokenRequests)}`);
    assert.ok(srv.stats.refreshes >= 2, `refreshes: ${srv.stats.refreshes}`);
    assert.equal(srv.stats.maxRefreshInFlight, 1, 'refreshes of one credential overlapped: not single-flight across processes');
  });

  test('a restart after the access token expired refreshes before connecting', async () => {
    // The first token lives 2 s; the refreshed one long enough that a slow start under load
    // cannot see it expire too (that would count a second refresh or a 401).
    const srv = await start({ tokenLife: 2, refreshLife: 600 });
    const h = setup(srv);
    assert.equal((await cli(h, ['auth', 't'])).code, 0);
    const before = entry(h);
    await sleep(3000);
    srv.stats.mcp401 = 0;
    const s = await smoke(h, 'result = t_whoami()');
    assert.match(String(s.envelope?.result), /^ok/, s.stderr);
    assert.equal(srv.stats.refreshes, 1);
    assert.equal(srv.stats.mcp401, 0, 'the expired token was never sent');
    const now = entry(h);
    assert.notEqual(now.access_token, before.access_token);
    assert.ok(now.expires_at > before.expires_at, 'the new expiry is stored');
  });

  test('tokens never reach the worker (memory, environment) nor the trace log', async () => {
    const srv = await start();
    const h = setup(srv);
    assert.equal((await cli(h, ['auth', 't'])).code, 0);
    const { access_token: at, refresh_token: rt } = entry(h);
    // The program scans its own process for anything shaped like a token of this server
    // (CMXT/CMXR + 40 of [A-Z0-9]; the pattern does not match its own source). A token it
    // builds itself is the control that shows the scan can see the heap. Regions above 256 MiB
    // are skipped: under ASan they are its shadow memory.
    const program = `import re
r = t_whoami()
control = "CMXT" + "Q" * 40
pat = re.compile(rb"CMX[TR][A-Z0-9]{40}")
found = set()
import gc, os
keep = [control]  # a tracked container holds the control for the object scan
def scan_objects():
    # Inside the sandbox /proc/self/mem is closed (not dumpable): scan every Python object.
    pb = re.compile(r"CMX[TR][A-Z0-9]{40}")
    for k, v in os.environ.items():
        found.update(pb.findall(k + "=" + v))
    for o in gc.get_objects():
        items = o.items() if isinstance(o, dict) else o if isinstance(o, (list, tuple, set, frozenset)) else ()
        for x in (y for kv in items for y in (kv if isinstance(o, dict) else (kv,))):
            if isinstance(x, str) and "CMX" in x:
                found.update(pb.findall(x))
            elif isinstance(x, (bytes, bytearray)) and b"CMX" in x:
                found.update(m.group(0).decode() for m in pat.finditer(x))
try:
    maps, mem = open("/proc/self/maps"), open("/proc/self/mem", "rb", 0)
    method = "memory"
except OSError:
    maps = mem = None
    method = "objects"
    scan_objects()
if mem:
  with maps, mem:
    for line in maps:
        parts = line.split()
        if "r" not in parts[1] or (len(parts) > 5 and parts[5] in ("[vvar]", "[vsyscall]", "[vvar_vclock]")):
            continue
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        if hi - lo > (1 << 28):
            continue  # sanitizer shadow memory (terabytes of zero pages), never a heap
        pos = lo
        while pos < hi:
            n = min(hi - pos, 1 << 24)
            try:
                mem.seek(pos)
                chunk = mem.read(n + 43 if pos + n < hi else n)
            except (OSError, ValueError, OverflowError):
                # Some page of the chunk cannot be read (EIO): read what can be, page by page.
                pages = []
                for a in range(pos, pos + n, 4096):
                    try:
                        mem.seek(a)
                        pages.append(mem.read(4096))
                    except (OSError, ValueError, OverflowError):
                        pages.append(b"")
                chunk = b"".join(pages)
            found.update(m.group(0).decode() for m in pat.finditer(chunk))
            pos += n
result = {"call": str(r), "found": sorted(found), "method": method}`;
    // In the sandbox (the default) the worker cannot read its own /proc/self/mem, so the
    // program scans every Python object; with CODEMCP_ISOLATION=host it scans its memory.
    for (const isolation of ['sandbox', 'host']) {
      const s = await smoke(h, program, { CODEMCP_LOG: 'trace', CODEMCP_ISOLATION: isolation });
      const res = s.envelope?.result;
      assert.ok(res, s.stdout + s.stderr.slice(-3000));
      assert.match(res.call, /^ok/);
      assert.ok(res.found.includes(`CMXT${'Q'.repeat(40)}`), 'the scan found its own control token');
      assert.deepEqual(res.found.filter((t) => t !== `CMXT${'Q'.repeat(40)}`), [], 'a real token is in the worker');
      assert.ok(s.stderr.includes('t <- POST'), 'the trace log was on');
      assert.ok(!s.stderr.includes(at) && !s.stderr.includes(rt), 'a token is in the trace log');
      assert.equal(res.method, isolation === 'host' ? 'memory' : 'objects');
    }
  });
});
