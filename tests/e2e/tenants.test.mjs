// Sessions kept apart by the kernel, and runs kept apart in time. Hostile agent code in one
// session of a shared `codemcp start` (two principals, alice and bob) tries to reach, slow,
// watch, signal or starve the other session, the prototype they are both forked from, and the
// gateway's own user; and a run tries to leave code running into the next run. Every wall
// must hold without Landlock: meson runs this file twice, once as the kernel allows and once
// with CODEMCP_SANDBOX_LANDLOCK_ABI_MAX=2 (what Linux 6.1 has: no signal or socket scoping).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  Client, connectClient, tempDir, writeConfig, servers, ms, sleep, prototypeChain, sharedHttpGateway,
} from './lib.mjs';

const CAP = process.env.CODEMCP_SANDBOX_LANDLOCK_ABI_MAX;
const TA = 'alice-tenant-token-0123456789', TB = 'bob-tenant-token-0123456789';

async function session(url, token) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'tenants-e2e', version: '0' });
  await client.connect(transport, { timeout: ms(15000) });
  return { client, close: () => client.close().catch(() => {}) };
}

function run(s, code, extra = {}) {
  return s.client.callTool({ name: 'execute_python', arguments: { code, ...extra } }, undefined,
    { timeout: ms(60000) });
}

async function attempt(s, code, extra) {
  const r = await run(s, code, extra);
  assert.equal(r.isError, false, JSON.stringify(r).slice(0, 3000));
  return r.structuredContent.result;
}

/** Python: attempt(fn) → "ok:<value>" or "err:<errno name>"; sys_call(nr, *args) likewise. */
const PRELUDE = `
import os, errno, ctypes, signal, struct, fcntl, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def attempt(fn):
    try:
        v = fn()
        return "ok:" + (v if isinstance(v, str) else repr(v))[:200]
    except OSError as e:
        return "err:" + errno.errorcode.get(e.errno, str(e.errno))
def sys_call(nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno()
    return "ok:%d" % r if r >= 0 else "err:" + errno.errorcode.get(e, str(e))
`;

/** The nice value and state of a process, from outside. */
function niceAndState(pid) {
  const st = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
  return { state: f[0], nice: Number(f[16]) };
}

/** Runs a Python snippet on the host as the gateway's own user; its stdout, trimmed. */
function hostPython(code) {
  return execFileSync('python3', ['-c', code], { encoding: 'utf8' }).trim();
}

const HOST_INOTIFY = `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
print("ok" if fd >= 0 else "err:%d" % ctypes.get_errno())`;

// sigqueue, not kill: kill() of a real-time signal over the limit still "succeeds" (the
// signal is then merged); sigqueue answers EAGAIN.
const HOST_SIGQUEUE = `
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGRTMIN})
r = libc.sigqueue(os.getpid(), signal.SIGRTMIN, ctypes.c_void_p(0))
print("ok" if r == 0 else "err:%d" % ctypes.get_errno())
signal.signal(signal.SIGRTMIN, signal.SIG_IGN)`;

