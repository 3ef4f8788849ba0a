// Per-user kernel budgets kept apart: a `codemcp start` run by an unprivileged user that has a
// subordinate id range (/etc/subuid, /etc/subgid) and newuidmap gives each session a uid of its
// own outside, so one session that fills a budget the kernel keeps per user (here pipe buffer
// pages, fs.pipe-user-pages-soft) leaves the gateway's user and the other session theirs. Without
// a range (the fallback) the gateway still serves, and says once that those budgets are shared.
// Needs root (to create the user and its range); skipped otherwise, and when setpriv or
// newuidmap (package uidmap) is absent.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CODEMCP_BIN, Client, Proc, PYTHON, ms, tempDir, waitFor, writeConfig } from './lib.mjs';
import { FILL_PIPES, PIPE_PROBE } from '../fixtures/pipe_budget.mjs';

const TOKEN = 'subids-token-0123456789abcdef';
const RANGE = 65536;
const WHY_NOT = process.getuid() !== 0 ? 'needs root to create a user and its subordinate ids'
  : !fs.existsSync('/usr/bin/newuidmap') ? 'newuidmap is not installed (package uidmap)'
    : spawnSync('setpriv', ['--version']).status !== 0 ? 'setpriv is not installed' : null;

/** A user of its own for this file, with a range of subordinate ids unless bare. */
function makeUser(suffix, bare) { // suffix: r, f, o, p, g or n (picks the range)
  // Ranges of this file: 7 per process, all below CODEMCP_ROOT_UID_BASE's 4000000000.
  const name = `cmcpsub${suffix}${process.pid % 100000}`;
  spawnSync('userdel', [name]);
  const add = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', name], { encoding: 'utf8' });
  assert.equal(add.status, 0, `useradd: ${add.stderr}`);
  const uid = Number(spawnSync('id', ['-u', name], { encoding: 'utf8' }).stdout.trim());
  const gid = Number(spawnSync('id', ['-g', name], { encoding: 'utf8' }).stdout.trim());
  const start = 1000000000 + ((process.pid % 6000) * 7 + 'rfopgn'.indexOf(suffix)) * RANGE;
  if (!bare) {
    const ids = `${start}-${start + RANGE - 1}`;
    const mod = spawnSync('usermod', ['--add-subuids', ids, '--add-subgids', ids, name], { encoding: 'utf8' });
    assert.equal(mod.status, 0, `usermod: ${mod.stderr}`);
  }
  return { name, uid, gid, start, remove: () => spawnSync('userdel', [name]) };
}

/** `codemcp start` as user u; resolves {proc, url}. wrap: the command it runs under (default:
 *  setpriv as u; false: none). */
async function gatewayAs(u, env = {}, shared = false, wrap = null) {
  const home = tempDir('codemcp-subids-', { shared });
  const tokens = path.join(home, 'tokens');
  fs.writeFileSync(tokens, `alice ${TOKEN}\n`, { mode: 0o600 });
  const config = writeConfig(home, {});
  for (const f of [home, tokens, config]) fs.chownSync(f, u.uid, u.gid);
  const proc = new Proc({ args: ['start', '-p', '0'], config, home, shared,
    wrapPrefix: wrap ?? ['setpriv', `--reuid=${u.uid}`, `--regid=${u.gid}`, '--clear-groups', '--'],
    env: { CODEMCP_HTTP_TOKENS_FILE: tokens, CODEMCP_WORKERS: '4', CODEMCP_LOG: 'info', ...env } });
  const m = await waitFor(() => proc.exit || proc.stderr.match(/serving MCP over Streamable HTTP at (\S+)/), ms(30000));
  assert.ok(m && m[1], `codemcp start did not come up:\n${proc.stderrTail()}`);
  return { proc, url: m[1] };
}

async function stop(gw) {
  if (gw && !gw.proc.exit) {
    gw.proc.child.kill('SIGTERM');
    await gw.proc.waitExit(ms(15000));
  }
}

