// The audit log (CODEMCP_AUDIT_LOG) and the JSON ordinary log (CODEMCP_LOG_FORMAT=json), end
// to end: the real binary, the real worker, the fake upstream. One JSON line per tool call
// decision (allowed, denied with its rule, dry run) and per program the validator refused;
// argument keys only unless CODEMCP_AUDIT_ARGS=1, and then redacted; nothing a program sends
// can forge a line; SIGHUP after `mv` starts a new file and loses no line; the worker never
// holds the file's descriptor. No timing is asserted.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import { PYTHON, Proc, connectClient, connectHttp, tempDir, servers, ms, waitFor, descendants,
  runEnvelope, untilDescribed } from './lib.mjs';
import { DELETE_THING, ECHO, MIRROR } from '../fixtures/fake_tools.mjs';

const TOOLS = [ECHO, MIRROR, DELETE_THING];

const RULES = [
  { name: 'no-forbidden-echo', server: 'fake', tool: 'echo', args: { text: { eq: 'forbidden' } },
    effect: 'deny', message: 'that text is forbidden' },
  { name: 'echo-rest', server: 'fake', tool: 'echo', effect: 'allow' },
];

function setup(prefix) {
  const dir = tempDir(prefix, { shared: true });
  const tools = path.join(dir, 'tools.json');
  fs.writeFileSync(tools, JSON.stringify({ tools: TOOLS }));
  const config = path.join(dir, 'mcp.json');
  fs.writeFileSync(config, JSON.stringify({
    policy: { rules: RULES },
    mcp: { fake: servers.fake(['--tools-file', tools, '--resource', 'mem://doc/one=12']) },
  }, null, 2));
  return { dir, config, audit: path.join(dir, 'audit.log') };
}

/** Every line of the files (in order), each parsed: a line that does not parse fails. */
function auditLines(...files) {
  const out = [];
  for (const f of files) {
    let text = '';
    try {
      text = fs.readFileSync(f, 'latin1');
    } catch {
      continue;
    }
    assert.ok(text === '' || text.endsWith('\n'), `${f} ends in half a line: ${JSON.stringify(text.slice(-200))}`);
    for (const line of text.split('\n').slice(0, -1)) {
      assert.match(line, /^[\x20-\x7e]+$/, `an audit line is printable ASCII: ${JSON.stringify(line)}`);
      let v;
      assert.doesNotThrow(() => { v = JSON.parse(line); }, `not JSON: ${JSON.stringify(line)}`);
      assert.equal(typeof v, 'object');
      out.push(v);
    }
  }
  return out;
}

/** Waits until the lines of run `run` number at least n (the writer is a thread of its own). */
async function linesOf(run, n, ...files) {
  let got = [];
  await waitFor(() => (got = auditLines(...files).filter((l) => l.run === run)).length >= n, ms(15000));
  return got;
}

const run = runEnvelope;
const ready = (client) => untilDescribed(client, 'fake_echo');

const RUN_ID = 'from codemcp_rt import runstate\nrid = runstate.current().run_id\n';

/** `codemcp start` with one principal, alice, auditing to s.audit. */
async function startHttp(s, env = {}) {
  const tokens = path.join(s.dir, 'tokens');
  fs.writeFileSync(tokens, 'alice tok-alice-0123456789abcdef\n', { mode: 0o600 });
  const proc = new Proc({ args: ['start', '-p', '0'], config: s.config, home: s.dir, shared: true,
    env: { CODEMCP_HTTP_TOKENS_FILE: tokens, CODEMCP_AUDIT_LOG: s.audit, ...env } });
  const m = await waitFor(() => proc.exit || proc.stderr.match(/serving MCP over Streamable HTTP at (\S+)/), ms(20000));
  assert.ok(m && m[1], proc.stderr);
  const client = await connectHttp(m[1], 'tok-alice-0123456789abcdef');
  await ready(client);
  return { proc, client };
}

