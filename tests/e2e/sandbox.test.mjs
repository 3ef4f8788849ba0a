// The escape suite: agent code is hostile. Each case is a program sent through
// execute_python to the real gateway in its default isolation (CODEMCP_ISOLATION=sandbox)
// that tries to get out and reports what it got; the test asserts it got nothing and that
// the gateway, the upstreams and other sessions are unharmed. Some cases need a second
// gateway (subprocess knob, HTTP sessions, an unprivileged user, a kernel that refuses user
// namespaces).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  Client, connectClient, tempDir, writeConfig, servers, ms, sleep, waitFor, processTable,
  descendants, prototypeChain, nsPids, Proc, CODEMCP_BIN, REPO,
} from './lib.mjs';
import {
  hostileSetup, PRELUDE, LEAVE_GRANDCHILD, IDENTITY, secretsProgram, writesProgram, networkProgram, assertNetworkRefused,
  SYSCALLS, assertSyscallsRefused, signalsProgram, policyBypassProgram, assertPolicyHeld, assertSubprocessRefused, subprocessProgram, FORK_BOMB,
  EXHAUSTION, LEAVE_AND_HIDE, sessionSpyProgram,
} from './escape_cases.mjs';

const WORKER_BIN = process.env.CODEMCP_WORKER_BIN
  ? path.resolve(process.env.CODEMCP_WORKER_BIN)
  : path.join(REPO, 'build', 'src', 'worker', 'codemcp-worker');
const SECRET = 'sbx-secret-' + crypto.randomBytes(8).toString('hex');

function run(h, code, extra = {}) {
  return h.client.callTool({ name: 'execute_python', arguments: { code, ...extra } }, undefined,
    { timeout: ms(60000) });
}

/** Runs code that must succeed as a program; returns its result value. */
async function attempt(h, code, extra) {
  const r = await run(h, code, extra);
  assert.equal(r.isError, false, JSON.stringify(r).slice(0, 3000));
  return r.structuredContent.result;
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}


