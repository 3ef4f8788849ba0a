// The prototype ("zygote"): one sandboxed process per gateway with the
// interpreter, runtime and SDK loaded forks every session's worker copy-on-write. Each test
// drives `codemcp start` with real HTTP sessions and looks at the processes from outside.
// In host isolation (CODEMCP_ISOLATION=host) the same cases run where they make sense.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  Client, Proc, ms, sleep, tempDir, waitFor, writeConfig, processTable, nsPids,
  prototypeChain, growingServer, servers,
} from './lib.mjs';

const HOST = process.env.CODEMCP_ISOLATION === 'host';
const SECRET = 'proto-secret-' + Math.random().toString(16).slice(2);


async function gateway(env = {}, mcp = {}) {
  const dir = tempDir('codemcp-proto-');
  const proc = new Proc({ args: ['start', '-p', '0', '--no-auth'], config: writeConfig(dir, mcp), home: dir,
    env: { CODEMCP_WORKERS: '32', CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL: '256', ...env } });
  const found = await waitFor(() => proc.exit || proc.stderr.match(/serving MCP over Streamable HTTP at (\S+)/), ms(20000));
  assert.ok(found && found[1], proc.stderrTail());
  const open = async (name = 'proto') => {
    const client = new Client({ name, version: '0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(found[1])), { timeout: ms(15000) });
    return client;
  };
  return { proc, open, dir };
}

async function attempt(client, code) {
  const r = await client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(60000) });
  assert.equal(r.isError, false, JSON.stringify(r).slice(0, 2000));
  return r.structuredContent.result;
}

/** What a worker tells about itself: its PID namespace and its pid there. */
const WHOAMI = 'import os, sys\nresult = {"ns": os.readlink("/proc/self/ns/pid"), "pid": os.getpid(), ' +
  '"image": id(sys.modules["codemcp_rt.worker_main"])}';

/** The worker process (as we see it) of a session that reported `me` (WHOAMI). */
function workerOf(gw, me) {
  if (HOST) return me.pid;
  for (const p of processTable().values()) {
    if (p.comm !== 'codemcp-worker' || nsPids(p.pid).at(-1) !== 2) continue;
    try {
      if (fs.readlinkSync(`/proc/${p.pid}/ns/pid`) === me.ns) return p.pid;
    } catch { /* not ours to read (not root), or gone */ }
  }
  return 0;
}

/** pid's parent chain up to (not including) the gateway. */
function chain(pid, gw) {
  const t = processTable();
  const out = [];
  for (let p = t.get(pid); p && p.pid !== gw && out.length < 10; p = t.get(p.ppid)) out.push(p.pid);
  return out;
}

const rootOnly = !HOST && process.getuid() !== 0 ? 'reading other processes\' namespaces needs root' : false;

