// Cold start (CODEMCP_PROTOTYPE_EARLY, on by default): the prototype (the process every
// session's worker is forked from) starts with the gateway, beside the upstreams, in the
// background (SCHED_IDLE) — its interpreter start-up must not take the CPU the upstreams'
// start (which initialize waits for) needs — and is moved back to the gateway's policy before
// it forks any session: no session runs in the background. When the gateway could not move it
// back (no CAP_SYS_NICE, RLIMIT_NICE 0), or with the setting off, it starts once the upstreams
// settled. Each case looks at the processes from outside.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { RawClient, ms, tempDir, waitFor, writeConfig, servers } from './lib.mjs';

const HOST = process.env.CODEMCP_ISOLATION === 'host';
// Moving a process out of SCHED_IDLE needs CAP_SYS_NICE (or an RLIMIT_NICE a plain user rarely has).
const rootOnly = process.getuid() !== 0 ? 'moving a process out of SCHED_IDLE needs CAP_SYS_NICE (root)' : false;
const UPSTREAM_DELAY_MS = 3000;

const SCHED_OTHER = 0;
const SCHED_IDLE = 5;

/** A process's scheduling policy (field 41 of /proc/PID/stat). */
function policyOf(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]);
}

/** The program's own scheduling policy, as the session's worker sees it. */
const OWN_POLICY = 's = open("/proc/self/stat").read()\nresult = int(s[s.rindex(")") + 2:].split()[38])';

/** A gateway whose one upstream answers initialize only after UPSTREAM_DELAY_MS. */
function gateway(wrapPrefix, env = {}) {
  const dir = tempDir('codemcp-cold-');
  const marker = path.join(dir, 'slow');
  fs.writeFileSync(marker, ''); // present: fake_upstream.py delays its initialize answer
  const config = writeConfig(dir, { slow: servers.fake(['--slow-restart', `${marker}=${ms(UPSTREAM_DELAY_MS)}`]) });
  return new RawClient({ config, home: dir, wrapPrefix, env: { CODEMCP_LOG: 'debug', ...env } });
}

async function ownPolicy(c) {
  await c.initialize('2025-11-25', ms(30000));
  const r = await c.request('tools/call', { name: 'execute_python', arguments: { code: OWN_POLICY } },
    { limit: ms(60000) });
  assert.equal(r.result?.isError, false, JSON.stringify(r).slice(0, 2000));
  return r.result.structuredContent.result;
}

/** The prototype started only once the upstream was ready, and a session runs in the foreground. */
async function startsAfterUpstreams(c) {
  assert.equal(await ownPolicy(c), SCHED_OTHER, 'a session runs in the background');
  assert.doesNotMatch(c.stderr, /in the background/, c.stderrTail());
  const up = c.stderr.indexOf('slow: ready in');
  const proto = c.stderr.indexOf('prototype started');
  assert.ok(up >= 0 && proto > up, 'the prototype started before the upstream was ready');
}

describe('the prototype starts beside the upstreams', () => {
  test('it starts before the upstream answers, in the background, and sessions run in the foreground', { timeout: ms(90000), skip: rootOnly }, async () => {
    const c = gateway();
    const started = await waitFor(() => c.exit || c.stderr.match(/prototype started \(pid (\d+)/), ms(20000));
    assert.ok(started && started[1], c.stderrTail());
    assert.doesNotMatch(c.stderr, /slow: ready in/, 'the prototype started only once the upstream was ready');
    assert.equal(policyOf(c.pid), SCHED_OTHER);
    assert.equal(policyOf(Number(started[1])), SCHED_IDLE, 'the early prototype is not in the background');
    assert.equal(await ownPolicy(c), SCHED_OTHER, 'a session runs in the background');
    assert.match(c.stderr, /slow: ready in/);
    if (!HOST) // the sandbox's first process, still alive, moved back with everything below it
      assert.equal(policyOf(Number(started[1])), SCHED_OTHER);
  });

  test('a gateway that could not move it back starts it once the upstreams settled, in the foreground', { timeout: ms(90000), skip: rootOnly }, async () => {
    const c = gateway(['prlimit', '--nice=0:0', 'setpriv', '--inh-caps=-sys_nice', '--bounding-set=-sys_nice']);
    await startsAfterUpstreams(c);
  });

  test('with CODEMCP_PROTOTYPE_EARLY=off it starts once the upstreams settled', { timeout: ms(90000) }, async () => {
    await startsAfterUpstreams(gateway(undefined, { CODEMCP_PROTOTYPE_EARLY: 'off' }));
  });
});