describe('the default sandbox against hostile code', () => {
  let h, fx, home, config, memFile, gw, mem;

  before(async () => {
    fx = await hostileSetup('codemcp-sbx-', SECRET);
    ({ home, config, memFile } = fx);
    h = await connectClient({
      config,
      shared: true,
      env: { HOME: home, GATEWAY_API_KEY: SECRET, CODEMCP_SANDBOX_NPROC: '64' },
    });
    await h.client.listTools();
    await attempt(h, 'result = memory_read_graph()'); // the memory server is up
    gw = h.pid;
    const d = descendants(gw);
    mem = d.find((p) => p.comm.startsWith('node'))?.pid;
    assert.ok(mem, `no memory server among ${JSON.stringify(d)}`);
  });

  after(() => fx?.close());

  test('it sees only its own PID namespace, as uid 1000, with no capabilities', async () => {
    const r = await attempt(h, IDENTITY);
    assert.ok(r.pids.every((p) => p <= 3), `other processes are visible: ${r.pids}`);
    assert.ok(!r.pids.includes(gw) && !r.pids.includes(mem));
    assert.equal(r.uid, 1000);
    assert.equal(r.gid, 1000);
    assert.equal(r.cap_eff, '0000000000000000');
    assert.equal(r.cap_prm, '0000000000000000');
    assert.equal(r.cap_bnd, '0000000000000000');
    assert.equal(r.no_new_privs, '1');
    assert.equal(r.seccomp, '2');
    assert.equal(r.hostname, 'codemcp-sandbox');
    // Seen from outside, the prototype runs as the gateway's own user, or as nobody for root;
    // a root gateway's sessions as ids of their own (CODEMCP_ROOT_UID_BASE, 2100000000 + a place of its own).
    const inner = descendants(gw).filter((p) => p.comm.startsWith('codemcp-w'));
    const uids = inner.map((p) => Number(/Uid:\s+(\d+)/.exec(fs.readFileSync(`/proc/${p.pid}/status`, 'utf8'))[1]));
    const want = process.getuid() === 0 ? 65534 : process.getuid();
    assert.ok(uids.includes(want), `no worker runs as uid ${want} outside: ${uids}`);
    if (process.getuid() === 0) {
      assert.ok(uids.some((u) => u >= 2100000000 && u < 2100000000 + 65536), `no session runs as an id of its own: ${uids}`);
    }
    assert.equal(r.cwd, '/tmp');
    assert.deepEqual(r.ifaces, ['lo'], 'an empty network namespace has only loopback');
    for (const top of ['home', 'root', 'var', 'run', 'opt', 'srv', 'mnt', 'boot', 'sys']) {
      assert.ok(!r.root.includes(top), `/${top} is visible: ${r.root}`);
    }
  });

  test('no secret is in reach: environ of gateway and upstream, config, home, /etc/shadow', async () => {
    const paths = [
      `/proc/${gw}/environ`, `/proc/${mem}/environ`, `/proc/${gw}/cmdline`, `/proc/${gw}/mem`,
      `/proc/${gw}/maps`, `/proc/${mem}/fd/0`, `/proc/${gw}/fd/1`, config, memFile,
      path.join(home, '.bashrc'), path.join(home, '.config', 'codemcp', 'mcp.json'), home,
      '/etc/shadow', '/etc/gshadow', '/root', '/root/.bashrc', path.join(REPO, 'tests'),
      path.join(REPO, 'README.md'), '/proc/1/environ', '/proc/2/environ', '/etc/passwd',
    ];
    const r = await attempt(h, secretsProgram(paths, SECRET));
    assert.deepEqual(r.leak, [], `the secret leaked through ${r.leak}`);
    assert.deepEqual(r.tokens, [], 'a worker token is readable in a process environment');
    assert.match(r.got['/proc/1/mem'], /^err:/, 'the sandbox\'s PID 1 is readable');
    assert.ok(!JSON.stringify(r.env).includes(SECRET));
    assert.ok(!('CODEMCP_WORKER_TOKEN' in r.env), 'the worker token stayed in the environment');
    assert.equal(r.home, '/tmp');
    for (const p of paths) {
      if (p === '/etc/passwd' || p === '/proc/1/environ' || p === '/proc/2/environ') continue;
      assert.match(r.got[p], /^err:/, `${p} was readable: ${r.got[p]}`);
    }
    assert.ok(!r.got['/etc/passwd'].includes('root:'), 'the host /etc/passwd is visible');
  });

  test('writes land only in its own /tmp; mcp.json and ~/.bashrc stay untouched', async () => {
    fs.rmSync(path.join(REPO, 'sbx-escape'), { force: true });
    const targets = ['/x', '/etc/x', '/usr/lib/x', '/dev/x', '/proc/x', config, WORKER_BIN,
      path.join(home, '.bashrc'), path.join(REPO, 'sbx-escape'), '/dev/shm/../x',
      // where gateways hold their blocks of the id range (worker_idblock.c): root's, and others'
      '/run/codemcp-ids/ids-0-0.lock', path.join(home, '.config', 'codemcp', 'run', 'ids-0-0.lock')];
    const r = await attempt(h, writesProgram(targets, WORKER_BIN));
    for (const t of targets) assert.match(r[t], /^err:/, `${t} was writable: ${r[t]}`);
    assert.match(r.chmod, /^err:/);
    assert.equal(r['/tmp/ok'], 'ok:written');
    assert.equal(fs.readFileSync(path.join(home, '.bashrc'), 'utf8'), `export TOKEN=${SECRET}\n`);
    assert.ok(!fs.readFileSync(config, 'utf8').includes('pwned'));
    assert.ok(!fs.existsSync(path.join(REPO, 'sbx-escape')));
  });

  test('no network: TCP, UDP and IPv6 to the test\'s loopback servers, AF_UNIX anywhere', async () => {
    const r = await attempt(h, networkProgram(fx.ports()));
    assertNetworkRefused(r);
    await sleep(200);
    assert.deepEqual(fx.tcpSeen, []);
    assert.deepEqual(fx.udpSeen, []);
  });

  test('ptrace, process_vm_readv, mount, unshare, setns, keyctl, bpf and friends are refused', async () => {
    const r = await attempt(h, SYSCALLS);
    assertSyscallsRefused(r);
  });

  test('it cannot signal the gateway, the upstream or PID 1; its own state survives', async () => {
    await attempt(h, 'kept = 41\nresult = 0');
    const r = await attempt(h, signalsProgram({ gateway: gw, memory: mem }));
    for (const k of ['gateway', 'memory']) {
      assert.match(r[k], /^err:ESRCH$/, `${k} pid was reachable: ${r[k]}`);
    }
    await sleep(300);
    assert.ok(alive(gw), 'the gateway died');
    assert.ok(alive(mem), 'the memory server died');
    assert.equal(await attempt(h, 'result = kept + 1'), 42, 'the worker did not survive');
    assert.equal(typeof (await attempt(h, 'result = memory_read_graph()')), 'object');
  });

  test('the policy cannot be bypassed by writing to the upstream\'s stdin', async () => {
    const r = await attempt(h, policyBypassProgram(mem, gw));
    await assertPolicyHeld(r, memFile);
  });

  test('subprocesses are denied by default (execve refused)', async () => {
    const r = await attempt(h, subprocessProgram(WORKER_BIN));
    assertSubprocessRefused(r);
  });

  test('a fork bomb stops at the process cap; the gateway and the next run survive', async () => {
    const r = await attempt(h, FORK_BOMB);
    assert.equal(r.err, 'EAGAIN', JSON.stringify(r));
    assert.ok(r.forked < 64, `forked ${r.forked} processes under CODEMCP_SANDBOX_NPROC=64`);
    assert.ok(alive(gw));
    assert.equal(await attempt(h, 'result = 7'), 7);
  });

  test('memory and /tmp exhaustion fail cleanly; the next run works', async () => {
    const r = await attempt(h, EXHAUSTION);
    // ASan reserves terabytes of address space: a sanitizer build runs without RLIMIT_AS.
    if (!process.env.CODEMCP_TEST_SANITIZER) assert.equal(r.mem, 'err:MemoryError');
    assert.match(r.tmp, /^err:(ENOSPC|EFBIG)$/);
    assert.equal(await attempt(h, 'result = 8'), 8);
  });

  test('a detached child does not outlive its run\'s hard kill', async () => {
    const before = new Set(descendants(gw).map((p) => `${p.pid}:${p.start}`));
    const pending = run(h, PRELUDE + `
import time
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(300)
    os._exit(0)
while True:
    try:
        time.sleep(0.05)
    except BaseException:
        pass`, { timeout_ms: 1000 });
    await sleep(700);
    // The prototype the session was forked from outlives it by design: everything else must go.
    const proto = new Set(prototypeChain(gw).map((p) => p.pid));
    const during = descendants(gw).filter((p) => !proto.has(p.pid) &&
      (!before.has(`${p.pid}:${p.start}`) || p.comm.startsWith('codemcp-w')));
    const r = await pending;
    assert.equal(r.isError, true);
    const gone = await waitFor(() => {
      const table = processTable();
      return during.every((p) => table.get(p.pid)?.start !== p.start);
    }, ms(5000));
    assert.ok(gone, `sandbox processes survived the kill: ${JSON.stringify(during)}`);
    assert.ok(alive(gw));
    assert.equal(await attempt(h, 'result = 9'), 9, 'the replacement worker answers');
  });

  test('processes a run leaves behind end with it', async () => {
    // The worker skips its scan for leftovers when the namespace's ns_last_pid has not moved:
    // the run tries to put it back after forking, which must be refused.
    const r1 = await attempt(h, LEAVE_AND_HIDE);
    assert.notEqual(r1.rewound, 'written', 'a run could rewind ns_last_pid and hide its leftovers');
    assert.ok(r1.pids.length >= 3, `the detached grandchild did not start: ${r1.pids}`);
    const r2 = await attempt(h, 'import os\nresult = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())');
    assert.deepEqual(r2, [1, 2], 'a process outlived the run that started it');
  });

  test('/etc/alternatives is read-only, and its links lead nowhere the sandbox did not already bind', async () => {
    // Bound for Debian's update-alternatives libraries (libblas.so.3): its links resolve inside
    // the sandbox, so a target outside the bound trees (man pages, /usr/share, /usr/bin...)
    // must stay missing.
    const bound = ['/usr/lib/', '/usr/lib64/', '/usr/lib32/', '/usr/libx32/', '/usr/local/lib/',
      '/usr/share/zoneinfo/', '/lib/', '/lib64/'];
    const under = (p) => bound.some((b) => p.startsWith(b));
    const hostOutside = fs.readdirSync('/etc/alternatives').filter((n) => {
      try {
        if (!fs.lstatSync(path.join('/etc/alternatives', n)).isSymbolicLink()) return false;
        return !under(fs.realpathSync(path.join('/etc/alternatives', n)));
      } catch {
        return false; // dangling on the host too
      }
    });
    assert.ok(hostOutside.length > 0, 'no alternative on this host leads outside the bound trees: the case proves nothing');
    const r = await attempt(h, PRELUDE + `
alts = sorted(os.listdir("/etc/alternatives"))
reachable = {n: os.path.realpath("/etc/alternatives/" + n) for n in alts
             if os.path.islink("/etc/alternatives/" + n) and os.path.exists("/etc/alternatives/" + n)}
victim = "/etc/alternatives/" + sorted(reachable or alts)[0]
def replace():
    os.unlink(victim)
    os.symlink("/tmp", victim)
def create():
    with open("/etc/alternatives/codemcp-probe", "w") as f:
        f.write("x")
result = {"reachable": reachable, "replace": attempt(replace), "create": attempt(create)}`);
    const outside = Object.entries(r.reachable).filter(([, to]) => !under(to));
    assert.deepEqual(outside, [], 'alternatives leading outside the bound trees resolve inside');
    assert.deepEqual(hostOutside.filter((n) => n in r.reachable), []);
    assert.equal(r.replace, 'err:EROFS');
    assert.equal(r.create, 'err:EROFS');
    assert.ok(!fs.existsSync('/etc/alternatives/codemcp-probe'));
  });

  test('the gateway listens nowhere a worker could reach (no control socket, no port)', async () => {
    const inodes = new Set();
    for (const fd of fs.readdirSync(`/proc/${gw}/fd`)) {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${gw}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    }
    assert.ok(inodes.size > 0, 'the gateway has a socketpair to its worker');
    const listening = [];
    for (const line of fs.readFileSync('/proc/net/unix', 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length >= 7 && (parseInt(f[3], 16) & 0x10000) && inodes.has(f[6])) listening.push(line);
    }
    for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
      for (const line of fs.readFileSync(file, 'utf8').split('\n').slice(1)) {
        const f = line.trim().split(/\s+/);
        if (f.length >= 10 && f[3] === '0A' && inodes.has(f[9])) listening.push(line);
      }
    }
    // The one listener is the admin socket (0600, by path): not for workers, and
    // not visible inside the sandbox.
    const admin = listening.filter((l) => /\/admin-[^/]*\.sock$/.test(l));
    assert.deepEqual(listening.filter((l) => !admin.includes(l)), []);
    for (const l of admin) {
      const sock = l.trim().split(/\s+/)[7];
      const r = await attempt(h, PRELUDE + `result = attempt(lambda: os.stat(${JSON.stringify(sock)}) and "seen")`);
      assert.match(r, /^err:ENOENT$/, `the admin socket ${sock} is visible in the sandbox`);
    }
  });
});

