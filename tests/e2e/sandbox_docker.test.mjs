// The escape suite in CODEMCP_ISOLATION=docker: the attack programs of sandbox.test.mjs
// (escape_cases.mjs) sent to workers in containers of a real Docker daemon (or Podman's
// Docker-compatible service: DOCKER_HOST), each checked by the property it threatens. Run by
// docker_isolation.sh (skips with 77 only where no daemon can run).
//
// What differs from the sandbox, and why the property is checked as it is here:
// - The worker is the container's PID 1 (the sandbox has its own PID 1 and the worker as 2):
//   "only its own processes" is the container's PID namespace; reading /proc/1/mem reads
//   itself, which is no escape, so only other processes' mem is asserted unreadable.
// - The container runs as a uid of its own (CODEMCP_ROOT_UID_BASE + its place in the id range
//   for a root gateway) with the image's own /etc: "the host's files are
//   out of reach" is the host's paths being absent, and /etc/passwd not being the host's.
// - Landlock: the worker applies it in a container when the engine's seccomp profile lets
//   its syscalls through (Docker 20.10 and Podman 4.3 do); what it protects (no write outside
//   /tmp) is checked by its effect (the writes test), which the read-only root holds without it.
// - The worker's own seccomp filter (src/worker/seal.c) applies in the container as in the
//   sandbox: the syscall, subprocess and socket cases expect the same refusals.
// Not carried over, with the reason:
// - CODEMCP_SANDBOX_RO/_RW, CODEMCP_SANDBOX_NET=host and the encoder model bind: sandbox
//   settings; a container gets no host path at all (docker mode has CODEMCP_DOCKER_NETWORK).
// - "as an unprivileged user": docker mode needs the daemon's socket, i.e. root's power.
// - "a kernel that refuses user namespaces": docker mode does not use them; its fail-closed
//   case is an unreachable daemon (docker_isolation.test.mjs).
// - /etc/alternatives: the container's /etc is the image's (read-only root, writes test).
// tenants.test.mjs (sessions of one gateway against each other): each session here is a
// container of its own, so process groups, priorities, kill(0), abstract Unix names
// (network namespace) and SysV IPC (IPC namespace) are the container's alone; what is shared
// is the image's files (file locks: the case below); each container runs as a host uid of its
// own for a root gateway (per-user kernel budgets such as pipe buffer pages are its own:
// docker_isolation.test.mjs), while inotify, file locks and memfd are refused by the worker's
// filter as in the sandbox. The run-level cases (threads left by a run, CPU time, timeout_ms above
// the maximum) are the worker's and the gateway's, the same in every isolation.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  connectClient, tempDir, writeConfig, servers, ms, sleep, waitFor, descendants, pidAlive,
  REPO, CODEMCP_BIN,
} from './lib.mjs';
import {
  hostileSetup, IDENTITY, secretsProgram, writesProgram, networkProgram, assertNetworkRefused, SYSCALLS,
  assertSyscallsRefused, signalsProgram, policyBypassProgram, assertPolicyHeld, assertSubprocessRefused, subprocessProgram, FORK_BOMB, EXHAUSTION,
  LEAVE_AND_HIDE, PIDS, sessionSpyProgram,
} from './escape_cases.mjs';
import { engine, workerContainers, withDockerSessions } from './docker_lib.mjs';

const SECRET = 'dsbx-secret-' + crypto.randomBytes(8).toString('hex');
const IN_WORKER = '/opt/codemcp/codemcp-worker'; // src/run/worker_image.h
const PIDS_LIMIT = 48;

function run(h, code, extra = {}) {
  return h.client.callTool({ name: 'execute_python', arguments: { code, ...extra } }, undefined,
    { timeout: ms(180000) });
}

async function attempt(h, code, extra) {
  const r = await run(h, code, extra);
  assert.equal(r.isError, false, JSON.stringify(r).slice(0, 3000));
  return r.structuredContent.result;
}