describe(`two principals on codemcp start (Landlock ABI ${CAP ?? 'as the kernel has'})`, () => {
  const gw = sharedHttpGateway({ prefix: 'codemcp-tenants-', tokens: { alice: TA, bob: TB },
    env: { CODEMCP_WORKERS: '4' } });
  let alice, bob;

  before(async () => {
    alice = await session(gw.url, TA);
    bob = await session(gw.url, TB);
    await attempt(alice, 'result = 1');
    assert.equal(await attempt(bob, 'kept = "bob-was-here"\nresult = kept'), 'bob-was-here');
  });
  after(async () => {
    for (const s of [alice, bob]) await s?.close();
  });

  async function bobIsUnharmed(what) {
    assert.equal(await attempt(bob, 'result = kept'), 'bob-was-here', `${what}: bob's session lost its worker`);
  }

  function prototype() {
    const p = prototypeChain(gw.proc.pid).at(-1);
    assert.ok(p, 'no prototype');
    return p.pid;
  }

  test('each session is a session and a process group of its own, and cannot join another', async () => {
    const r = await attempt(alice, PRELUDE + `
result = {"pgrp": os.getpgrp(), "sid": os.getsid(0),
          # a group is named by a pid of the caller's namespace: no other session's is there
          "join": [attempt(lambda g=g: os.setpgid(0, g)) for g in (0x7fff, 3, 100)]}`);
    // 0: the group belongs to a process outside the session's PID namespace (the prototype's)
    assert.equal(r.pgrp, 1, 'the session shares its process group with processes outside it');
    // 0 likewise: the session leader is outside the namespace (the gateway's terminal session)
    assert.equal(r.sid, 1, 'the session shares its kernel session with processes outside it');
    assert.deepEqual(r.join, ['err:EPERM', 'err:EPERM', 'err:EPERM']);
  });

  test('setpriority and ioprio_set on its own process group reach no other session nor the prototype', async () => {
    const proto = prototype();
    const base = niceAndState(gw.proc.pid).nice; // the tests may run under nice
    const r = await attempt(alice, PRELUDE + `
result = {"nice": attempt(lambda: os.setpriority(os.PRIO_PGRP, 0, 19)),
          # ioprio_set(IOPRIO_WHO_PGRP, 0, IOPRIO_CLASS_IDLE << 13)
          "ioprio": sys_call(251, 2, 0, 3 << 13),
          # every process of its uid: only those in its own PID namespace
          "user": attempt(lambda: os.setpriority(os.PRIO_USER, os.getuid(), 19)),
          "mine": os.getpriority(os.PRIO_PROCESS, 0)}`);
    assert.equal(r.mine, 19, `the attack itself failed: ${JSON.stringify(r)}`);
    assert.equal(niceAndState(proto).nice, base, 'the prototype was reniced: every later session starts slowed');
    // ioprio_get(IOPRIO_WHO_PROCESS, 0): bob's own I/O class
    const b = await attempt(bob, PRELUDE + 'result = [os.getpriority(os.PRIO_PROCESS, 0), sys_call(252, 1, 0)]');
    assert.equal(b[0], base, 'bob\'s worker was reniced by alice');
    assert.notEqual(b[1], `ok:${3 << 13}`, 'bob\'s worker was put in the idle I/O class by alice');
    const carol = await session(gw.url, TA); // a session forked after the attack
    try {
      assert.equal(await attempt(carol, 'import os\nresult = os.getpriority(os.PRIO_PROCESS, 0)'), base,
        'a new session starts reniced');
    } finally {
      await carol.close();
    }
    await bobIsUnharmed('renice');
  });

  test('kill(0) and killpg(0) end or stop only the session\'s own processes', async () => {
    const proto = prototype();
    const cases = {
      'kill(0, SIGKILL)': 'os.kill(0, signal.SIGKILL)',
      'killpg(0, SIGSTOP) from a child': 'os.fork() or (os.killpg(0, signal.SIGSTOP), os._exit(0))\ntime.sleep(5)',
      'kill(-1, SIGKILL)': 'os.kill(-1, signal.SIGKILL)',
    };
    for (const [what, code] of Object.entries(cases)) {
      await run(alice, PRELUDE + code + '\nresult = 1', { timeout_ms: 2000 }); // may well die
      assert.ok(prototypeChain(gw.proc.pid).at(-1)?.pid === proto, `${what}: the prototype died`);
      assert.notEqual(niceAndState(proto).state, 'T', `${what}: the prototype was stopped`);
      await bobIsUnharmed(what);
      assert.equal(await attempt(alice, 'result = 2'), 2, `${what}: alice's session did not recover`);
    }
    const fresh = await session(gw.url, TB);
    try {
      assert.equal(await attempt(fresh, 'result = 3'), 3, 'a new session cannot start');
    } finally {
      await fresh.close();
    }
  });

  test('file locks on the shared read-only files are no channel', async () => {
    // Every sandbox binds the same host files: a lock one session holds another would see.
    const LOCKS = PRELUDE + `
def lock_all(held):
    out = {}
    for p in ("/etc/ld.so.cache", "/dev/null", os.__file__):
        f = open(p, "rb")
        held.append(f)
        out[p] = {
            "flock": attempt(lambda: fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)),
            "posix": attempt(lambda: fcntl.lockf(f, fcntl.LOCK_SH | fcntl.LOCK_NB)),
            # F_OFD_SETLK (37), F_RDLCK, whole file
            "ofd": attempt(lambda: fcntl.fcntl(f, 37, struct.pack("hhqqi", 0, 0, 0, 0, 0))),
            # F_GETLK for a write lock: a conflicting holder elsewhere is reported
            "getlk": attempt(lambda: struct.unpack("hhqqi", fcntl.fcntl(f, fcntl.F_GETLK,
                             struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0)))[0]),
            # F_SETLK with high bits set in the int command: the kernel reads the low 32
            "setlk_high": sys_call(72, f.fileno(), (1 << 32) | fcntl.F_SETLK,
                                   ctypes.addressof(ctypes.create_string_buffer(
                                       struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 0, 0), 32))),
        }
    return out
`;
    const a = await attempt(alice, LOCKS + 'held_locks = []\nresult = lock_all(held_locks)');
    const b = await attempt(bob, LOCKS + 'mine = []\nresult = lock_all(mine)\nfor f in mine: f.close()');
    for (const [p, r] of Object.entries(b)) {
      assert.notEqual(r.flock, 'err:EAGAIN', `${p}: bob saw alice's flock`);
      assert.notEqual(r.getlk, 'ok:0', `${p}: bob saw alice's read lock through F_GETLK`);
    }
    for (const [who, res] of [['alice', a], ['bob', b]])
      for (const [p, r] of Object.entries(res))
        assert.deepEqual(r, { flock: 'err:ENOLCK', posix: 'err:ENOLCK', ofd: 'err:ENOLCK', getlk: 'err:ENOLCK',
          setlk_high: 'err:ENOLCK' }, `${who} ${p}: a lock call was not refused`);
    await attempt(alice, 'for f in held_locks: f.close()\nresult = 1');
    // What is documented instead: SQLite on a file under /tmp with ?nolock=1
    assert.deepEqual(await attempt(alice, `import sqlite3
db = sqlite3.connect("file:/tmp/t.db?nolock=1", uri=True)
db.execute("create table t (x)")
db.execute("insert into t values (7)")
db.commit()
result = db.execute("select x from t").fetchall()`), [[7]]);
  });

  test('no abstract Unix socket between sessions: a disconnected datagram socket cannot be named', async () => {
    const a = await attempt(alice, PRELUDE + `
import socket
def disconnect(s):  # connect(AF_UNSPEC): a datagram socket then takes any sender's datagrams
    if libc.connect(s.fileno(), (ctypes.c_ushort * 8)(0), 16) < 0:
        raise OSError(ctypes.get_errno(), "connect")
inbox, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
named = attempt(lambda: inbox.bind("\\0tenants-chan"))
disconnect(inbox)
inbox.setblocking(False)
auto, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
passcred = attempt(lambda: auto.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1))
disconnect(auto)
attempt(lambda: auto.sendto(b"x", "\\0nobody"))  # binds an automatic name when PASSCRED is on
result = {"named": named, "passcred": passcred, "auto_name": repr(auto.getsockname())}`);
    const b = await attempt(bob, PRELUDE + `
import socket
out, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
result = attempt(lambda: out.sendto(b"from bob", "\\0tenants-chan"))`);
    const got = await attempt(alice, PRELUDE + 'result = attempt(lambda: inbox.recv(100))');
    assert.notEqual(got, "ok:b'from bob'", 'bob reached alice through an abstract socket');
    assert.deepEqual(a, { named: 'err:EACCES', passcred: 'err:EPERM', auto_name: "''" }, JSON.stringify(b));
  });

  test('no watch on shared files: inotify and dnotify are refused', async () => {
    const a = await attempt(alice, PRELUDE + `
IN_OPEN, IN_ACCESS = 0x20, 0x1
ino = libc.inotify_init1(os.O_NONBLOCK)
ino_err = errno.errorcode.get(ctypes.get_errno(), "?") if ino < 0 else None
watched = None
if ino >= 0:
    watched = libc.inotify_add_watch(ino, b"/etc/ld.so.cache", IN_OPEN | IN_ACCESS)
dfd = os.open("/etc", os.O_RDONLY)
dnotify = attempt(lambda: fcntl.fcntl(dfd, fcntl.F_NOTIFY, fcntl.DN_ACCESS | fcntl.DN_MULTISHOT))
os.close(dfd)
result = {"inotify": ino_err or "ok", "dnotify": dnotify}`);
    // bob (and the host) open the watched file
    await attempt(bob, 'open("/etc/ld.so.cache", "rb").read(16)\nresult = 1');
    fs.readFileSync('/etc/ld.so.cache').subarray(0, 16);
    const seen = await attempt(alice, `
import os
try:
    events = len(os.read(ino, 65536)) if ino >= 0 else 0
except BlockingIOError:
    events = 0
result = events`);
    assert.equal(seen, 0, 'alice watched bob\'s and the host\'s opens of a shared file');
    assert.deepEqual(a, { inotify: 'ENOSYS', dnotify: 'err:EPERM' });
  });

  test('the gateway\'s own user keeps its per-user kernel budgets: inotify instances, pending signals', async () => {
    assert.equal(hostPython(HOST_INOTIFY), 'ok', 'the machine is already out of inotify instances');
    assert.equal(hostPython(HOST_SIGQUEUE), 'ok');
    const took = await attempt(alice, PRELUDE + `
inotify_fds = []
for i in range(1024):
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    inotify_fds.append(fd)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGRTMIN})
queued = 0
while queued < 200000 and libc.sigqueue(os.getpid(), signal.SIGRTMIN, ctypes.c_void_p(0)) == 0:
    queued += 1
result = {"inotify": len(inotify_fds), "signals": queued,
          # other per-user counts that reach the gateway's user: user namespaces, message
          # queue bytes (RLIMIT_MSGQUEUE 0), fanotify groups
          "userns": sys_call(272, 0x10000000),
          "mq_open": sys_call(240, ctypes.addressof(ctypes.create_string_buffer(b"tenants-q")), 0o102, 0o600, 0),
          "fanotify": sys_call(300, 0, 0)}`);
    let host;
    try {
      host = { inotify: hostPython(HOST_INOTIFY), signals: hostPython(HOST_SIGQUEUE) };
    } finally {
      await attempt(alice, `
import os, signal
for fd in inotify_fds:
    os.close(fd)
signal.signal(signal.SIGRTMIN, signal.SIG_IGN)  # drops the queued ones
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGRTMIN})
signal.signal(signal.SIGRTMIN, signal.SIG_DFL)
result = 1`);
    }
    assert.deepEqual(host, { inotify: 'ok', signals: 'ok' },
      `a sandbox exhausted the gateway user's budget (it took ${JSON.stringify(took)})`);
    assert.equal(took.inotify, 0, 'inotify instances are not refused');
    assert.ok(took.signals <= 64, `a session queued ${took.signals} signals`);
    assert.deepEqual([took.userns, took.mq_open, took.fanotify], ['err:EPERM', 'err:EMFILE', 'err:EPERM']);
    await bobIsUnharmed('budgets');
  });
});