describe('the runtime a run shares its interpreter with', () => {
  // The request loop, the stray-process check and the run's state swap are C's
  // (src/worker/pyrun.c, pystray.c): a program that rebinds the runtime's Python names cannot
  // keep a process past its run, silence later runs or forge their results.
  test('rebinding worker_main/runner/capture names keeps neither leftovers nor later runs', { timeout: ms(90000) }, async () => {
    const dir = tempDir('codemcp-sbx-rebind-');
    const h = await connectClient({ config: writeConfig(dir, {}) });
    const FORK = '\n' + LEAVE_GRANDCHILD +
      '\nresult = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())';
    const PIDS = 'import os\nprint("still captured")\n' +
      'result = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())';
    const check = async (what) => {
      const r2 = await run(h, PIDS);
      assert.equal(r2.isError, false, `${what}: ${JSON.stringify(r2).slice(0, 2000)}`);
      assert.deepEqual(r2.structuredContent.result, [1, 2], `${what}: a process outlived the run that started it`);
      assert.equal(r2.structuredContent.stdout, 'still captured\n', what);
    };
    // the stray check alone (worker_main.end_strays was Python before)
    let r1 = await attempt(h, `
import os, time
import codemcp_rt.worker_main as wm
nothing = lambda *a, **k: None
for name in ("end_strays", "_end_strays", "_others", "_read_last_pid"):
    setattr(wm, name, nothing)` + FORK);
    assert.ok(r1.length >= 3, `the detached grandchild did not start: ${r1}`);
    await check('end_strays rebound');
    // the loop's and the run's names
    r1 = await attempt(h, `
import os, time
import codemcp_rt.worker_main as wm, codemcp_rt.runner as rn, codemcp_rt.capture as cap
nothing = lambda *a, **k: None
wm.handle = nothing
rn.run_json = lambda params: '{"ok":true,"result":"forged","calls":0}'
rn._namespace = lambda *a: {"__builtins__": {}}
rn._fast_prepare = nothing
cap.streams = lambda limit: (None, None)` + FORK);
    assert.ok(r1.length >= 3, `the detached grandchild did not start: ${r1}`);
    await check('handle, run_json, _namespace, _fast_prepare, streams rebound');
    await h.close();
  });
});