describe('audit log of a codemcp start gateway', () => {
  let s, gw;
  before(async () => {
    s = setup('codemcp-audit-');
    gw = await startHttp(s);
  });
  after(async () => {
    await gw?.client.end().catch(() => {});
    gw?.proc.child.kill('SIGTERM');
    await gw?.proc.waitExit(ms(15000)).catch(() => {});
  });

  test('an allowed write, a denied call with its rule, a dry-run write, a validation rejection', async () => {
    let e = await run(gw.client, `${RUN_ID}r = fake_delete_thing(id="thing-value-1").result()\nresult = rid`);
    assert.ok(e.ok !== false && e.result, JSON.stringify(e));
    let [w] = await linesOf(e.result, 1, s.audit);
    assert.equal(w.event, 'tool_call');
    assert.equal(w.principal, 'alice');
    assert.equal(typeof w.session, 'number');
    assert.equal(w.server, 'fake');
    assert.equal(w.tool, 'delete_thing');
    assert.equal(w.function, 'fake_delete_thing');
    assert.equal(w.access, 'write');
    assert.equal(w.decision, 'allow');
    assert.equal(w.outcome, 'ok');
    assert.equal(w.dry_run, false);
    assert.equal(typeof w.duration_ms, 'number');
    assert.ok(!Number.isNaN(Date.parse(w.time)), w.time);
    assert.deepEqual(w.arg_keys, ['id']);
    assert.ok(!('args' in w), JSON.stringify(w));

    // built at run time: the gateway decides it (a literal is refused before the run)
    e = await run(gw.client, `${RUN_ID}try:
    fake_echo(text="forbid" + "den").result()
except ToolError as err:
    pass
result = rid`);
    const [d] = await linesOf(e.result, 1, s.audit);
    assert.equal(d.decision, 'deny', JSON.stringify(d));
    assert.equal(d.rule, 'no-forbidden-echo');
    assert.equal(d.outcome, 'denied');
    assert.match(d.reason, /that text is forbidden/);
    assert.equal(d.access, 'read');

    e = await run(gw.client, `${RUN_ID}r = fake_delete_thing(id="thing-value-2").result()\nresult = rid`,
      { dry_run: true });
    [w] = await linesOf(e.result, 1, s.audit);
    assert.equal(w.decision, 'dry_run', JSON.stringify(w));
    assert.equal(w.dry_run, true);
    assert.equal(w.outcome, 'dry_run');
    assert.equal(w.access, 'write');

    const before = auditLines(s.audit).length;
    e = await run(gw.client, 'fake_echo()');
    assert.equal(e.error_kind, 'validation', JSON.stringify(e));
    let v;
    await waitFor(() => (v = auditLines(s.audit).slice(before).find((l) => l.event === 'validation')), ms(15000));
    assert.ok(v, 'no validation line');
    assert.equal(v.principal, 'alice');
    assert.equal(v.decision, 'deny');
    assert.match(v.reason, /text/);
    assert.match(v.run, /^r\d+/);
    assert.equal(v.outcome, 'validation');

    // arguments the gateway refuses before any run is made: a line each, with no run
    const refusals = [
      [{ code: 5 }, /"code"/],
      [{ code: 'print(1)', timeout_ms: -1 }, /timeout_ms/],
      [{ code: 'print(1)', dry_run: 'yes' }, /dry_run/],
      [{ code: 'print(1)', allow_mutations: 'fake_delete_thing' }, /allow_mutations/],
      [{ code: 'print(1)', unknown_arg: 1 }, /unknown argument/],
    ];
    for (const [args, why] of refusals) {
      const n = auditLines(s.audit).length;
      const r = await gw.client.callTool({ name: 'execute_python', arguments: args }, undefined, { timeout: ms(30000) });
      assert.equal(r.isError, true, JSON.stringify(r));
      let a;
      await waitFor(() => (a = auditLines(s.audit).slice(n).find((l) => l.event === 'validation')), ms(15000));
      assert.ok(a, `no audit line for the refused arguments ${JSON.stringify(args)}`);
      assert.equal(a.outcome, 'invalid_arguments', JSON.stringify(a));
      assert.equal(a.decision, 'deny');
      assert.equal(a.principal, 'alice');
      assert.equal(a.run, null);
      assert.match(a.reason, why);
    }

    const raw = fs.readFileSync(s.audit, 'utf8');
    assert.ok(!raw.includes('thing-value-1') && !raw.includes('thing-value-2'), 'argument values are not written by default');
    assert.equal(fs.statSync(s.audit).mode & 0o777, 0o600);
  });

  test('newlines, NULs, ANSI escapes and huge names in tool names, keys and values cannot forge a line', async () => {
    const evil = '\\n{\\"event\\":\\"tool_call\\",\\"forged\\":true}\\r\\n\\x00\\x1b[31m\\x1b]0;title\\x07\\u2028\\x85\\x9b2J';
    const e = await run(gw.client, `${RUN_ID}import codemcp_rt.client as c
evil = "${evil}"
key = evil.replace("\\x00", "")  # a NUL in a key is refused before any decision (a transport error)
calls = [("echo", {"text": evil}), ("echo" + evil, {"text": "x"}), ("mirror", {"k" + key: evil}),
         (evil, {key: 1}), ("delete_thing", {"id": evil}), ("t" * 20000, {"k" * 20000: 1})]
for tool, args in calls:
    try:
        c.call("fake", tool, args)
    except Exception:
        pass
print(evil)
result = {"rid": rid, "n": len(calls), "echo": fake_echo(text=evil).result()}`);
    assert.ok(e.result, JSON.stringify(e));
    const lines = await linesOf(e.result.rid, e.result.n + 1, s.audit);
    assert.equal(lines.length, e.result.n + 1, JSON.stringify(lines));
    for (const l of auditLines(s.audit)) {
      assert.ok(!('forged' in l), JSON.stringify(l));
      assert.ok(['tool_call', 'validation'].includes(l.event), JSON.stringify(l));
    }
    const bytes = fs.readFileSync(s.audit);
    for (const l of bytes.toString('latin1').split('\n'))
      assert.ok(l.length < 4096, `a line of ${l.length} bytes: a program's long names are cut`);
    assert.ok(!bytes.includes(0x1b) && !bytes.includes(0) && !bytes.includes(0x0d), 'raw control bytes in the file');
    const names = lines.map((l) => l.tool);
    assert.ok(names.some((t) => t.startsWith('echo\n{"event"')), JSON.stringify(names));
    const keys = lines.flatMap((l) => l.arg_keys);
    assert.ok(keys.some((k) => k.startsWith('k\n{"event"') && k.includes('\x1b[31m')), JSON.stringify(keys));
  });

  test('a resource read is audited as a read of resources/read', async () => {
    const e = await run(gw.client, `${RUN_ID}got = read_resource("mem://doc/one")
try:
    read_resource("nowhere://x").result()
except ToolError:
    pass
result = rid`);
    assert.ok(e.result, JSON.stringify(e));
    const lines = await linesOf(e.result, 2, s.audit);
    const ok = lines.find((l) => l.outcome === 'ok');
    assert.ok(ok, JSON.stringify(lines));
    assert.equal(ok.tool, 'resources/read');
    assert.equal(ok.server, 'fake');
    assert.equal(ok.access, 'read');
    assert.equal(ok.decision, 'allow');
    assert.deepEqual(ok.arg_keys, ['uri']);
    const failed = lines.find((l) => l.outcome !== 'ok'); // the one server answers with an error
    assert.ok(failed, JSON.stringify(lines));
    assert.equal(failed.outcome, 'upstream_error');
  });

  test('the audit file descriptor is not visible in the worker', async () => {
    const e = await run(gw.client, `${RUN_ID}import os
seen = []
for fd in os.listdir("/proc/self/fd"):
    try:
        seen.append(os.readlink("/proc/self/fd/" + fd))
    except OSError:
        pass
fake_echo(text="from the fd check").result()
result = {"rid": rid, "fds": seen}`);
    assert.ok(e.result, JSON.stringify(e));
    const [l] = await linesOf(e.result.rid, 1, s.audit);
    assert.equal(l.tool, 'echo');
    const leak = e.result.fds.filter((t) => t.includes('audit'));
    assert.deepEqual(leak, [], `the worker holds: ${JSON.stringify(e.result.fds)}`);
    // and from outside: the gateway holds it, none of its children (workers, upstreams) does
    const holds = (pid) => {
      try {
        return fs.readdirSync(`/proc/${pid}/fd`).some((fd) => {
          try {
            return fs.readlinkSync(`/proc/${pid}/fd/${fd}`) === s.audit;
          } catch {
            return false;
          }
        });
      } catch {
        return false;
      }
    };
    assert.ok(holds(gw.proc.pid), 'the gateway does not hold the audit file');
    const kids = descendants(gw.proc.pid);
    assert.ok(kids.length >= 2, JSON.stringify(kids));
    const holders = kids.filter((k) => holds(k.pid)).map((k) => `${k.pid} ${k.comm}`);
    assert.deepEqual(holders, [], 'children holding the audit file');
  });

  test('SIGHUP after mv starts a new file and no line is lost', async () => {
    const rotated = s.audit + '.1';
    const calls = (tag) => `${RUN_ID}for i in range(3):
    fake_echo(text="${tag}-%d" % i).result()
result = rid`;
    const first = await run(gw.client, calls('before'));
    await linesOf(first.result, 3, s.audit);
    const total = auditLines(s.audit).length;
    fs.renameSync(s.audit, rotated);
    gw.proc.child.kill('SIGHUP');
    await waitFor(() => fs.existsSync(s.audit), ms(15000));
    assert.ok(fs.existsSync(s.audit), 'SIGHUP opened no new file');
    assert.equal(fs.statSync(s.audit).mode & 0o777, 0o600);
    const second = await run(gw.client, calls('after'));
    const fresh = await linesOf(second.result, 3, s.audit);
    assert.equal(fresh.length, 3);
    const all = auditLines(rotated, s.audit);
    assert.equal(all.length, total + 3, 'every line is in one of the two files');
    assert.equal(auditLines(rotated).filter((l) => l.run === second.result).length, 0);
    assert.ok(!gw.proc.exit, `the gateway stopped on SIGHUP: ${gw.proc.stderrTail()}`);
  });
});

