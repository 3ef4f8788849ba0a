// CODEMCP_ISOLATION=docker end to end: the real gateway, the real worker in a container made
// through the Docker Engine API, a real upstream (server-everything). Run by
// docker_isolation.sh once a daemon answers. What the container may do is asked from inside
// (capabilities, network, root file system, memory) and what exists is asked from the daemon
// (containers labelled codemcp.worker), never assumed.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import {
  connectClient, tempDir, writeConfig, servers, ms, waitFor, pidAlive, CODEMCP_BIN,
} from './lib.mjs';
import { engine, workerContainers, withDockerSessions } from './docker_lib.mjs';
import { FILL_PIPES, PIPE_PROBE } from '../fixtures/pipe_budget.mjs';

const SECRET = 'dock-secret-' + Math.random().toString(16).slice(2);

/** The gateway's control-socket directories under a runtime directory. */
function socketDirs(dir, pid) {
  return fs.readdirSync(dir).filter((n) => n.startsWith(`codemcp-docker-${pid}-`));
}

function run(h, code, extra = {}) {
  return h.client.callTool({ name: 'execute_python', arguments: { code, ...extra } }, undefined,
    { timeout: ms(180000) });
}

function gateway(dir, env = {}, shared = false) {
  const config = writeConfig(dir, { everything: servers.everything() });
  // The first start may build the worker image: the start timeout runs after it.
  return connectClient({ config, env: { CODEMCP_ISOLATION: 'docker', ...env }, limit: ms(60000), shared });
}