describe('CODEMCP_ISOLATION=docker against hostile code', { timeout: ms(600000) }, () => {
  let h, fx, home, config, memFile, gw, mem;

  before(async () => {
    fx = await hostileSetup('codemcp-dsbx-', SECRET);
    ({ home, config, memFile } = fx);
    h = await connectClient({
      config, shared: true, limit: ms(60000),
      env: { HOME: home, GATEWAY_API_KEY: SECRET, CODEMCP_ISOLATION: 'docker',
        CODEMCP_DOCKER_PIDS_LIMIT: String(PIDS_LIMIT), CODEMCP_DOCKER_MEMORY: '512',
        CODEMCP_WORKER_MEMORY_MB: '384' },
    });
    await h.client.listTools();
    await attempt(h, 'result = memory_read_graph()'); // the memory server is up, the worker too
    gw = h.pid;
    mem = descendants(gw).find((p) => p.comm.startsWith('node'))?.pid;
    assert.ok(mem, 'no memory server under the gateway');
  });

  after(async () => {
    fx?.close();
    await h?.close();
  });

  test('it sees only its container\'s processes, not as root, with no capabilities, under seccomp', async () => {
    const r = await attempt(h, IDENTITY);
    assert.ok(r.pids.length <= 3 && r.pids.includes(1), `other processes are visible: ${r.pids}`);
    assert.ok(!r.pids.includes(gw) && !r.pids.includes(mem));
    assert.notEqual(r.uid, 0);
    assert.notEqual(r.gid, 0);
    assert.deepEqual(r.groups.filter((g) => g === 0), []);
    assert.equal(r.cap_eff, '0000000000000000');
    assert.equal(r.cap_prm, '0000000000000000');
    assert.equal(r.cap_bnd, '0000000000000000');
    assert.equal(r.no_new_privs, '1');
    assert.equal(r.seccomp, '2');
    assert.deepEqual(r.ifaces, ['lo'], 'an empty network namespace has only loopback');
    assert.equal(r.cwd, '/tmp');
  });

  test('no secret is in reach: environ of gateway and upstream, config, home, the host\'s files', async () => {
    const paths = [
      `/proc/${gw}/environ`, `/proc/${mem}/environ`, `/proc/${gw}/cmdline`, `/proc/${gw}/mem`,
      `/proc/${mem}/fd/0`, config, memFile, path.join(home, '.bashrc'), home, '/etc/shadow',
      path.join(REPO, 'README.md'), CODEMCP_BIN, '/var/run/docker.sock', '/run/docker.sock',
    ];
    const r = await attempt(h, secretsProgram(paths, SECRET));
    assert.deepEqual(r.leak, [], `the secret leaked through ${r.leak}`);
    assert.deepEqual(r.tokens, [], 'a worker token is readable in a process environment');
    assert.ok(!JSON.stringify(r.env).includes(SECRET));
    assert.ok(!('CODEMCP_WORKER_TOKEN' in r.env), 'the worker token stayed in the environment');
    for (const p of paths) assert.match(r.got[p], /^err:/, `${p} was readable: ${r.got[p]}`);
    // Its own /proc/<pid>/mem is itself; every other process's must be closed.
    const self = Object.keys(r.got).filter((k) => /^\/proc\/\d+\/mem$/.test(k));
    const open = self.filter((k) => r.got[k].startsWith('ok:'));
    assert.ok(open.length <= 1, `other processes' memory is readable: ${open}`);
  });

  test('writes land only in its own /tmp; the worker binary, config and home stay untouched', async () => {
    fs.rmSync(path.join(REPO, 'dsbx-escape'), { force: true });
    const targets = ['/x', '/etc/x', '/usr/lib/x', '/opt/codemcp/x', IN_WORKER, '/dev/x', '/proc/x',
      '/var/tmp/x', '/run/codemcp-control/x', config, path.join(home, '.bashrc'),
      path.join(REPO, 'dsbx-escape')];
    const r = await attempt(h, writesProgram(targets, IN_WORKER));
    for (const t of targets) assert.match(r[t], /^err:/, `${t} was writable: ${r[t]}`);
    assert.match(r.chmod, /^err:/);
    assert.equal(r['/tmp/ok'], 'ok:written');
    assert.equal(fs.readFileSync(path.join(home, '.bashrc'), 'utf8'), `export TOKEN=${SECRET}\n`);
    assert.ok(!fs.readFileSync(config, 'utf8').includes('pwned'));
    assert.ok(!fs.existsSync(path.join(REPO, 'dsbx-escape')));
  });

  test('no network: TCP, UDP and IPv6 to the host\'s loopback servers, AF_UNIX anywhere', async () => {
    const r = await attempt(h, networkProgram(fx.ports()));
    assertNetworkRefused(r);
    await sleep(200);
    assert.deepEqual(fx.tcpSeen, []);
    assert.deepEqual(fx.udpSeen, []);
  });

  test('ptrace, process_vm_readv, mount, unshare, setns, keyctl, bpf, io_uring and friends are refused', async () => {
    const r = await attempt(h, SYSCALLS);
    assertSyscallsRefused(r);
  });

  test('it cannot signal the gateway or the upstream; its own state survives kill(-1)', async () => {
    await attempt(h, 'kept = 41\nresult = 0');
    const r = await attempt(h, signalsProgram({ gateway: gw, memory: mem }));
    for (const k of ['gateway', 'memory']) assert.match(r[k], /^err:ESRCH$/, `${k} pid was reachable: ${r[k]}`);
    await sleep(300);
    assert.ok(pidAlive(gw), 'the gateway died');
    assert.ok(pidAlive(mem), 'the memory server died');
    assert.equal(await attempt(h, 'result = kept + 1'), 42, 'the worker did not survive');
  });

  test('the policy cannot be bypassed through the upstream\'s stdin or the gateway\'s stdout', async () => {
    const r = await attempt(h, policyBypassProgram(mem, gw));
    await assertPolicyHeld(r, memFile);
  });

  test('subprocesses are denied by default (execve refused)', async () => {
    const r = await attempt(h, subprocessProgram(IN_WORKER));
    assertSubprocessRefused(r);
  });

  test('a fork bomb stops at the pids limit; the gateway and the next run survive', async () => {
    const r = await attempt(h, FORK_BOMB);
    assert.equal(r.err, 'EAGAIN', JSON.stringify(r));
    assert.ok(r.forked < PIDS_LIMIT, `forked ${r.forked} processes under CODEMCP_DOCKER_PIDS_LIMIT=${PIDS_LIMIT}`);
    assert.ok(pidAlive(gw));
    assert.equal(await attempt(h, 'result = 7'), 7);
  });

  test('memory and /tmp exhaustion fail cleanly; the next run works', async () => {
    const r = await attempt(h, EXHAUSTION);
    assert.equal(r.mem, 'err:MemoryError');
    assert.match(r.tmp, /^err:(ENOSPC|EFBIG)$/);
    assert.equal(await attempt(h, 'result = 8'), 8);
  });

  test('processes a run leaves behind end with it', async () => {
    const r1 = await attempt(h, LEAVE_AND_HIDE);
    assert.notEqual(r1.rewound, 'written', 'a run could rewind ns_last_pid and hide its leftovers');
    assert.ok(r1.pids.length >= 2, `the detached grandchild did not start: ${r1.pids}`);
    const r2 = await attempt(h, PIDS);
    assert.deepEqual(r2, [1], 'a process outlived the run that started it');
  });

  test('a hard-killed run takes its container with it; the next run gets a new one', async () => {
    const [before] = await workerContainers(gw);
    assert.ok(before, 'no worker container');
    const r = await run(h, 'import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(300)\nwhile True:\n    try:\n        time.sleep(0.05)\n    except BaseException:\n        pass',
      { timeout_ms: 1000 });
    assert.equal(r.isError, true);
    const gone = await waitFor(async () => (await engine('GET', `/containers/${before.Id}/json`)).status === 404, ms(30000), 200);
    assert.ok(gone, 'the killed run\'s container is still there');
    assert.equal(await attempt(h, 'result = 9'), 9, 'the replacement worker answers');
  });

  test('no host directory is mounted but its own control socket directory, which is empty once connected', async () => {
    // Mounts of the kernel's own file systems and the image's overlay are the container; any
    // other is a host file: only the control directory and the files the engine writes.
    const r = await attempt(h, `import os
own = ("proc", "sysfs", "tmpfs", "devpts", "mqueue", "cgroup", "cgroup2", "overlay", "shm")
result = {"ctl": sorted(os.listdir("/run/codemcp-control")),
          "host": sorted({l.split()[1] for l in open("/proc/self/mounts") if l.split()[2] not in own})}`);
    assert.deepEqual(r.ctl, [], 'the worker\'s socket is unlinked once it connected, and no other is there');
    // Podman also writes /etc/passwd and /etc/group when the container's uid (its own per slot
    // for a root gateway) is not in the image's: the image's files plus that uid.
    const engineFiles = ['/etc/hostname', '/etc/hosts', '/etc/resolv.conf', '/run/.containerenv', '/etc/passwd', '/etc/group'];
    assert.deepEqual(r.host.filter((m) => m !== '/run/codemcp-control' && !engineFiles.includes(m)), []);
    assert.ok(r.host.includes('/run/codemcp-control'));
  });
});