describe('workers forked from the prototype', () => {
  test('20 sessions at once get 20 distinct workers, each forked from the one prototype', { timeout: ms(120000), skip: rootOnly }, async () => {
    const g = await gateway();
    const clients = await Promise.all(Array.from({ length: 20 }, (_, i) => g.open(`s${i}`)));
    const me = await Promise.all(clients.map((c, i) => attempt(c, `v = ${i}\n` + WHOAMI)));
    const proto = prototypeChain(g.proc.pid).at(-1)?.pid;
    assert.ok(proto, 'no prototype under the gateway');
    if (!HOST) assert.equal(new Set(me.map((m) => m.ns)).size, 20, 'two sessions share a PID namespace');
    const pids = me.map((m) => workerOf(g.proc.pid, m));
    assert.equal(new Set(pids).size, 20, `workers: ${pids}`);
    // Copies of one process image: the runtime's module object sits at the same address in
    // every worker (exec'd workers get their own, randomized layout).
    assert.equal(new Set(me.map((m) => m.image)).size, 1, 'the workers are not copies of one prototype');
    for (const pid of pids) {
      const c = chain(pid, g.proc.pid);
      if (HOST) // worker → its session's first process, a child of the gateway (CLONE_PARENT)
        assert.equal(c.length, 2, `worker ${pid}: ${c}`);
      else // worker → its session's PID 1 → the prototype (→ the sandbox's PID 1 → its waiter)
        assert.equal(c[2], proto, `worker ${pid} does not descend from the prototype ${proto}: ${c}`);
    }
    // Each session still has its own variables.
    const vs = await Promise.all(clients.map((c) => attempt(c, 'result = v')));
    assert.deepEqual(vs, Array.from({ length: 20 }, (_, i) => i));
    for (const c of clients) await c.close().catch(() => {});
    await g.proc.kill();
  });

  test('killing one session\'s worker leaves its siblings intact; that session starts over', { timeout: ms(60000), skip: rootOnly }, async () => {
    const g = await gateway();
    const cs = await Promise.all([0, 1, 2].map((i) => g.open(`k${i}`)));
    const me = await Promise.all(cs.map((c, i) => attempt(c, `x = ${i + 10}\n` + WHOAMI)));
    const victim = workerOf(g.proc.pid, me[0]);
    assert.ok(victim > 0);
    process.kill(chain(victim, g.proc.pid)[1], 'SIGKILL'); // the session's PID 1: its whole sandbox
    // The worker dies of that a moment later (PDEATHSIG, or its PID namespace's end): a
    // request sent before then may still be answered by it.
    const gone = () => { try { return fs.readFileSync(`/proc/${victim}/stat`, 'utf8').split(') ')[1][0] === 'Z'; } catch { return true; } };
    assert.ok(await waitFor(gone, ms(10000)), `worker ${victim} outlived its session's PID 1`);
    assert.equal(await attempt(cs[1], 'result = x'), 11);
    assert.equal(await attempt(cs[2], 'result = x'), 12);
    const r = await cs[0].callTool({ name: 'execute_python', arguments: { code: 'result = x' } });
    assert.equal(r.isError, true, 'the killed session kept variables it cannot have kept');
    assert.equal(await attempt(cs[0], 'result = 5'), 5, 'the killed session gets a new worker');
    for (const c of cs) await c.close().catch(() => {});
    await g.proc.kill();
  });

  test('a killed prototype is replaced; live sessions keep running, new ones fork from the new one', { timeout: ms(60000) }, async () => {
    const g = await gateway({ CODEMCP_LOG: 'debug' });
    const a = await g.open('a');
    await attempt(a, 'kept = 7\nresult = 1');
    const first = prototypeChain(g.proc.pid).at(-1)?.pid;
    assert.ok(first, 'no prototype');
    process.kill(first, 'SIGKILL');
    const second = await waitFor(() => {
      const p = prototypeChain(g.proc.pid).at(-1)?.pid;
      return p && p !== first ? p : null;
    }, ms(15000));
    assert.ok(second, 'the prototype was not replaced');
    const kept = await a.callTool({ name: 'execute_python', arguments: { code: 'result = kept' } });
    assert.equal(kept.structuredContent?.result, 7, `a session forked from the dead prototype lost its worker: ${JSON.stringify(kept)}\n${g.proc.stderrTail()}`);
    // The first new session may take the warm spare forked before the kill; the next one is
    // forked from the new prototype.
    const b = await g.open('b');
    await attempt(b, 'result = 1');
    const c = await g.open('c');
    const me = await attempt(c, WHOAMI);
    if (!rootOnly && !HOST) {
      const ch = chain(workerOf(g.proc.pid, me), g.proc.pid);
      assert.equal(ch[2], second, `the new session does not descend from the new prototype ${second} (first ${first}): ${ch} ${JSON.stringify(ch.map((p) => [p, nsPids(p), processTable().get(p)?.comm]))}\n${g.proc.stderrTail()}`);
    }
    assert.ok(g.proc.exit === null, 'the gateway died');
    for (const x of [a, b, c]) await x.close().catch(() => {});
    await g.proc.kill();
  });

  test('after an SDK reload the prototype has the new SDK, and a new session sees it', { timeout: ms(60000) }, async () => {
    const dir = tempDir('codemcp-proto-grow-');
    const g = await gateway({ CODEMCP_LOG: 'debug' }, { grow: growingServer(dir) });
    const a = await g.open('a');
    assert.equal(await attempt(a, 'result = int(str(grow_grow(n=3)))'), 3);
    const VERSION = 'from codemcp_rt import sdk\nresult = [sdk.current().version, sorted(n for n in globals() if n.startswith("grow_extra"))]';
    // Live workers get the reload as before; its version is what the prototype must reach.
    let v = null;
    await waitFor(async () => {
      const [ver, extra] = await attempt(a, VERSION);
      if (extra.length === 3) v = ver;
      return v !== null;
    }, ms(15000), 200);
    assert.ok(v !== null, 'the live session never got the grown SDK');
    const loaded = await waitFor(() => g.proc.stderr.includes(`prototype has SDK version ${v}`), ms(15000));
    assert.ok(loaded, `the prototype never loaded SDK version ${v}:\n${g.proc.stderrTail()}`);
    const b = await g.open('b');
    assert.deepEqual(await attempt(b, VERSION), [v, ['grow_extra1', 'grow_extra2', 'grow_extra3']]);
    for (const c of [a, b]) await c.close().catch(() => {});
    await g.proc.kill();
  });

  test('once idle, the prototype builds search\'s tables and the SDK\'s index; sessions forked later share them', { timeout: ms(60000) }, async () => {
    const g = await gateway({ CODEMCP_LOG: 'debug' }, { everything: servers.everything() });
    const a = await g.open('a');
    // The SDK a runs with: a prototype started before the upstreams settled may have warmed
    // an earlier, empty one first (CODEMCP_PROTOTYPE_EARLY).
    const va = await attempt(a, 'from codemcp_rt import sdk\nresult = sdk.current().version');
    const warmed = await waitFor(() => g.proc.stderr.includes(`search warmed (SDK version ${va})`), ms(15000));
    assert.ok(warmed, `the prototype never warmed search for SDK version ${va}:\n${g.proc.stderrTail()}`);
    // b takes the warm spare (forked before the warm-up, maybe); the spare forked for the
    // next session, c, starts with the index of its snapshot (not a copy: the same object).
    const b = await g.open('b');
    assert.equal(await attempt(b, 'result = 1 + 1'), 2);
    const c = await g.open('c');
    const SHARED = 'import sys\nfrom codemcp_rt import discovery, sdk\n' +
      'result = ["codemcp_rt.search" in sys.modules, discovery._index_for[0] is sdk.current(), ' +
      'len(sdk.current().functions) > 0, sdk.current().version]';
    const [imported, indexed, some, version] = await attempt(c, SHARED);
    assert.deepEqual([imported, indexed, some], [true, true, true]);
    assert.ok(g.proc.stderr.includes(`search warmed (SDK version ${version})`), g.proc.stderrTail());
    const found = await attempt(c, 'result = [f["name"] for f in search_tools("add two numbers")][:3]');
    assert.ok(found.some((n) => n.startsWith('everything_')), JSON.stringify(found));
    for (const s of [a, b, c]) await s.close().catch(() => {});
    await g.proc.kill();
  });
});