describe('sandbox knobs', () => {
  test('CODEMCP_SANDBOX_SUBPROCESS=1 allows subprocesses (output captured), still no network', async () => {
    const dir = tempDir('codemcp-sbx-sub-');
    const h = await connectClient({ config: writeConfig(dir, {}), env: { CODEMCP_SANDBOX_SUBPROCESS: '1' } });
    const r = await attempt(h, PRELUDE + `
import subprocess
p = subprocess.run(["/bin/sh", "-c", "echo sub-out; ls /home 2>&1; id -u"], capture_output=True, text=True)
subprocess.run(["sh", "-c", "echo to-fd1"])
result = {"out": p.stdout, "sock": attempt(lambda: socket.socket())}`);
    assert.match(r.out, /^sub-out\n/);
    assert.match(r.out, /No such file or directory/);
    assert.match(r.out, /\n1000\n$/);
    assert.match(r.sock, /^err:/);
    await h.close();
  });

  test('CODEMCP_SANDBOX_NET=host keeps the host network (and nothing else changes)', async () => {
    const dir = tempDir('codemcp-sbx-net-');
    let seen = 0;
    const srv = net.createServer((s) => { seen++; s.end('hello from the host'); });
    await new Promise((r) => srv.listen(0, '127.0.0.1', r));
    try {
      const h = await connectClient({ config: writeConfig(dir, {}), env: { CODEMCP_SANDBOX_NET: 'host' } });
      const r = await attempt(h, PRELUDE + `
def get():
    s = socket.create_connection(("127.0.0.1", ${srv.address().port}), timeout=5)
    return s.recv(100).decode()
result = {"tcp": attempt(get), "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
          "home": attempt(lambda: os.listdir(${JSON.stringify(os.homedir())}))}`);
      assert.equal(r.tcp, 'ok:hello from the host');
      assert.equal(seen, 1);
      assert.ok(r.pids.every((p) => p <= 3), String(r.pids));
      assert.match(r.home, /^err:/);
      await h.close();
    } finally {
      srv.close();
    }
  });

  test('the limits a worker applies are the ones `codemcp settings` reads, out-of-range values included', async () => {
    const dir = tempDir('codemcp-sbx-limits-');
    const env = { CODEMCP_SANDBOX_NPROC: '4', CODEMCP_SANDBOX_NOFILE: '200', CODEMCP_SANDBOX_TMP_MB: '2x' };
    const listed = execFileSync(CODEMCP_BIN, ['settings'], { env: { ...process.env, ...env }, encoding: 'utf8' });
    const setting = (name) => Number(listed.match(new RegExp(`^${name}=(\\d+)`, 'm'))[1]);
    const h = await connectClient({ config: writeConfig(dir, {}), env });
    const r = await attempt(h, `
import resource
result = [resource.getrlimit(r)[0] for r in (resource.RLIMIT_NPROC, resource.RLIMIT_NOFILE, resource.RLIMIT_FSIZE)]`);
    assert.deepEqual(r, [setting('CODEMCP_SANDBOX_NPROC'), 200, setting('CODEMCP_SANDBOX_TMP_MB') * 1024 * 1024]);
    await h.close();
  });

  test('CODEMCP_SANDBOX_RO / _RW make extra paths visible, read-only or writable', async () => {
    const dir = tempDir('codemcp-sbx-paths-');
    const ro = path.join(dir, 'ro');
    const rw = path.join(dir, 'rw');
    fs.mkdirSync(ro);
    fs.mkdirSync(rw);
    fs.chmodSync(dir, 0o755);
    fs.chmodSync(rw, 0o777);
    fs.writeFileSync(path.join(ro, 'data.txt'), 'visible');
    const h = await connectClient({
      config: writeConfig(dir, {}),
      env: { CODEMCP_SANDBOX_RO: ro, CODEMCP_SANDBOX_RW: rw },
    });
    const r = await attempt(h, PRELUDE + `
def w(p):
    with open(p, "w") as f:
        f.write("from-sandbox")
result = {"read": attempt(lambda: read(${JSON.stringify(path.join(ro, 'data.txt'))})),
          "write_ro": attempt(lambda: w(${JSON.stringify(path.join(ro, 'x'))})),
          "write_rw": attempt(lambda: w(${JSON.stringify(path.join(rw, 'out.txt'))})),
          "parent": attempt(lambda: sorted(os.listdir(${JSON.stringify(dir)})))}`);
    assert.equal(r.read, 'ok:visible');
    assert.match(r.write_ro, /^err:/);
    assert.equal(r.write_rw, 'ok:None');
    assert.equal(fs.readFileSync(path.join(rw, 'out.txt'), 'utf8'), 'from-sandbox');
    assert.match(r.parent, /^ok:\['ro', 'rw'\]$/, 'only the named paths are visible');
    await h.close();
  });

  test('more paths below /tmp than a session keeps: the gateway says so, and what it says holds', async () => {
    const dir = tempDir('codemcp-sbx-many-');
    fs.chmodSync(dir, 0o755);
    const paths = Array.from({ length: 18 }, (_, i) => path.join(dir, `p${i}`));
    for (const p of paths) {
      fs.mkdirSync(p);
      fs.writeFileSync(path.join(p, 'f'), p);
    }
    const h = await connectClient({
      config: writeConfig(dir, {}),
      env: { CODEMCP_SANDBOX_RO: paths.slice(0, 10).join(':'), CODEMCP_SANDBOX_RW: paths.slice(10).join(':') },
    });
    try {
      const seen = await attempt(h, `import os
result = [os.path.exists(p + "/f") for p in ${JSON.stringify(paths)}]`);
      assert.deepEqual(seen, paths.map((_, i) => i < 16), JSON.stringify(seen));
      assert.match(h.stderr(), /CODEMCP_SANDBOX_RO and _RW name 18 paths below \/tmp: a session keeps at most 16 of them visible/);
    } finally {
      await h.close();
    }
  });
});