describe('the sandbox knobs that apply in a container', { timeout: ms(600000) }, () => {
  test('CODEMCP_SANDBOX_SUBPROCESS=1 allows subprocesses there too, still no socket', async () => {
    const h = await connectClient({ config: writeConfig(tempDir('codemcp-dsbx-sub-'), {}), limit: ms(60000),
      env: { CODEMCP_ISOLATION: 'docker', CODEMCP_SANDBOX_SUBPROCESS: '1' } });
    try {
      const r = await attempt(h, `import subprocess, socket
p = subprocess.run(["/bin/sh", "-c", "echo sub-out; id -u"], capture_output=True, text=True)
try:
    socket.socket(); sock = "made"
except OSError as e:
    sock = e.errno
result = {"out": p.stdout, "sock": sock}`);
      assert.match(r.out, /^sub-out\n\d+\n$/);
      assert.equal(r.sock, 13, 'socket() refused (EACCES) while the container has no network');
    } finally {
      await h.close();
    }
  });
});

describe('sessions in containers', { timeout: ms(600000) }, () => {
  test('two HTTP sessions see neither each other\'s variables, processes nor memory', async () => {
    await withDockerSessions(['a', 'b'], async ([a, b]) => {
      await attempt(a, `secret_a = ${JSON.stringify(SECRET)}\nresult = 1`);
      const r = await attempt(b, sessionSpyProgram(SECRET));
      assert.deepEqual(r.found, []);
      assert.equal(r.has_var, false);
      // file locks on the image's shared files: no channel between the containers
      const lock = 'import fcntl, errno\ntry:\n    fcntl.flock(open("/usr/lib/os-release"), fcntl.LOCK_EX | fcntl.LOCK_NB)\n    result = "locked"\nexcept OSError as e:\n    result = errno.errorcode[e.errno]';
      const la = await attempt(a, lock);
      const lb = await attempt(b, lock);
      assert.notEqual(la, 'locked', 'flock on a file the containers share is allowed');
      assert.notEqual(lb, 'locked');
      assert.equal(await attempt(a, 'result = secret_a'), SECRET, 'session A keeps its variables');
    });
  });
});