describe('CODEMCP_ISOLATION=docker', () => {
  let h, dir;
  before(async () => {
    dir = tempDir('codemcp-dockiso-', { shared: true });
    h = await gateway(dir, { CODEMCP_DOCKER_MEMORY: '256', CODEMCP_WORKER_MEMORY_MB: '0', DOCK_SECRET: SECRET }, true);
  });
  after(async () => { await h?.close(); });

  test('the README smoke runs in a container', { timeout: ms(240000) }, async () => {
    const r = await run(h, 'r = [everything_get_sum(a=i, b=1) for i in range(5)]\nresult = [str(x) for x in r]');
    assert.equal(r.isError, false, JSON.stringify(r) + h.stderr().slice(-3000));
    assert.deepEqual(r.structuredContent.result.map((s) => s.match(/is (\d+)/)[1]), ['1', '2', '3', '4', '5']);
    // It ran in a container of this gateway's, labelled so.
    const mine = await workerContainers(h.pid);
    assert.equal(mine.length, 1, JSON.stringify(mine));
    assert.equal(mine[0].State, 'running');
  });

  test('hardening: no capabilities, no new privileges, not root, read-only root, tmpfs /tmp', { timeout: ms(120000) }, async () => {
    const r = await run(h, `
import os
st = dict(l.split(':\\t', 1) for l in open('/proc/self/status').read().splitlines() if ':\\t' in l)
try:
    open('/var/tmp/written', 'w'); root = 'writable'  # world-writable unless the root is read-only
except OSError as e:
    root = e.errno
root_ro = [l.split()[3].split(',')[0] for l in open('/proc/self/mounts') if l.split()[1] == '/']
open('/tmp/x', 'w').write('ok')
result = {'eff': st['CapEff'].strip(), 'bnd': st['CapBnd'].strip(), 'nnp': st['NoNewPrivs'].strip(),
          'uid': os.getuid(), 'root': root, 'root_ro': root_ro, 'tmp': open('/tmp/x').read(),
          'worker_w': os.access('/opt/codemcp/codemcp-worker', os.W_OK)}
`);
    assert.equal(r.isError, false, JSON.stringify(r));
    const v = r.structuredContent.result;
    assert.equal(v.eff, '0000000000000000');
    assert.equal(v.bnd, '0000000000000000');
    assert.equal(v.nnp, '1');
    assert.notEqual(v.uid, 0);
    // The root is mounted read-only; a write is refused by it (EROFS) or first by the
    // worker's Landlock (EACCES: Podman mounts a writable tmpfs on /var/tmp).
    assert.deepEqual(v.root_ro, ['ro']);
    assert.ok(v.root === 30 || v.root === 13, `a write outside /tmp: ${v.root}`);
    assert.equal(v.tmp, 'ok');
    assert.equal(v.worker_w, false);
  });

  test('no network: only a loopback interface, and no route out', { timeout: ms(120000) }, async () => {
    const r = await run(h, `
import socket
ifaces = [l.split(':')[0].strip() for l in open('/proc/net/dev').read().splitlines()[2:]]
try:
    socket.create_connection(('1.1.1.1', 53), timeout=3); out = 'connected'
except OSError as e:
    out = type(e).__name__
result = {'ifaces': ifaces, 'out': out}
`);
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.deepEqual(r.structuredContent.result.ifaces, ['lo']);
    assert.notEqual(r.structuredContent.result.out, 'connected');
  });

  test('the host is out of reach: no gateway or upstream process, no config, no secret', { timeout: ms(120000) }, async () => {
    const r = await run(h, `
import os, re
seen, found = [], []
for p in os.listdir('/proc'):
    if not p.isdigit():
        continue
    for f in ('cmdline', 'environ'):
        try:
            v = open('/proc/%s/%s' % (p, f), 'rb').read().decode('utf8', 'replace')
        except OSError:
            continue
        if f == 'cmdline':
            seen.append(v.replace('\\0', ' ').strip())
        if ${JSON.stringify(SECRET)} in v:
            found.append('/proc/%s/%s' % (p, f))
        # the worker's token came in the container's environment: wiped before agent code runs
        if f == 'environ' and re.search(r'CODEMCP_WORKER_TOKEN=[0-9a-f]{8,}', v):
            found.append('token in /proc/%s/environ' % p)
result = {'procs': seen, 'found': found, 'config': os.path.exists(${JSON.stringify(dir)}),
          'env': ${JSON.stringify(SECRET)} in repr(dict(os.environ))}
`);
    assert.equal(r.isError, false, JSON.stringify(r));
    const v = r.structuredContent.result;
    assert.deepEqual(v.found, []);
    assert.equal(v.env, false);
    assert.equal(v.config, false, 'the gateway\'s config directory is not visible');
    assert.ok(v.procs.length > 0 && v.procs.every((c) => !c.includes('server-everything') && !c.includes(CODEMCP_BIN)),
      JSON.stringify(v.procs));
  });

  test('a session\'s runs take turns; the SDK calls inside a run overlap', { timeout: ms(180000) }, async () => {
    // The fake upstream writes the most tools/call it handled at once: overlap is seen there,
    // not guessed from how long the runs took.
    const d = tempDir('codemcp-dockiso-peak-');
    const peakFile = path.join(d, 'peak');
    const g = await connectClient({
      config: writeConfig(d, { fake: servers.fake(['--peak-file', peakFile]) }),
      env: { CODEMCP_ISOLATION: 'docker' }, limit: ms(60000),
    });
    const peak = () => Number(fs.existsSync(peakFile) ? fs.readFileSync(peakFile, 'utf8') : 0);
    try {
      // one interpreter per session: its second program waits behind the first
      const one = 'result = str(fake_sleep(ms=1000).result())';
      const [a, b] = await Promise.all([run(g, one), run(g, one)]);
      assert.match(JSON.stringify(a.structuredContent), /slept 1000 ms/, JSON.stringify(a));
      assert.match(JSON.stringify(b.structuredContent), /slept 1000 ms/, JSON.stringify(b));
      assert.equal(peak(), 1, 'two programs of one session ran at once');
      const r = await run(g, `ps = [fake_sleep(ms=2000) for _ in range(5)]
result = sum("slept 2000 ms" in str(p.result()) for p in ps)`);
      assert.equal(r.structuredContent?.result, 5, JSON.stringify(r));
      assert.equal(peak(), 5, 'the run\'s five calls did not reach the upstream at once');
    } finally {
      await g.close();
    }
  });

  test('the run timeout ends a run; the next run works', { timeout: ms(180000) }, async () => {
    const r = await run(h, 'while True:\n    pass', { timeout_ms: 2000 });
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.match(JSON.stringify(r.structuredContent), /time/i);
    const next = await run(h, 'result = 7');
    assert.equal(next.structuredContent?.result, 7, JSON.stringify(next));
  });

  test('the memory cap (CODEMCP_DOCKER_MEMORY=256) kills a run that exceeds it', { timeout: ms(180000) }, async () => {
    const r = await run(h, 'chunks = []\nfor i in range(64):\n    chunks.append(bytearray(16 << 20))\nresult = "survived"');
    assert.equal(r.isError, true, JSON.stringify(r));
    console.log('memory cap:', JSON.stringify(r.structuredContent).slice(0, 400));
    assert.match(JSON.stringify(r.structuredContent), /signal 9/);
    const next = await run(h, 'result = "back"');
    assert.equal(next.structuredContent?.result, 'back', JSON.stringify(next));
  });
});