async function session(url) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
  });
  const end = () => transport.terminateSession().catch(() => {});
  const client = new Client({ name: 'subids-e2e', version: '0' });
  await client.connect(transport, { timeout: ms(15000) });
  const run = async (code) => {
    const r = await client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(60000) });
    assert.equal(r.isError, false, JSON.stringify(r).slice(0, 3000));
    return r.structuredContent.result;
  };
  return { run, end, close: () => client.close().catch(() => {}) };
}


function hostPipe(u) {
  const r = spawnSync(PYTHON, ['-c', PIPE_PROBE + 'print(size, grow)'], { uid: u.uid, gid: u.gid, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const [size, grow] = r.stdout.trim().split(' ');
  return { size: Number(size), grow };
}

/** Kernel uids of every process on the host inside [start, start + count). */
function uidsInRange(start, count = RANGE) {
  const seen = new Set();
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let st;
    try { st = fs.readFileSync(`/proc/${pid}/status`, 'utf8'); } catch { continue; }
    const uid = Number(st.match(/^Uid:\s+\d+\s+(\d+)/m)?.[1]);
    if (uid >= start && uid < start + count) seen.add(uid);
  }
  return seen;
}

/** On gateway gw with one worker slot and sessions' kernel uids from start: the second session
 *  can only have the slot once the first one's processes are gone, and what the kernel still
 *  charged to the first's uid must not become the second's. */
async function nextSessionOtherUid(gw, start, span = 1024) {
  let a, b;
  try {
    a = await session(gw.url);
    assert.equal(await a.run('result = 1'), 1);
    const first = uidsInRange(start, span);
    assert.equal(first.size, 1, `one live session, its uids: ${[...first]}`);
    await a.end();
    b = await session(gw.url);
    assert.equal(await b.run('result = 2'), 2);
    const second = uidsInRange(start, span);
    assert.equal(second.size, 1, `one live session, its uids: ${[...second]}`);
    assert.ok(![...second].some((u) => first.has(u)), `the slot's next session runs as ${[...second]}, the uid of the session before`);
  } finally {
    await a?.close();
    await b?.close();
  }
}

/** Two gateways of one user over one range, each started by start(), a session on each: the
 *  two sessions run as two uids (from start, within a few blocks), and the second gateway
 *  names the block it took, not the first one. */
async function twoGatewaysApart(start, rangeStart) {
  const gws = [], sessions = [];
  try {
    for (let i = 0; i < 2; i++) gws.push(await start());
    for (const gw of gws) sessions.push(await session(gw.url));
    for (const s of sessions) assert.equal(await s.run('result = 1'), 1);
    const uids = uidsInRange(rangeStart, RANGE / 8);
    assert.equal(uids.size, 2, `two gateways' sessions, their uids: ${[...uids]}\n${gws.map((g) => g.proc.stderrTail()).join('\n')}`);
    assert.match(gws[1].proc.stderr, /sandbox ids: this gateway's sessions take uids \d+-\d+ \(block [1-9]/, gws[1].proc.stderrTail());
  } finally {
    for (const s of sessions) await s.close();
    for (const gw of gws) await stop(gw);
  }
}

/** Two sessions on the gateway start(t) brings up (it may set t.u, a user removed after):
 *  t.gw, t.a and t.b for the tests of the enclosing describe. */
function twoSessions(start) {
  const t = {};
  before(async () => {
    t.gw = await start(t);
    t.a = await session(t.gw.url);
    t.b = await session(t.gw.url);
  });
  after(async () => {
    await t.a?.close();
    await t.b?.close();
    await stop(t.gw);
    t.u?.remove();
  });
  return t;
}

describe('an unprivileged gateway with a subordinate id range', { skip: WHY_NOT ?? false }, () => {
  const t = twoSessions((own) => {
    own.u = makeUser('r', false);
    return gatewayAs(own.u, {}, true);
  });

  test('says which mode is in effect: in the log and in `codemcp settings`', () => {
    assert.match(t.gw.proc.stderr, /sandbox ids: a uid of its own per session/, t.gw.proc.stderrTail());
    const asUser = (env) => spawnSync('setpriv', [`--reuid=${t.u.uid}`, `--regid=${t.u.gid}`, '--clear-groups', '--', CODEMCP_BIN, 'settings'],
      { encoding: 'utf8', env: { PATH: process.env.PATH, ...env } }).stdout;
    const first = t.u.start, last = t.u.start + RANGE - 1;
    assert.match(asUser({}), new RegExp(`^# sandbox ids: a uid of its own per session: ${first}-${last} .*subordinate id range$`, 'm'));
    assert.match(asUser({ CODEMCP_SANDBOX_SUBIDS: 'false' }), /^# sandbox ids: every session runs as the gateway's own user outside \(CODEMCP_SANDBOX_SUBIDS=false\)/m);
  });

  test('each session runs as a uid of its own from the range, with no capability', async () => {
    // The prototype keeps CAP_SETUID and CAP_SETGID (in its own namespace) to map sessions: none
    // of it reaches a session's worker.
    const who = `import os
st = dict(l.split(':\\t', 1) for l in open('/proc/self/status').read().splitlines() if ':\\t' in l)
result = [os.getuid(), os.getgid(), st['CapEff'].strip(), st['CapPrm'].strip(), st['CapBnd'].strip()]`;
    const zero = '0000000000000000';
    assert.deepEqual(await t.a.run(who), [1000, 1000, zero, zero, zero]);
    assert.deepEqual(await t.b.run(who), [1000, 1000, zero, zero, zero]);
    const uids = uidsInRange(t.u.start);
    assert.ok(uids.size >= 2, `two live sessions, kernel uids in the range: ${[...uids]}`);
  });

  test('a session that fills the per-user pipe budget leaves the gateway\'s user and the other session theirs', async () => {
    assert.deepEqual(hostPipe(t.u), { size: 65536, grow: 'ok' }, 'the user starts with its budget');
    const took = await t.a.run(FILL_PIPES);
    try {
      assert.ok(took >= 32, `the session took only ${took} MiB of pipe buffers`);
      assert.equal(await t.a.run(PIPE_PROBE + 'result = grow'), 'EPERM', 'the filling session is held to its own budget');
      assert.equal(hostPipe(t.u).grow, 'ok', `the gateway's user lost its pipe budget to a session (${took} MiB taken)`);
      assert.equal(await t.b.run(PIPE_PROBE + 'result = grow'), 'ok', 'the other session lost its pipe budget');
    } finally {
      await t.a.run('import os\nfor fd in held:\n    os.close(fd)\nheld = []\nresult = 1');
    }
  });
});

describe('an unprivileged gateway with a subordinate id range and one worker slot', { skip: WHY_NOT ?? false }, () => {
  test('a slot\'s next session runs as another uid from the range than the session before it', async () => {
    const u = makeUser('n', false);
    let gw;
    try {
      gw = await gatewayAs(u, { CODEMCP_WORKERS: '1' }, true);
      await nextSessionOtherUid(gw, u.start);
    } finally {
      await stop(gw);
      u.remove();
    }
  });

  test('two gateways of the user: their sessions run as uids apart', async () => {
    // They meet in the user's runtime directory, as a user's gateways under one login do.
    const u = makeUser('n', false);
    const xdg = runtimeDirOf(u);
    try {
      await twoGatewaysApart(() => gatewayAs(u, { CODEMCP_WORKERS: '1', XDG_RUNTIME_DIR: xdg }, true), u.start);
    } finally {
      u.remove();
    }
  });

  test('every block of the range held by other gateways of the user: the gateway says so, and its sessions still run', async () => {
    const u = makeUser('n', false);
    const xdg = runtimeDirOf(u);
    // Another process of the user holds all 64 blocks' locks, as 64 live gateways would.
    const holder = spawn(PYTHON, ['-c', 'import fcntl, os, sys\n' +
      `d = os.path.join(${JSON.stringify(xdg)}, 'codemcp')\nos.makedirs(d, mode=0o700, exist_ok=True)\n` +
      `held = [open(os.path.join(d, 'ids-${u.start}-%d.lock' % b), 'w') for b in range(64)]\n` +
      'for f in held:\n    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n' +
      "print('held', flush=True)\nsys.stdin.read()\n"], { uid: u.uid, gid: u.gid, stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      await new Promise((resolve, reject) => {
        holder.stdout.on('data', (d) => String(d).includes('held') && resolve());
        holder.on('exit', (c) => reject(new Error(`the lock holder exited (${c})`)));
      });
      await warnsAndServes(u, xdg, /sandbox ids: all 64 blocks of the id range are held by other gateways of this user/);
    } finally {
      holder.kill('SIGKILL');
      u.remove();
    }
  });

  test('no private directory to share the range out in: the gateway says so, and its sessions still run', async () => {
    const u = makeUser('n', false);
    const xdg = runtimeDirOf(u);
    fs.mkdirSync(path.join(xdg, 'codemcp'), { mode: 0o755 }); // root's: not the user's to write
    try {
      await warnsAndServes(u, xdg, /sandbox ids: no private directory to share the id range out with other gateways of this user in/);
    } finally {
      u.remove();
    }
  });
});

/** A runtime directory (XDG_RUNTIME_DIR) of user u's own, as a login gives it. */
function runtimeDirOf(u) {
  const xdg = tempDir('codemcp-subids-xdg-', { shared: true });
  fs.chownSync(xdg, u.uid, u.gid);
  fs.chmodSync(xdg, 0o700);
  return xdg;
}

/** A gateway of u meeting others in runtime directory xdg logs `warning` and still runs a
 *  session as an id of u's range. */
async function warnsAndServes(u, xdg, warning) {
  let gw, s;
  try {
    gw = await gatewayAs(u, { CODEMCP_WORKERS: '1', XDG_RUNTIME_DIR: xdg }, true);
    assert.match(gw.proc.stderr, warning, gw.proc.stderrTail());
    s = await session(gw.url);
    assert.equal(await s.run('result = 1'), 1);
    assert.equal(uidsInRange(u.start).size, 1, 'the session runs as an id of the range');
  } finally {
    await s?.close();
    await stop(gw);
  }
}

/** One session on `codemcp start` run by a fresh user (makeUser(suffix, bare)) with env: runs
 *  fn(u, gw, session), then stops it all and removes the user. */
async function oneSessionAs(suffix, bare, env, fn) {
  const u = makeUser(suffix, bare);
  let gw, s;
  try {
    gw = await gatewayAs(u, env);
    s = await session(gw.url);
    await fn(u, gw, s);
  } finally {
    await s?.close();
    await stop(gw);
    u.remove();
  }
}

// A root gateway maps sessions itself, from CODEMCP_ROOT_UID_BASE (here a base of this file's).
describe('a root gateway: sessions as CODEMCP_ROOT_UID_BASE + a place of their own', { skip: process.getuid() !== 0 ? 'needs root' : false }, () => {
  const base = 1000000000 + ((process.pid % 6000) * 7 + 6) * RANGE;
  const root = { uid: 0, gid: 0 };
  const t = twoSessions(() => gatewayAs(root, { CODEMCP_ROOT_UID_BASE: String(base) }, true, false));

  test('two sessions, two ids of their own; one filling the per-user pipe budget leaves the other its own', async () => {
    assert.match(t.gw.proc.stderr, /sandbox ids: a uid of its own per session: \d+-\d+ .*from CODEMCP_ROOT_UID_BASE/, t.gw.proc.stderrTail());
    const grow = PIPE_PROBE + 'result = grow';
    assert.equal(await t.a.run(grow), 'ok');
    assert.equal(await t.b.run(grow), 'ok');
    const uids = uidsInRange(base); // the two sessions', and a warm spare's
    assert.ok(uids.size >= 2, `two live sessions, kernel uids in the range: ${[...uids]}`);
    const took = await t.a.run(FILL_PIPES);
    try {
      assert.equal(await t.a.run(grow), 'EPERM', 'the filling session is held to its own budget');
      assert.equal(await t.b.run(grow), 'ok', `the other session lost its pipe budget (${took} MiB taken)`);
    } finally {
      await t.a.run('import os\nfor fd in held:\n    os.close(fd)\nheld = []\nresult = 1');
    }
  });

  test('two gateways with one range: their sessions run as uids apart', async () => {
    // Both read the same CODEMCP_ROOT_UID_BASE; root gateways meet in /run/codemcp-ids.
    const base3 = base + RANGE / 4;
    await twoGatewaysApart(() => gatewayAs(root, { CODEMCP_ROOT_UID_BASE: String(base3), CODEMCP_WORKERS: '1' }, true, false), base3);
  });

  test('a slot\'s next session runs as another uid than the session before it', async () => {
    const base2 = base + RANGE / 2; // apart from the other gateway's few ids
    const gw = await gatewayAs(root, { CODEMCP_ROOT_UID_BASE: String(base2), CODEMCP_WORKERS: '1' }, true, false);
    try {
      await nextSessionOtherUid(gw, base2);
    } finally {
      await stop(gw);
    }
  });
});

describe('the fallbacks: every worker as the gateway\'s user', { skip: WHY_NOT ?? false }, () => {
  test('the gateway serves and warns once that per-user budgets are shared', () => oneSessionAs('f', true, {}, async (u, gw, s) => {
    assert.equal(await s.run('import os\nresult = os.getuid()'), 1000);
    const warned = gw.proc.stderr.match(/sandbox ids: every session runs as the gateway's own user outside \(\S+ has no range in \/etc\/subuid/g) || [];
    assert.equal(warned.length, 1, gw.proc.stderrTail());
  }));

  test('CODEMCP_PROTOTYPE=off: exec\'d workers run, as the gateway\'s user, and the log says so', () => oneSessionAs('p', false, { CODEMCP_PROTOTYPE: 'off' }, async (u, gw, s) => {
    assert.equal(await s.run('import os\nresult = os.getuid()'), 1000);
    assert.match(gw.proc.stderr, /sandbox ids: every worker runs as the gateway's own user outside \(CODEMCP_PROTOTYPE=off/);
    assert.equal(uidsInRange(u.start).size, 0, 'an exec\'d worker ran as a subordinate uid');
  }));

  test('CODEMCP_SANDBOX_SUBIDS=false keeps sessions on the gateway\'s user even with a range', () => oneSessionAs('o', false, { CODEMCP_SANDBOX_SUBIDS: 'false' }, async (u, gw, s) => {
    assert.equal(await s.run('result = 1'), 1);
    assert.match(gw.proc.stderr, /sandbox ids: every session runs as the gateway's own user outside \(CODEMCP_SANDBOX_SUBIDS=false\)/);
    assert.equal(uidsInRange(u.start).size, 0, 'a session ran as a subordinate uid');
  }));
});

// A gateway started the usual way (login, su, systemd's User=) holds its user's groups as
// supplementary groups, its own primary group among them. A session with a uid of its own must
// not carry them: they are kernel ids, honoured outside every namespace, so a session would read
// what the gateway's group may read in a CODEMCP_SANDBOX_RO path (a 0640 file, a 0750 directory).
describe('an unprivileged gateway with supplementary groups and a range', { skip: WHY_NOT ?? false }, () => {
  test('a session carries none of the gateway\'s groups: a group-readable file stays closed', async () => {
    const u = makeUser('g', false);
    let gw, s;
    try {
      const shared = tempDir('codemcp-subids-ro-');
      fs.chmodSync(shared, 0o755);
      const priv = path.join(shared, 'team');
      fs.mkdirSync(priv, { mode: 0o750 });
      fs.writeFileSync(path.join(priv, 'secret'), 'group only\n', { mode: 0o640 });
      for (const f of [priv, path.join(priv, 'secret')]) fs.chownSync(f, u.uid, u.gid);
      gw = await gatewayAs(u, { CODEMCP_SANDBOX_RO: priv }, false,
        ['setpriv', `--reuid=${u.uid}`, `--regid=${u.gid}`, `--groups=${u.gid}`, '--']);
      s = await session(gw.url);
      const probe = `import os
try:
    open(${JSON.stringify(path.join(priv, 'secret'))}).read()
    opened = 'read'
except PermissionError:
    opened = 'EACCES'
result = [os.getgroups(), opened]`;
      assert.deepEqual(await s.run(probe), [[], 'EACCES']);
    } finally {
      await s?.close();
      await stop(gw);
      u.remove();
    }
  });
});
