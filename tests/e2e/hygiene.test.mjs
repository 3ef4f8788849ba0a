// Process hygiene: what the gateway starts dies with it or with the run that
// started it, shutdown on a signal is fast even with a stubborn upstream, and same-user
// processes cannot read the gateway's memory or environment.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import {
  PYTHON,
  Proc,
  RawClient,
  describeProcs,
  ms,
  pidAlive,
  processTable,
  readPidFile,
  servers,
  sleep,
  tempDir,
  waitFor,
  writeConfig,
} from './lib.mjs';

/** Processes anywhere on the machine whose command line contains `marker` (zombies aside). */
function withMarker(marker) {
  const out = [];
  for (const p of processTable().values()) {
    if (p.state === 'Z') continue;
    try {
      if (fs.readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').split('\0').join(' ').includes(marker)) out.push(p);
    } catch {
      // raced with exit
    }
  }
  return out;
}

async function executePython(c, code, extra = {}) {
  const r = await c.request('tools/call', { name: 'execute_python', arguments: { code, ...extra } }, { limit: ms(60000) });
  assert.ok(r.result, JSON.stringify(r));
  return r.result.structuredContent || JSON.parse(r.result.content[0].text);
}

test('a run that starts sleep and then times out leaves no process behind (plain, setsid, double fork)', async () => {
  const home = tempDir('codemcp-hyg-');
  // Host isolation: there a run's processes could outlive it (a sandbox's PID namespace ends
  // with its worker anyway, and refuses execve by default).
  const c = new RawClient({ config: writeConfig(home, {}), home, env: { CODEMCP_ISOLATION: 'host' } });
  await c.initialize();
  // A unique duration marks our sleeps in the process table.
  const marker = String(600 + (process.pid % 1000) / 1000);
  const code = `
import os, subprocess, time
subprocess.Popen(['sleep', '${marker}'])
subprocess.Popen(['sleep', '${marker}'], start_new_session=True)
if os.fork() == 0:
    if os.fork() == 0:
        os.setsid()
        os.execvp('sleep', ['sleep', '${marker}'])
    os._exit(0)
time.sleep(100)
`;
  const env = await executePython(c, code, { timeout_ms: 1500 });
  assert.equal(env.error_kind || (env.isError && 'error'), 'timeout', JSON.stringify(env));
  const gone = await waitFor(() => withMarker(`sleep ${marker}`).length === 0, ms(3000));
  assert.ok(gone, `left behind: ${describeProcs(withMarker(`sleep ${marker}`))}`);
  // The worker lived on: the session still runs code.
  const again = await executePython(c, 'result = 1 + 1');
  assert.equal(again.result, 2, JSON.stringify(again));
  await c.kill();
});

test('kill -9 of the gateway leaves no upstream, no upstream\'s child and no worker behind (PR_SET_PDEATHSIG, the guard)', async () => {
  const home = tempDir('codemcp-hyg-');
  const pidFile = path.join(home, 'up.pid');
  // An upstream that neither reads nor writes: nothing but a signal ends it (the fake's
  // --stubborn dies of EPIPE on its stderr once the gateway is gone).
  const holdPid = path.join(home, 'hold.pid');
  const wrappedPid = path.join(home, 'wrapped.pid');
  const holdFile = path.join(home, 'hold.py');
  fs.writeFileSync(
    holdFile,
    `import json, os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
open(sys.argv[1], 'w').write(str(os.getpid()))
for line in sys.stdin:
    m = json.loads(line)
    r = {'initialize': {'protocolVersion': m.get('params', {}).get('protocolVersion'), 'capabilities': {'tools': {}},
                        'serverInfo': {'name': 'hold', 'version': '0'}}, 'tools/list': {'tools': []}}.get(m.get('method'))
    if r is not None and 'id' in m:
        try:
            print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': r}), flush=True)
        except OSError:
            pass
while True:
    time.sleep(600)
`,
  );
  const hold = holdFile;
  const config = writeConfig(home, {
    stub: servers.fake(['--stubborn', '--pid-file', pidFile]),
    hold: { type: 'local', command: [PYTHON, hold, holdPid] },
    // `sh -c` forks the real server (as `npx` forks `node`): PDEATHSIG reaches sh only.
    wrapped: { type: 'local', command: ['/bin/sh', '-c', `${PYTHON} ${hold} ${wrappedPid}; exit 0`] },
    everything: servers.everything(),
  });
  const c = new RawClient({ config, home });
  await c.initialize();
  await executePython(c, 'result = 1'); // the worker is up
  const upPid = await waitFor(() => readPidFile(pidFile), ms(10000));
  assert.ok(upPid, 'the fake upstream did not start');
  const quiet = await waitFor(() => readPidFile(holdPid), ms(10000));
  assert.ok(quiet, 'the silent upstream did not start');
  const grandchild = await waitFor(() => readPidFile(wrappedPid), ms(10000));
  assert.ok(grandchild, 'the upstream under sh -c did not start');
  const kids = c.snapshot();
  assert.ok(kids.length >= 3, `expected upstreams and a worker under codemcp, got ${describeProcs(kids)}`);
  process.kill(c.pid, 'SIGKILL');
  await c.waitExit(ms(5000));
  const left = await waitFor(() => {
    const alive = kids.filter((k) => pidAlive(k.pid));
    return alive.length === 0 ? [] : null;
  }, ms(3000));
  assert.ok(left, `still running after kill -9 of codemcp: ${describeProcs(kids.filter((k) => pidAlive(k.pid)))}`);
  assert.ok(!pidAlive(upPid), 'the stubborn upstream survived');
  assert.ok(!pidAlive(quiet), 'the silent upstream survived');
  assert.ok(!pidAlive(grandchild), 'the server that sh -c started survived');
});

test('SIGTERM with an upstream that ignores SIGTERM and stdin EOF: exit 0 well within a second', async () => {
  const home = tempDir('codemcp-hyg-');
  const pidFile = path.join(home, 'up.pid');
  const c = new RawClient({ config: writeConfig(home, { stub: servers.fake(['--stubborn', '--pid-file', pidFile]) }), home });
  await c.initialize();
  const upPid = await waitFor(() => readPidFile(pidFile), ms(10000));
  assert.ok(upPid);
  await sleep(200); // let it settle
  c.snapshot();
  const t0 = process.hrtime.bigint();
  process.kill(c.pid, 'SIGTERM');
  const ex = await c.waitExit(ms(5000));
  const took = Number(process.hrtime.bigint() - t0) / 1e6;
  assert.equal(ex.code, 0, `exit ${JSON.stringify(ex)}:\n${c.stderrTail()}`);
  assert.ok(!pidAlive(upPid), 'the stubborn upstream survived the shutdown');
  // The goal is 100 ms (Claude Code sends SIGKILL after 100-400 ms); the bound here is generous
  // for loaded machines, the old code took over 2 s (stdin grace 500 ms + SIGTERM grace 1.5 s).
  assert.ok(took < ms(600), `SIGTERM shutdown took ${took.toFixed(0)} ms`);
  console.log(`# SIGTERM shutdown with a stubborn upstream: ${took.toFixed(1)} ms`);
});

test('the gateway is not dumpable: the same user cannot read /proc/<pid>/environ or ptrace it', async (t) => {
  // Needs a second, unprivileged identity: root reads everything. CI runs as root.
  if (process.getuid() !== 0) return t.skip('needs root to create a test user');
  const user = `cmcpdump${process.pid % 100000}`;
  const add = spawnSync('useradd', ['--no-create-home', '--shell', '/usr/sbin/nologin', user]);
  if (add.status !== 0) return t.skip(`useradd failed: ${add.stderr}`);
  try {
    const uid = Number(execFileSync('id', ['-u', user]).toString().trim());
    const home = tempDir('codemcp-hyg-');
    fs.chmodSync(home, 0o755);
    const config = writeConfig(home, {});
    fs.chmodSync(config, 0o644);
    const gw = new Proc({
      args: ['start', '-p', '0'],
      config,
      home,
      env: { HOME: home, CODEMCP_HTTP_TOKEN: 'dump-test-token-0123456789', CODEMCP_ISOLATION: 'host' },
      wrapPrefix: ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--'],
    });
    const up = await waitFor(() => gw.exit || /serving MCP/.test(gw.stderr), ms(20000));
    assert.ok(up && !gw.exit, `codemcp did not start as ${user}:\n${gw.stderrTail()}`);
    const asUser = (args) => spawnSync('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--', ...args]);
    // A control: the same user reads a dumpable process of its own.
    const sleeper = asUser([PYTHON, '-c', 'import os,sys; print(open(f"/proc/{os.getpid()}/environ","rb").read()[:1]!=b"x")']);
    assert.equal(sleeper.status, 0, `control read failed: ${sleeper.stderr}`);
    const r = asUser(['cat', `/proc/${gw.pid}/environ`]);
    assert.notEqual(r.status, 0, 'the gateway environment (CODEMCP_HTTP_TOKEN) was readable by the same user');
    assert.match(r.stderr.toString(), /Permission denied/);
    const m = asUser(['cat', `/proc/${gw.pid}/mem`]);
    assert.notEqual(m.status, 0);
    await gw.kill();
  } finally {
    spawnSync('userdel', [user]);
  }
});