describe('sessions and failures', () => {
  test('two HTTP sessions get two containers, which see neither each other nor each other\'s variables', { timeout: ms(240000) }, async () => {
    await withDockerSessions(['a', 'b'], async (clients, proc) => {
      const host = async (c, code) => {
        const r = await run(c, code);
        assert.equal(r.isError, false, JSON.stringify(r));
        return r.structuredContent.result;
      };
      const a = await host(clients[0], `secret_a = ${JSON.stringify(SECRET)}\nimport socket\nresult = socket.gethostname()`);
      const b = await host(clients[1], `import socket, os\nresult = [socket.gethostname(), 'secret_a' in globals(), sorted(p for p in os.listdir('/proc') if p.isdigit())]`);
      assert.notEqual(a, b[0], 'each session in its own container');
      assert.equal(b[1], false);
      assert.ok(b[2].length <= 3, `only its own processes: ${b[2]}`);
      assert.ok((await workerContainers(proc.pid)).length >= 2);
      assert.equal(await host(clients[0], 'result = secret_a'), SECRET);
    });
  });

  // The kernel keeps some budgets per uid outside every namespace (pipe buffer pages here,
  // fs.pipe-user-pages-soft): containers that shared one uid (nobody) shared them.
  test('each session\'s container runs as a uid of its own: one that fills the per-user pipe budget leaves the other its own', { timeout: ms(240000) }, async () => {
    if (process.getuid() !== 0) return; // a gateway that is not root keeps its own uid for every container
    await withDockerSessions(['a', 'b'], async (clients) => {
      const host = async (c, code) => {
        const r = await run(c, code);
        assert.equal(r.isError, false, JSON.stringify(r));
        return r.structuredContent.result;
      };
      const grow = PIPE_PROBE + 'result = [os.getuid(), grow]';
      const [uidA] = await host(clients[0], grow);
      const [uidB, before] = await host(clients[1], grow);
      assert.notEqual(uidA, uidB, 'two sessions, one uid');
      assert.ok(uidA !== 65534 && uidB !== 65534, `nobody: ${uidA}, ${uidB}`);
      assert.equal(before, 'ok');
      const took = await host(clients[0], FILL_PIPES);
      assert.ok(took >= 32, `the session took only ${took} MiB of pipe buffers`);
      assert.deepEqual(await host(clients[0], grow), [uidA, 'EPERM'], 'held to its own budget');
      assert.deepEqual(await host(clients[1], grow), [uidB, 'ok'], `the other session lost its pipe budget (${took} MiB taken)`);
    });
  });

  // What the kernel still charges to a container's uid when it is gone (pipe pages freed late,
  // ucounts) must not become the next session's: a slot's sessions take turns over its ids.
  test('a slot\'s next session runs its container as another uid than the session before it', { timeout: ms(240000) }, async () => {
    if (process.getuid() !== 0) return; // a gateway that is not root keeps its own uid for every container
    await withDockerSessions(['a'], async ([a], proc, connect) => {
      const uid = async (c) => {
        const r = await run(c, 'import os\nresult = os.getuid()');
        assert.equal(r.isError, false, JSON.stringify(r));
        return r.structuredContent.result;
      };
      const first = await uid(a);
      await a.transport.terminateSession();
      // One worker slot: the next session has it once the first one's container is gone.
      const b = await connect('b');
      const second = await uid(b);
      assert.notEqual(second, first, `the slot's next session runs as ${second}, the uid of the session before`);
      assert.ok(first !== 65534 && second !== 65534, `nobody: ${first}, ${second}`);
    }, { CODEMCP_WORKERS: '1' });
  });

  test('the knobs: CODEMCP_DOCKER_NETWORK, _READONLY, _PIDS_LIMIT and _CPUS change what a worker gets', { timeout: ms(240000) }, async () => {
    const dir = tempDir('codemcp-dockiso-knobs-');
    const k = await gateway(dir, { CODEMCP_DOCKER_NETWORK: 'bridge', CODEMCP_DOCKER_READONLY: '0',
      CODEMCP_DOCKER_PIDS_LIMIT: '40', CODEMCP_DOCKER_CPUS: '0.5' });
    try {
      const r = await run(k, `
import threading
ifaces = [l.split(':')[0].strip() for l in open('/proc/net/dev').read().splitlines()[2:]]
open('/var/tmp/written', 'w').write('x')  # world-writable, on the root file system
stop, started = threading.Event(), 0
try:
    for _ in range(200):
        threading.Thread(target=stop.wait, daemon=True).start()
        started += 1
except RuntimeError:
    pass
stop.set()
result = {'ifaces': sorted(ifaces), 'threads': started}
`);
      assert.equal(r.isError, false, JSON.stringify(r));
      const v = r.structuredContent.result;
      assert.ok(v.ifaces.includes('eth0'), JSON.stringify(v.ifaces));
      assert.ok(v.threads > 0 && v.threads < 40, `threads started under a pids limit of 40: ${v.threads}`);
      const [c] = await workerContainers(k.pid);
      const info = await engine('GET', `/containers/${c.Id}/json`);
      assert.equal(info.body.HostConfig.NanoCpus, 5e8);
      assert.equal(info.body.HostConfig.ReadonlyRootfs, false);
    } finally {
      await k.close();
    }
  });

  test('CODEMCP_DOCKER_IMAGE: a named image is used; a missing one fails the run, saying so', { timeout: ms(240000) }, async () => {
    const imgs = (await engine('GET', '/images/json')).body;
    // Podman names a built image docker.io/library/NAME, an imported one localhost/NAME
    const bare = (t) => t.replace(/^(localhost|docker\.io\/library)\//, '');
    const built = imgs.flatMap((i) => i.RepoTags || []).map(bare)
      .find((t) => t.startsWith('codemcp-worker:'));
    assert.ok(built, 'the worker image was built on first use');
    const dir = tempDir('codemcp-dockiso-img-');
    const named = await gateway(dir, { CODEMCP_DOCKER_IMAGE: built });
    try {
      const r = await run(named, 'result = 3');
      assert.equal(r.structuredContent?.result, 3, JSON.stringify(r));
      const [c] = await workerContainers(named.pid);
      assert.equal(bare(c.Image), built);
    } finally {
      await named.close();
    }
    const missing = await gateway(dir, { CODEMCP_DOCKER_IMAGE: 'codemcp-no-such-image:none' });
    try {
      const r = await run(missing, 'result = 4');
      assert.equal(r.isError, true, JSON.stringify(r));
      assert.match(JSON.stringify(r.structuredContent), /CODEMCP_DOCKER_IMAGE=codemcp-no-such-image:none: no such image/);
    } finally {
      await missing.close();
    }
  });

  test('an unreachable daemon stops codemcp at start, saying what to do', { timeout: ms(60000) }, async () => {
    const dir = tempDir('codemcp-dockiso-closed-');
    const config = writeConfig(dir, {});
    const out = await new Promise((resolve) => {
      const child = spawn(CODEMCP_BIN, [], { env: { ...process.env, CODEMCP_CONFIG: config, HOME: dir,
        CODEMCP_SMOKE: 'result = 5', CODEMCP_ISOLATION: 'docker', DOCKER_HOST: `unix://${dir}/no.sock` } });
      let stdout = '', stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    assert.notEqual(out.code, 0, out.stderr);
    assert.equal(out.stdout, '', 'no program ran');
    assert.match(out.stderr, /Docker daemon at .*no\.sock does not answer/);
    assert.match(out.stderr, /DOCKER_HOST/);
  });
});

describe('containers never outlive the gateway', () => {
  test('none left after a clean exit', { timeout: ms(240000) }, async () => {
    const dir = tempDir('codemcp-dockiso-');
    const h = await gateway(dir, { XDG_RUNTIME_DIR: dir });
    const r = await run(h, 'result = 1');
    assert.equal(r.structuredContent?.result, 1, JSON.stringify(r));
    const pid = h.pid;
    assert.equal((await workerContainers(pid)).length, 1);
    assert.equal(socketDirs(dir, pid).length, 1, 'the control sockets live in the runtime directory');
    await h.close();
    await waitFor(async () => !pidAlive(pid), ms(20000));
    assert.deepEqual(await workerContainers(pid), []);
    assert.deepEqual(socketDirs(dir, pid), []);
  });

  test('after a SIGKILLed gateway, the next start removes its containers', { timeout: ms(300000) }, async () => {
    const dir = tempDir('codemcp-dockiso-');
    // A container labelled as a gone gateway's worker that would run for ten minutes by itself.
    const stale = await engine('POST', '/containers/create', {
      Image: 'debian:bookworm-slim', Cmd: ['sleep', '600'], NetworkDisabled: true,
      // as codemcp's own: Podman's default limits cannot be set without CAP_SYS_RESOURCE
      HostConfig: { Ulimits: [{ Name: 'nofile', Soft: 1024, Hard: 1024 }, { Name: 'nproc', Soft: 4096, Hard: 4096 }] },
      Labels: { 'codemcp.worker': '1', 'codemcp.gateway': 'gone-boot:1:1' },
    });
    assert.equal(stale.status, 201, JSON.stringify(stale.body));
    assert.equal((await engine('POST', `/containers/${stale.body.Id}/start`)).status, 204);
    // A real gateway SIGKILLed while its worker runs a long program.
    const h1 = await gateway(dir, { XDG_RUNTIME_DIR: dir });
    const pid1 = h1.pid;
    const long = run(h1, 'import time\ntime.sleep(600)').catch(() => null);
    await waitFor(async () => (await workerContainers(pid1)).length === 1, ms(60000));
    process.kill(pid1, 'SIGKILL');
    await long;
    await waitFor(async () => !pidAlive(pid1), ms(20000));
    await h1.close();
    assert.equal(socketDirs(dir, pid1).length, 1, 'a SIGKILL leaves the sockets directory');
    const h2 = await gateway(dir, { XDG_RUNTIME_DIR: dir });
    try {
      const r = await run(h2, 'result = 2');
      assert.equal(r.structuredContent?.result, 2, JSON.stringify(r));
      assert.deepEqual(await workerContainers(pid1), []);
      assert.deepEqual(socketDirs(dir, pid1), [], 'the next start removed it');
      const left = await engine('GET', `/containers/${stale.body.Id}/json`);
      assert.equal(left.status, 404, 'the stale container was removed');
    } finally {
      await engine('DELETE', `/containers/${stale.body.Id}?force=1`);
      await h2.close();
    }
  });
});

// The sockets directories live in the runtime directory, /tmp when XDG_RUNTIME_DIR is unset:
// there another local user names what they like. A start removes only gone gateways'
// directories of its own user's; a look-alike of another user's, or a link to somewhere else,
// stays as it is.
describe('the control sockets directory', () => {
  test('another local user\'s look-alikes of a gone gateway\'s directory are left alone', { timeout: ms(240000) }, async (t) => {
    if (process.getuid() !== 0) return t.skip('needs root to create a second user');
    const name = `cmcpdk${process.pid % 100000}`;
    const add = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', name], { encoding: 'utf8' });
    if (add.status !== 0 && add.status !== 9) return t.skip(`useradd failed: ${add.stderr}`); // 9: left over
    try {
      const uid = Number(spawnSync('id', ['-u', name], { encoding: 'utf8' }).stdout.trim());
      const dir = tempDir('codemcp-dockiso-');
      fs.chmodSync(dir, 0o1777); // as /tmp
      // No pid 4194303 or 4194302 runs (the kernel's largest): both look like gone gateways'.
      const theirs = path.join(dir, 'codemcp-docker-4194303-1');
      fs.mkdirSync(path.join(theirs, 'w-1'), { recursive: true });
      fs.writeFileSync(path.join(theirs, 'w-1', 'c.sock'), 'theirs');
      for (const p of [theirs, path.join(theirs, 'w-1'), path.join(theirs, 'w-1', 'c.sock')]) fs.chownSync(p, uid, uid);
      fs.chmodSync(theirs, 0o700);
      const victim = tempDir('codemcp-dockiso-victim-');
      fs.mkdirSync(path.join(victim, 'w-1'));
      fs.writeFileSync(path.join(victim, 'w-1', 'c.sock'), 'root\'s');
      fs.chmodSync(victim, 0o700);
      const link = path.join(dir, 'codemcp-docker-4194302-1');
      fs.symlinkSync(victim, link);
      fs.lchownSync(link, uid, uid);
      // A worker's socket lives from its container's start until its worker connects.
      const socketModes = new Set();
      const look = setInterval(() => {
        for (const n of fs.readdirSync(dir).filter((d) => /^codemcp-docker-\d+-\d+$/.test(d) && !d.startsWith('codemcp-docker-419430'))) {
          try {
            for (const w of fs.readdirSync(path.join(dir, n))) socketModes.add(fs.statSync(path.join(dir, n, w, 'c.sock')).mode & 0o777);
          } catch { /* not there (yet, or any more) */ }
        }
      }, 2);
      const h = await gateway(dir, { XDG_RUNTIME_DIR: dir }).catch((e) => {
        clearInterval(look);
        throw e;
      });
      try {
        const r = await run(h, 'result = 3').finally(() => clearInterval(look));
        assert.equal(r.structuredContent?.result, 3, JSON.stringify(r));
        assert.equal(fs.readFileSync(path.join(theirs, 'w-1', 'c.sock'), 'utf8'), 'theirs');
        assert.equal(fs.readFileSync(path.join(victim, 'w-1', 'c.sock'), 'utf8'), 'root\'s');
        // this gateway's own: private, and its worker's socket born 0600
        const mine = socketDirs(dir, h.pid).map((n) => path.join(dir, n));
        assert.equal(mine.length, 1);
        assert.equal(fs.lstatSync(mine[0]).mode & 0o777, 0o700);
        for (const w of fs.readdirSync(mine[0])) assert.equal(fs.statSync(path.join(mine[0], w)).mode & 0o777, 0o700);
        assert.deepEqual([...socketModes], [0o600], 'a worker\'s socket is born 0600');
      } finally {
        await h.close();
      }
    } finally {
      spawnSync('userdel', [name]);
    }
  });
});