describe('audit log with CODEMCP_AUDIT_ARGS=1 (stdio)', () => {
  let s, h;
  before(async () => {
    s = setup('codemcp-audit-args-');
    h = await connectClient({ config: s.config, shared: true,
      env: { CODEMCP_AUDIT_LOG: s.audit, CODEMCP_AUDIT_ARGS: '1' } });
    await ready(h.client);
  });
  after(async () => h?.close());

  test('values are written, secrets redacted', async () => {
    const secret = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';
    const e = await run(h.client, `${RUN_ID}fake_mirror(path="/repo/docs", note="visible-value é✓😀", api_token="hunter2-pass", blob="token ${secret}").result()
result = rid`);
    assert.ok(e.result, JSON.stringify(e));
    const [l] = await linesOf(e.result, 1, s.audit);
    assert.equal(l.principal, 'local');
    assert.deepEqual(l.arg_keys.sort(), ['api_token', 'blob', 'note', 'path']);
    assert.equal(l.args.note, 'visible-value é✓😀', JSON.stringify(l)); // written as \\u escapes
    assert.equal(l.args.path, '/repo/docs');
    assert.notEqual(l.args.api_token, 'hunter2-pass');
    const raw = fs.readFileSync(s.audit, 'utf8');
    assert.ok(!raw.includes('hunter2-pass'), raw);
    assert.ok(!raw.includes(secret), raw);
  });
});