describe('memory the address-space limit does not count (CODEMCP_WORKER_MEMORY_MB=128)', () => {
  let h;
  before(async () => {
    h = await connectClient({ config: writeConfig(tempDir('codemcp-tenants-mem-', { shared: true }), {}),
      shared: true, env: { CODEMCP_WORKER_MEMORY_MB: '128' } });
  });

  test('memfd, SysV shared memory, message queues and semaphores are refused', async () => {
    const r = await attempt(h, PRELUDE + `
MB = 1 << 20
def memfd(total, each=50):  # several, each under the file-size limit
    chunk = b"x" * MB
    for _ in range(total // each):
        fd = os.memfd_create("hold")
        held.append(fd)
        for _ in range(each):
            os.write(fd, chunk)
    return sum(os.fstat(fd).st_size for fd in held) // MB
def shm(total, each=60):
    libc.shmat.restype = ctypes.c_void_p
    for _ in range(total // each):
        sid = libc.shmget(0, each * MB, 0o1600)  # IPC_PRIVATE, IPC_CREAT
        if sid < 0:
            raise OSError(ctypes.get_errno(), "shmget")
        addr = libc.shmat(sid, None, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "shmat")
        ctypes.memset(addr, 1, each * MB)
        libc.shmdt(ctypes.c_void_p(addr))
    return total
held = []
result = {"memfd": attempt(lambda: memfd(300)),
          "shm": attempt(lambda: shm(240)),
          "msgget": sys_call(68, 0, 0o1600),
          "semget": sys_call(64, 0, 1, 0o1600),
          "memfd_secret": sys_call(447, 0)}`);
    assert.deepEqual(r, { memfd: 'err:ENOSYS', shm: 'err:ENOSYS', msgget: 'err:ENOSYS', semget: 'err:ENOSYS',
      memfd_secret: 'err:ENOSYS' });
    // POSIX shared memory lives in the size-capped /tmp (64 MB by default)
    const p = await attempt(h, PRELUDE + `
from multiprocessing import shared_memory
def posix_shm():
    m = shared_memory.SharedMemory(create=True, size=240 << 20)
    m.buf[:] = b"x" * (240 << 20)
    return "held"
result = attempt(posix_shm)`);
    assert.notEqual(p, 'ok:held');
    assert.equal(await attempt(h, 'result = 1'), 1);
  });
});