/** The inodes ("socket:[…]", "pipe:[…]", …) behind pid's descriptors, as root sees them. */
function fdTargets(pid) {
  const out = new Set();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try { out.add(fs.readlinkSync(`/proc/${pid}/fd/${fd}`)); } catch { /* closed meanwhile */ }
  }
  return out;
}

describe('what a forked worker inherits', { skip: HOST ? 'host isolation has no sandbox' : rootOnly }, () => {
  // A door would be a descriptor the fork passed on: the prototype's channel to the gateway
  // (agent code could then ask for forks or pose as the prototype), the guard's pipe, another
  // session's pipes. The worker may hold its own stdio, its one control socket (fd 3), its
  // status pipe and what the runtime opens itself.
  test('only its own descriptors: one socket (fd 3), nothing shared with the prototype or the guard', { timeout: ms(60000) }, async () => {
    const g = await gateway();
    const a = await g.open('fa');
    const b = await g.open('fb');
    const DESCRIPTORS = `import os
def target(fd):
    try:
        return os.readlink("/proc/self/fd/" + fd)
    except OSError:
        return None  # the listdir's own descriptor, closed by now
fds = {fd: target(fd) for fd in os.listdir("/proc/self/fd")}
result = {"fds": {k: v for k, v in fds.items() if v}, "ns": os.readlink("/proc/self/ns/pid"), "pid": os.getpid()}`;
    const ra = await attempt(a, DESCRIPTORS);
    const rb = await attempt(b, DESCRIPTORS);
    const proto = prototypeChain(g.proc.pid).at(-1)?.pid;
    assert.ok(proto, 'no prototype under the gateway');
    const guard = [...processTable().values()].find((p) => p.ppid === g.proc.pid && p.comm === 'codemcp-guard');
    const unique = (t) => /^(socket|pipe):\[\d+\]$/.test(t); // anon_inode names are not identities
    const protoFds = fdTargets(proto);
    const guardFds = guard ? fdTargets(guard.pid) : new Set();
    for (const r of [ra, rb]) {
      const sockets = Object.entries(r.fds).filter(([, t]) => t.startsWith('socket:')).map(([fd]) => fd);
      assert.deepEqual(sockets, ['3'], `sockets: ${JSON.stringify(r.fds)}`);
      const shared = Object.values(r.fds).filter((t) => unique(t) && (protoFds.has(t) || guardFds.has(t)));
      assert.deepEqual(shared, [], `inherited from the prototype or the guard: ${JSON.stringify(r.fds)}`);
    }
    const common = Object.values(ra.fds).filter((t) => unique(t) && Object.values(rb.fds).includes(t));
    assert.deepEqual(common, [], 'two sessions hold the same pipe or socket');
    for (const c of [a, b]) await c.close().catch(() => {});
    await g.proc.kill();
  });
});