test('syslog: each line is one authpriv.info datagram to the unix socket CODEMCP_AUDIT_LOG=syslog:PATH names', { timeout: ms(120000) }, async () => {
  const s = setup('codemcp-audit-syslog-');
  const sock = path.join(s.dir, 'log.sock'), got = path.join(s.dir, 'datagrams');
  // a syslog daemon's socket: every datagram received is written as one line of `got`
  const daemon = spawn(PYTHON, ['-c', `
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print("ready", flush=True)
with open(sys.argv[2], "ab", buffering=0) as out:
    while True:
        out.write(s.recv(1 << 20).replace(b"\\n", b"<NL>") + b"\\n")
`, sock, got], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve) => daemon.stdout.once('data', resolve));
  const h = await connectClient({ config: s.config, env: { CODEMCP_AUDIT_LOG: `syslog:${sock}` } });
  try {
    await ready(h.client);
    const e = await run(h.client, `${RUN_ID}fake_echo(text="one").result()\ntry:\n    fake_echo(text="forbid" + "den").result()\nexcept ToolError:\n    pass\nresult = rid`);
    assert.ok(e.result, JSON.stringify(e));
    const head = /^<86>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d codemcp-audit\[\d+\]: (.*)$/;
    const mine = () => {
      let text = '';
      try { text = fs.readFileSync(got, 'latin1'); } catch { return []; }
      return text.split('\n').slice(0, -1).map((d) => {
        const m = d.match(head);
        assert.ok(m, `not a syslog datagram of codemcp-audit: ${JSON.stringify(d)}`);
        return JSON.parse(m[1]);
      }).filter((l) => l.run === e.result);
    };
    await waitFor(() => mine().length >= 2, ms(15000));
    const lines = mine();
    assert.equal(lines.length, 2, JSON.stringify(lines));
    assert.deepEqual(lines.map((l) => [l.event, l.tool, l.decision, l.outcome]),
      [['tool_call', 'echo', 'allow', 'ok'], ['tool_call', 'echo', 'deny', 'denied']]);
    // the syslog socket is no door: a program neither holds a descriptor peered with it nor
    // reaches its path (with CODEMCP_ISOLATION=host it reaches the path: this case fails)
    const door = await run(h.client, `import os, socket
peers = []
for fd in os.listdir("/proc/self/fd"):
    try:
        d = socket.fromfd(int(fd), socket.AF_UNIX, socket.SOCK_DGRAM)
    except OSError:
        continue
    try:
        peers.append(str(d.getpeername()))
    except OSError:
        pass
    d.close()
try:
    c = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    c.sendto(b"<86>forged", ${JSON.stringify(sock)})
    reach = "sent"
except OSError as e:
    reach = type(e).__name__
result = {"peers": peers, "reach": reach}`);
    assert.ok(door.result, JSON.stringify(door));
    assert.deepEqual(door.result.peers.filter((p) => p.includes('log.sock')), [], JSON.stringify(door.result));
    assert.notEqual(door.result.reach, 'sent', 'a program wrote into the audit syslog socket');
  } finally {
    await h.close();
    daemon.kill('SIGKILL');
  }
});