describe('no code of one run executes during another (the gateway looks itself)', () => {
  let h, memFile;
  before(async () => {
    const dir = tempDir('codemcp-tenants-runs-', { shared: true });
    memFile = path.join(dir, 'memory.json');
    h = await connectClient({ config: writeConfig(dir, { memory: servers.memory(memFile) }), shared: true });
    await attempt(h, 'result = memory_read_graph()');
  });

  const names = async () => (await attempt(h, 'result = [e["name"] for e in memory_read_graph()["entities"]]'));

  // A thread that keeps trying a write: whichever run is live when it tries is the one it
  // acts under.
  const STRAY = (how, tag) => `
import _thread, threading, time
def stray():
    time.sleep(0.3)  # the run that started it has answered: any write now is another run's
    for i in range(60):
        try:
            resolve(memory_create_entities(entities=[{"name": "${tag}-%d" % i, "entityType": "t", "observations": []}]))
        except BaseException:
            pass
        time.sleep(0.05)
${how}
result = "started"`;

  for (const [what, how, extra] of [
    ['_thread.start_new_thread, after a dry run', '_thread.start_new_thread(stray, ())', { dry_run: true }],
    ['_thread.start_new_thread', '_thread.start_new_thread(stray, ())', {}],
    ['a daemon threading.Thread', 'threading.Thread(target=stray, daemon=True).start()', {}],
    // the worker's output thread ends when fds 1 and 2 close: a stray then keeps the count
    ['a thread in place of one of the worker\'s own', `import os
os.close(1)
os.close(2)
time.sleep(0.3)
_thread.start_new_thread(stray, ())`, {}],
  ]) {
    test(`a thread left by a run never acts in the next one: ${what}`, async () => {
      const tag = 'stray' + Math.random().toString(36).slice(2, 8);
      const r = await run(h, STRAY(how, tag), extra);
      assert.equal(r.structuredContent?.result, 'started', JSON.stringify(r).slice(0, 800));
      const next = await run(h, 'import time\ntime.sleep(1.5)\nresult = "slept"');
      assert.equal(next.structuredContent?.result, 'slept');
      await sleep(500);
      const written = (await names()).filter((n) => n.startsWith(tag));
      assert.deepEqual(written, [], 'the thread of an earlier run wrote to the upstream');
      assert.match(next.structuredContent?.notice ?? '',
        /previous run left (1 thread\(s\)|a thread of its own in place of one of the worker's) running after its answer/,
        JSON.stringify(next).slice(0, 800));
    });
  }

  test('a process forked by a thread after the answer is gone before the next run', async () => {
    const r = await run(h, `
import _thread, os, time
def later():
    time.sleep(0.4)
    if os.fork() == 0:
        time.sleep(300)
        os._exit(0)
_thread.start_new_thread(later, ())
result = 1`);
    assert.equal(r.structuredContent?.result, 1);
    await sleep(1000);
    const pids = await attempt(h, 'import os\nresult = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())');
    assert.deepEqual(pids, [1, 2], 'a process of the earlier run is alive during this one');
  });

  test('a thread a signal handler starts between runs is found before the next run', async () => {
    const tag = 'alarm' + Math.random().toString(36).slice(2, 8);
    const r = await run(h, STRAY('', tag).replace('result = "started"', '') + `
import signal
signal.signal(signal.SIGALRM, lambda *a: _thread.start_new_thread(stray, ()))
signal.setitimer(signal.ITIMER_REAL, 0.2)
result = "armed"`);
    assert.equal(r.structuredContent?.result, 'armed');
    await sleep(1000);
    const next = await run(h, 'import time\ntime.sleep(1.0)\nresult = "slept"');
    await sleep(500);
    const written = (await names()).filter((n) => n.startsWith(tag));
    assert.deepEqual(written, [], 'code started between runs wrote during a later run');
    // Either the handler ran while the worker was idle (found before this run, which then
    // started in a fresh interpreter), or it never ran: nothing of it may act now.
    if (next.structuredContent?.notice)
      assert.match(next.structuredContent.notice, /previous run left 1 thread\(s\) running/);
  });

  test('a run that starts and joins its threads keeps its session', async () => {
    await attempt(h, 'kept_var = 41\nresult = 1');
    const r = await run(h, `
import threading
out = []
ts = [threading.Thread(target=lambda i=i: out.append(i)) for i in range(8)]
for t in ts: t.start()
for t in ts: t.join()
result = sorted(out)`);
    assert.deepEqual(r.structuredContent.result, [0, 1, 2, 3, 4, 5, 6, 7]);
    assert.equal(r.structuredContent.notice, undefined);
    assert.equal(await attempt(h, 'result = kept_var + 1'), 42);
  });
});

describe('time and CPU a run may take', () => {
  let h;
  before(async () => {
    h = await connectClient({ config: writeConfig(tempDir('codemcp-tenants-cpu-', { shared: true }), {}),
      shared: true, env: { CODEMCP_RUN_CPU_MS: '1000', CODEMCP_MAX_TIMEOUT_MS: '90000' } });
  });

  test('timeout_ms above CODEMCP_MAX_TIMEOUT_MS is refused with the maximum named', async () => {
    for (const t of [90001, 3600000, 1e308]) {
      const r = await run(h, 'result = 1', { timeout_ms: t });
      assert.equal(r.isError, true, `timeout_ms ${t}: ${JSON.stringify(r).slice(0, 300)}`);
      assert.match(JSON.stringify(r), /maximum of 90000 ms \(CODEMCP_MAX_TIMEOUT_MS\)/);
    }
    assert.equal(await attempt(h, 'result = 1', { timeout_ms: 90000 }), 1);
  });

  test('a run that spins past its CPU time is ended long before its wall-clock deadline', async () => {
    const cases = {
      'a busy loop': 'while True: pass',
      'SIGXCPU ignored': 'import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True: pass',
      'SIGXCPU blocked': 'import signal\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGXCPU})\nwhile True: pass',
      'the limit raised first': PRELUDE + `
import resource
def soft_to_hard():  # Python reports EPERM from setrlimit as ValueError
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (resource.getrlimit(resource.RLIMIT_CPU)[1],) * 2)
        return "ok"
    except ValueError:
        return "refused"
raised = [soft_to_hard(),
          # prlimit64(0, RLIMIT_CPU, {inf, inf}, NULL)
          sys_call(302, 0, resource.RLIMIT_CPU, ctypes.addressof((ctypes.c_ulong * 2)(2**64 - 1, 2**64 - 1)), 0)]
print(raised)
while True: pass`,
    };
    for (const [what, code] of Object.entries(cases)) {
      const r = await run(h, code, { timeout_ms: 60000 });
      assert.equal(r.isError, true, `${what}: ${JSON.stringify(r).slice(0, 300)}`);
      // the wall-clock deadline would say so: ended by the CPU budget, long before it
      assert.doesNotMatch(JSON.stringify(r), /timed out|timeout after/i, `${what}: only the wall-clock deadline stopped it`);
      assert.match(JSON.stringify(r), /CPU time/, what);
      assert.equal(await attempt(h, 'result = 2'), 2, `${what}: the session did not recover`);
    }
  });
});