describe('siblings forked from one prototype', { skip: HOST ? 'host isolation has no sandbox' : false }, () => {
  test('cannot see, signal, trace or read each other: processes, /proc, memory, /tmp, SysV IPC', { timeout: ms(60000) }, async () => {
    const g = await gateway();
    const a = await g.open('a');
    const b = await g.open('b');
    const meA = await attempt(a, `
import os, ctypes
secret = ${JSON.stringify(SECRET)}
open("/tmp/secret.txt", "w").write(secret)
libc = ctypes.CDLL(None, use_errno=True)
shm = libc.shmget(0x5eed, 4096, 0o1666)  # IPC_CREAT | 0666
result = {"ns": os.readlink("/proc/self/ns/pid"), "pid": os.getpid(), "shm": shm}`);
    // SysV IPC is refused in the sandbox (its memory is not counted by RLIMIT_AS, see
    // tenants.test.mjs); each session has its own IPC namespace besides.
    assert.equal(meA.shm, -1, 'session A made a SysV segment');
    const r = await attempt(b, `
import os, ctypes, errno, signal
libc = ctypes.CDLL(None, use_errno=True)
needle = ${JSON.stringify(SECRET)}.encode()
found = []
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
own = sorted(int(t) for p in pids for t in os.listdir("/proc/%d/task" % p))  # threads answer kill() too
alive = []
for pid in range(1, 4097):  # guessed pids: only its own sandbox answers
    try:
        os.kill(pid, 0)
        alive.append(pid)
    except ProcessLookupError:
        pass
    except PermissionError:
        alive.append(pid)
traced = []
for pid in range(3, 200):
    if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
        traced.append(pid)
for p in pids:
    if p == os.getpid():
        continue
    for f in ("mem", "environ", "cmdline"):
        try:
            with open("/proc/%d/%s" % (p, f), "rb") as fh:
                if needle in fh.read(1 << 20):
                    found.append("/proc/%d/%s" % (p, f))
        except OSError:
            pass
    try:
        for fd in os.listdir("/proc/%d/fd" % p):
            found.append("/proc/%d/fd/%s" % (p, fd))
    except OSError:
        pass
for root, dirs, files in os.walk("/tmp"):
    for n in files:
        try:
            if needle in open(os.path.join(root, n), "rb").read():
                found.append(os.path.join(root, n))
        except OSError:
            pass
shm = libc.shmget(0x5eed, 4096, 0o666)
result = {"pids": pids, "own": own, "alive": alive, "traced": traced, "found": found, "shm": shm,
          "shm_errno": ctypes.get_errno(), "ns": os.readlink("/proc/self/ns/pid"), "pid": os.getpid()}`);
    assert.deepEqual(r.pids, [1, 2], 'session B sees processes beyond its own sandbox');
    assert.deepEqual(r.alive, r.own, 'session B can signal a process outside its sandbox');
    assert.ok(r.own.length < 10, `${r.own}`);
    assert.deepEqual(r.traced, []);
    assert.deepEqual(r.found, []);
    assert.equal(r.shm, -1, 'session B reached session A\'s SysV segment');
    assert.equal(r.shm_errno, 38); // ENOSYS: refused (ENOENT, its own IPC namespace, behind)
    assert.notEqual(r.ns, meA.ns);
    if (!rootOnly) { // and they are siblings: forked from the same prototype
      const ca = chain(workerOf(g.proc.pid, meA), g.proc.pid);
      const cb = chain(workerOf(g.proc.pid, r), g.proc.pid);
      assert.equal(ca[2], cb[2], `not siblings: ${ca} / ${cb}`);
      assert.equal(ca[2], prototypeChain(g.proc.pid).at(-1)?.pid);
    }
    assert.equal(await attempt(a, 'result = secret'), SECRET, 'session A keeps its variables');
    for (const c of [a, b]) await c.close().catch(() => {});
    await g.proc.kill();
  });
});