test('a full disk: lines lost are counted and reported, the gateway goes on', { timeout: ms(120000) }, async () => {
  const s = setup('codemcp-audit-full-');
  const h = await connectClient({ config: s.config, env: { CODEMCP_AUDIT_LOG: '/dev/full' } });
  try {
    await ready(h.client);
    for (let i = 0; i < 2; i++) {
      const e = await run(h.client, 'result = [fake_echo(text="x%d" % i).result() for i in range(20)][-1]');
      assert.ok(e.result, JSON.stringify(e));
    }
    const lost = /[1-9]\d* audit lines lost so far: .* [1-9]\d* in writes that failed/;
    await waitFor(() => lost.test(h.stderr()), ms(15000));
    assert.match(h.stderr(), lost);
  } finally {
    await h.close();
  }
});

test('a destination that takes nothing: the queue fills, runs go on, lines dropped are counted', { timeout: ms(180000) }, async () => {
  const s = setup('codemcp-audit-stuck-');
  const fifo = path.join(s.dir, 'audit.fifo');
  execFileSync('mkfifo', ['-m', '600', fifo]);
  // a reader that never reads: the writer thread blocks once the pipe is full
  const reader = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  const h = await connectClient({ config: s.config, env: { CODEMCP_AUDIT_LOG: fifo } });
  try {
    await ready(h.client);
    // 64 keys of 128 bytes: ~9 kB a line, so a few hundred calls fill the 4 MiB queue
    const e = await run(h.client, `import codemcp_rt.client as c
args = {("k%02d" % i) + "x" * 125: i for i in range(64)}
ps = [c.call("fake", "mirror", args) for _ in range(900)]
result = len([p.result() for p in ps])`);
    assert.equal(e.result, 900, JSON.stringify(e).slice(0, 2000));
    const dropped = /audit lines lost so far: [1-9]\d* while the queue was full/;
    await waitFor(() => dropped.test(h.stderr()), ms(20000));
    assert.match(h.stderr(), dropped);
    const after = await run(h.client, 'result = fake_echo(text="still here").result()');
    assert.ok(after.result, JSON.stringify(after));
  } finally {
    fs.closeSync(reader); // the blocked write fails (EPIPE): the gateway can end
    await h.close();
  }
});

test('CODEMCP_LOG_FORMAT=json: every line of the log is one JSON object', { timeout: ms(120000) }, async () => {
  const s = setup('codemcp-logjson-');
  const h = await connectClient({ config: s.config,
    env: { CODEMCP_LOG_FORMAT: 'json', CODEMCP_LOG: 'debug' } });
  try {
    await ready(h.client);
    const e = await run(h.client, `import os, sys
evil = "\\n{\\"forged\\": 1}\\x1b[31m\\x00end"
print(evil, file=sys.stderr)
os.write(2, b"bad bytes \\xff\\xfe\\n")
try:
    fake_echo(text="forbid" + "den" + evil).result()
except ToolError:
    pass
result = fake_echo(text=evil).result()`);
    assert.ok(e, JSON.stringify(e));
  } finally {
    await h.close();
  }
  const lines = h.stderr().split('\n').filter((l) => l.length);
  assert.ok(lines.length > 5, h.stderr());
  for (const line of lines) {
    let v;
    assert.doesNotThrow(() => { v = JSON.parse(line); }, `not JSON: ${JSON.stringify(line)}`);
    assert.deepEqual(Object.keys(v), ['time', 'level', 'subsystem', 'message'], line);
    assert.ok(!Number.isNaN(Date.parse(v.time)), line);
    assert.ok(['error', 'warn', 'info', 'debug', 'trace'].includes(v.level), line);
    assert.ok(!('forged' in v));
  }
  assert.ok(lines.some((l) => JSON.parse(l).subsystem === 'worker'), 'the worker\'s lines are there too');
});