describe('what the gateway passes a worker', () => {
  test('the encoder model is bound read-only, alone; its variables cannot widen a worker the agent starts', async () => {
    // The model must lie outside /tmp (each session's /tmp is its own tmpfs).
    const dir = fs.mkdtempSync('/var/tmp/codemcp-sbx-model-');
    try {
      fs.chmodSync(dir, 0o755);
      const model = path.join(dir, 'model.bin');
      const beside = path.join(dir, 'beside.txt');
      fs.writeFileSync(model, 'weights');
      fs.writeFileSync(beside, SECRET);
      fs.chmodSync(model, 0o666); // only the read-only bind stops a write
      fs.chmodSync(beside, 0o644);
      const h = await connectClient({
        config: writeConfig(tempDir('codemcp-sbx-model-cfg-'), {}),
        env: { CODEMCP_ENCODER_MODEL: model, CODEMCP_SANDBOX_SUBPROCESS: '1' },
      });
      try {
        // A worker started by the agent with the variables the gateway passes, set to widen
        // its sandbox: another file bound, Landlock off. It is still inside this sandbox (its
        // seccomp filter refuses the namespaces a sandbox is built from), so it gets nothing.
        const r = await attempt(h, PRELUDE + `
import subprocess
def w():
    with open(${JSON.stringify(model)}, "r+") as f:
        f.write("x")
env = {"CODEMCP_ISOLATION": "sandbox", "CODEMCP_ENCODER_MODEL": ${JSON.stringify(beside)},
       "CODEMCP_SANDBOX_LANDLOCK_ABI_MAX": "0", "CODEMCP_SANDBOX_RO": ${JSON.stringify(dir)},
       "CODEMCP_WORKER_TOKEN": "x", "CODEMCP_CONTROL_URL": "fd:3"}
p = subprocess.run([os.readlink("/proc/self/exe")], env=env, capture_output=True, text=True, timeout=30)
result = {"read": attempt(lambda: read(${JSON.stringify(model)})), "write": attempt(w),
          "listing": attempt(lambda: sorted(os.listdir(${JSON.stringify(dir)}))),
          "beside": attempt(lambda: read(${JSON.stringify(beside)})),
          "env": {k: v for k, v in os.environ.items() if k.startswith("CODEMCP_")},
          "reexec": [p.returncode, p.stderr[:2000]],
          "beside_after": attempt(lambda: read(${JSON.stringify(beside)}))}`);
        assert.equal(r.read, 'ok:weights');
        assert.equal(r.write, 'err:EROFS');
        assert.equal(r.listing, "ok:['model.bin']", 'only the model is bound, not its directory');
        assert.equal(r.beside, 'err:ENOENT');
        assert.equal(r.env.CODEMCP_ENCODER_MODEL, model);
        assert.notEqual(r.reexec[0], 0, JSON.stringify(r.reexec));
        assert.match(r.reexec[1], /cannot create the worker sandbox/, JSON.stringify(r.reexec));
        assert.equal(r.beside_after, 'err:ENOENT');
        assert.equal(fs.readFileSync(model, 'utf8'), 'weights');
      } finally {
        await h.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('sessions and users', () => {
  test('two HTTP sessions see neither each other\'s variables nor processes', async () => {
    const dir = tempDir('codemcp-sbx-http-');
    const proc = new Proc({ args: ['start', '-p', '0', '--no-auth'], config: writeConfig(dir, {}), home: dir });
    const found = await waitFor(() => proc.exit || proc.stderr.match(/serving MCP over Streamable HTTP at (\S+)/), ms(20000));
    assert.ok(found && found[1], proc.stderrTail());
    const clients = [];
    for (const name of ['a', 'b']) {
      const c = new Client({ name: `sbx-${name}`, version: '0' });
      await c.connect(new StreamableHTTPClientTransport(new URL(found[1])), { timeout: ms(15000) });
      clients.push({ client: c });
    }
    const [a, b] = clients;
    const pidA = await attempt(a, `secret_a = ${JSON.stringify(SECRET)}\nimport os\nresult = os.getpid()`);
    const r = await attempt(b, sessionSpyProgram(SECRET));
    assert.deepEqual(r.found, []);
    assert.equal(r.has_var, false);
    assert.equal(await attempt(a, 'result = secret_a'), SECRET, 'session A keeps its variables');
    assert.equal(typeof pidA, 'number');
    for (const c of clients) await c.client.close().catch(() => {});
    await proc.kill();
  });

  test('one interpreter per session: more sessions than workers never share one', async () => {
    const dir = tempDir('codemcp-sbx-per-session-');
    const proc = new Proc({ args: ['start', '-p', '0', '--no-auth'], config: writeConfig(dir, {}), home: dir,
      env: { CODEMCP_WORKERS: '2' } });
    const found = await waitFor(() => proc.exit || proc.stderr.match(/serving MCP over Streamable HTTP at (\S+)/), ms(20000));
    assert.ok(found && found[1], proc.stderrTail());
    const open = async (name) => {
      const client = new Client({ name, version: '0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(found[1])), { timeout: ms(15000) });
      return { client };
    };
    const spy = PRELUDE + `
import sys, gc
rt = sys.modules.get("codemcp_rt.runner")
seen = [n for n in ("secret_a", "secret_b") if n in globals()]
if rt is not None and ${JSON.stringify(SECRET)} in repr(getattr(rt, "_sessions", {})):
    seen.append("runner._sessions")
if any(isinstance(o, dict) and o.get("secret_a") == ${JSON.stringify(SECRET)} for o in gc.get_objects()):
    seen.append("a namespace dict")
result = seen`;
    const a = await open('a');
    const b = await open('b');
    await attempt(a, `secret_a = ${JSON.stringify(SECRET)}\nresult = 1`);
    assert.deepEqual(await attempt(b, spy), [], 'session B reached session A');
    await attempt(b, 'secret_b = 2\nresult = 1');
    // A third session with two workers: the least recently used idle session (A) gives its
    // worker up; it is never shared.
    const c = await open('c');
    assert.deepEqual(await attempt(c, spy), [], 'session C reached another session');
    const again = await run(a, 'result = secret_a');
    assert.equal(again.isError, true, 'A kept variables it cannot have kept');
    assert.match(again.structuredContent.notice, /variables were discarded/);
    assert.match(again.structuredContent.error, /NameError/);
    assert.equal(await attempt(a, 'result = 3'), 3);
    for (const x of [a, b, c]) await x.client.close().catch(() => {});
    await proc.kill();
  });

  test('a session idle past CODEMCP_SESSION_IDLE_MS loses its worker, and its next run says so', async () => {
    const dir = tempDir('codemcp-sbx-idle-');
    const h = await connectClient({ config: writeConfig(dir, {}), env: { CODEMCP_SESSION_IDLE_MS: '600' } });
    await attempt(h, 'kept = 5\nresult = kept');
    assert.equal(await attempt(h, 'result = kept'), 5, 'variables persist while the session is active');
    await sleep(1500);
    const r = await run(h, 'result = kept');
    assert.equal(r.isError, true);
    assert.match(r.structuredContent.notice, /idle longer than CODEMCP_SESSION_IDLE_MS/);
    assert.match(r.structuredContent.error, /NameError/);
    const r2 = await run(h, 'result = 6');
    assert.equal(r2.structuredContent.result, 6);
    assert.ok(!('notice' in r2.structuredContent), 'the notice is given once');
    await h.close();
  });

  test('as an unprivileged user the sandbox is the same', async (t) => {
    const user = 'codemcp-sbx-' + crypto.randomBytes(3).toString('hex');
    let uid = process.getuid();
    let gid = process.getgid();
    let created = false;
    if (uid === 0) {
      try {
        execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', user], { stdio: 'pipe' });
        created = true;
      } catch (e) {
        t.skip(`useradd failed: ${e.message}`);
        return;
      }
      uid = Number(execFileSync('id', ['-u', user]).toString().trim());
      gid = Number(execFileSync('id', ['-g', user]).toString().trim());
    }
    try {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codemcp-sbx-user-'));
      fs.chmodSync(dir, 0o755);
      const config = writeConfig(dir, {});
      // A copy of the binaries the user can reach (the checkout may sit under /root).
      const gwBin = path.join(dir, 'codemcp');
      const wkBin = path.join(dir, 'codemcp-worker');
      fs.copyFileSync(CODEMCP_BIN, gwBin);
      fs.copyFileSync(WORKER_BIN, wkBin);
      fs.chmodSync(gwBin, 0o755);
      fs.chmodSync(wkBin, 0o755);
      const code = PRELUDE + `
import time
time.sleep(1.5)  # the test looks at the processes outside meanwhile
st = read("/proc/self/status")
result = {"uid": os.getuid(), "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
          "sock": attempt(lambda: socket.socket()), "shadow": attempt(lambda: read("/etc/shadow")),
          "caps": [l for l in st.splitlines() if l.startswith("CapEff")][0].split()[1],
          "seccomp": [l for l in st.splitlines() if l.startswith("Seccomp:")][0].split()[1]}`;
      // Outside the sandbox, the user's codemcp-worker processes (the waiter the gateway
      // spawned, the sandbox's PID 1) must not be dumpable: their /proc files then belong to
      // root, and the same user can neither read them nor ptrace.
      const dumpable = new Set();
      let seen = 0;
      const watch = setInterval(() => {
        for (const p of fs.readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
          try {
            if (fs.readFileSync(`/proc/${p}/comm`, 'utf8').trim() !== 'codemcp-worker') continue;
            const status = fs.readFileSync(`/proc/${p}/status`, 'utf8');
            if (Number(status.match(/^Uid:\s+(\d+)/m)[1]) !== uid) continue;
            const ppid = Number(status.match(/^PPid:\s+(\d+)/m)[1]);
            if (ppid !== child.pid) continue; // the waiter: a direct child of this gateway
            // The promise is "not dumpable once the id maps are written" (sandbox.c: it is
            // dumpable for the few syscalls in between). The sandbox's PID 1 forks its worker
            // only after that, so judge only waiters whose PID 1 has a child already.
            const inits = fs.readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
            if (!inits.some((i) => fs.readFileSync(`/proc/${i}/task/${i}/children`, 'utf8').trim())) continue;
            seen++;
            if (fs.statSync(`/proc/${p}/environ`).uid !== 0) dumpable.add(p);
          } catch {}
        }
      }, 100);
      let child;
      const out = await new Promise((resolve) => {
        child = spawn(gwBin, [], {
          uid, gid, cwd: dir,
          env: { PATH: process.env.PATH, HOME: dir, CODEMCP_CONFIG: config, CODEMCP_SMOKE: code,
            CODEMCP_WORKER_BIN: wkBin, XDG_CONFIG_HOME: dir },
        });
        let stdout = '', stderr = '';
        child.stdout.on('data', (d) => (stdout += d));
        child.stderr.on('data', (d) => (stderr += d));
        child.on('close', (codeExit) => resolve({ code: codeExit, stdout, stderr }));
      });
      clearInterval(watch);
      fs.rmSync(dir, { recursive: true, force: true });
      assert.equal(out.code, 0, out.stderr + out.stdout);
      if (created) {
        assert.ok(seen > 0, 'the sandbox waiter was never seen');
        assert.deepEqual([...dumpable], [], 'a sandbox waiter was dumpable (readable by the same user)');
      }
      const r = JSON.parse(out.stdout).result;
      assert.equal(r.uid, 1000);
      assert.ok(r.pids.every((p) => p <= 3), String(r.pids));
      assert.match(r.sock, /^err:/);
      assert.match(r.shadow, /^err:/);
      assert.equal(r.caps, '0000000000000000');
      assert.equal(r.seccomp, '2');
    } finally {
      if (created) execFileSync('userdel', [user], { stdio: 'pipe' });
    }
  });
});

describe('fail closed', () => {
  test('a kernel that refuses user namespaces stops codemcp at start, with what to do', async (t) => {
    // A user namespace of our own in which user.max_user_namespaces is 0: the gateway's
    // probe meets exactly what an AppArmor or sysctl restriction looks like.
    const probe = spawn('unshare', ['-Ur', 'true']);
    const ok = await new Promise((r) => probe.on('close', (c) => r(c === 0)).on('error', () => r(false)));
    if (!ok) {
      t.skip('unshare -Ur is not available here');
      return;
    }
    const dir = tempDir('codemcp-sbx-closed-');
    const config = writeConfig(dir, {});
    const sh = (iso) => new Promise((resolve) => {
      const child = spawn('unshare', ['-Ur', 'sh', '-c',
        'echo 0 > /proc/sys/user/max_user_namespaces && exec "$0"', CODEMCP_BIN], {
        env: { PATH: process.env.PATH, CODEMCP_CONFIG: config, CODEMCP_SMOKE: 'result = 5',
          CODEMCP_WORKER_BIN: WORKER_BIN, HOME: dir, ...(iso ? { CODEMCP_ISOLATION: iso } : {}) },
      });
      let stdout = '', stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    const closed = await sh(null);
    assert.equal(closed.code, 1, closed.stderr);
    assert.match(closed.stderr, /cannot create the worker sandbox/);
    assert.match(closed.stderr, /max_user_namespaces/);
    assert.match(closed.stderr, /CODEMCP_ISOLATION=host/);
    assert.equal(closed.stdout, '', 'no program ran');
    const host = await sh('host');
    assert.equal(host.code, 0, host.stderr);
    assert.equal(JSON.parse(host.stdout).result, 5);
    assert.match(host.stderr, /CODEMCP_ISOLATION=host: agent code runs WITHOUT a sandbox/);
  });
});
