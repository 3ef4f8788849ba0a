// Prometheus metrics as an operator meets them: a real Prometheus (Debian's `prometheus`,
// started here on a free loopback port with a generated config, bearer token and a 1 s scrape
// interval) scrapes a running `codemcp start`; a known workload of programs runs through the
// MCP SDK client, and Prometheus's HTTP API must show the counters moved by exactly what the
// workload did (tool calls by outcome, runs by outcome, a validation rejection, a denied call,
// upstream answers in the latency histogram). Also: /metrics wants the same bearer token as
// /mcp, CODEMCP_METRICS=off serves nothing, a stdio gateway prints the same families through
// `codemcp metrics` over its admin socket, and `promtool check metrics` accepts the text.
// The Prometheus tests skip only when the `prometheus`/`promtool` binaries are absent (install.sh
// installs them). No timing is asserted.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from './admin_lib.mjs';
import {
  Proc, connectClient, connectHttp, freePort, tempDir, servers, ms, waitFor, writeConfig,
} from './lib.mjs';

const TOKEN = 'metrics-test-token-alice-0123456789abcdef';
const PROMETHEUS = '/usr/bin/prometheus';
const PROMTOOL = '/usr/bin/promtool';
const havePrometheus = fs.existsSync(PROMETHEUS);
const havePromtool = fs.existsSync(PROMTOOL);

const RULES = [
  { name: 'no-secret-echo', server: 'fake', tool: 'echo', args: { text: { eq: 'secret' } },
    effect: 'deny', message: 'that one is secret' },
  { name: 'echo', server: 'fake', tool: 'echo', effect: 'allow' },
  { name: 'preview-sleep', server: 'fake', tool: 'sleep', effect: 'dry_run' },
];

/** The gateway's upstreams: the fake, whose `structured` tool answers after 5 s. */
function gatewayConfig() {
  return { fake: servers.fake(['--slow', 'structured=5000']) };
}

/** The metrics' families: the names of the `# TYPE` lines. */
function families(text) {
  return new Set([...text.matchAll(/^# TYPE (\S+) \S+$/gm)].map((m) => m[1]));
}

/** The value of one series in the text format (labels in the order written), or undefined. */
function sample(text, series) {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

function run(client, code, extra = {}) {
  return client.callTool({ name: 'execute_python', arguments: { code, ...extra } }, undefined,
    { timeout: ms(60000) });
}

function metricsUrl(mcpUrl) {
  return new URL('/metrics', mcpUrl).href;
}

/** `codemcp start -p 0` on the fake upstream under RULES, alice's token; {proc, url}. */
async function startGateway({ env = {}, shared = false } = {}) {
  const home = tempDir('codemcp-metrics-', { shared });
  const tokens = path.join(home, 'tokens');
  fs.writeFileSync(tokens, `alice ${TOKEN}\n`, { mode: 0o600 });
  const config = path.join(home, 'mcp.json');
  fs.writeFileSync(config, JSON.stringify({ policy: { rules: RULES }, mcp: gatewayConfig() }));
  const proc = new Proc({ args: ['start', '-p', '0'], config, home, shared,
    env: { CODEMCP_HTTP_TOKENS_FILE: tokens, ...env } });
  const m = await waitFor(() => proc.exit || proc.stderr.match(/serving MCP over Streamable HTTP at (\S+)/), ms(20000));
  assert.ok(m && m[1], `codemcp start did not come up:\n${proc.stderrTail()}`);
  return { proc, url: m[1] };
}

async function stop(proc) {
  if (proc.exit) return;
  proc.child.kill('SIGTERM');
  await proc.waitExit(ms(15000));
}

describe('GET /metrics on codemcp start', () => {
  const gw = {};
  before(async () => Object.assign(gw, await startGateway({ shared: true })));
  after(() => stop(gw.proc));

  test('needs the bearer token of /mcp', async () => {
    const url = metricsUrl(gw.url);
    const none = await fetch(url);
    assert.equal(none.status, 401, 'no token');
    const wrong = await fetch(url, { headers: { authorization: 'Bearer not-the-token' } });
    assert.equal(wrong.status, 401, 'a wrong token');
    const ok = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(ok.status, 200);
    assert.match(ok.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
    const text = await ok.text();
    for (const f of ['codemcp_tool_calls_total', 'codemcp_runs_started_total',
      'codemcp_runs_finished_total', 'codemcp_run_duration_seconds',
      'codemcp_upstream_call_duration_seconds', 'codemcp_upstream_connected',
      'codemcp_validation_rejections_total', 'codemcp_sessions', 'codemcp_namespaces',
      'codemcp_workers', 'codemcp_worker_spawns_total', 'codemcp_worker_crashes_total',
      'codemcp_worker_recycles_total', 'codemcp_client_bytes_total', 'codemcp_http_requests_total',
      'codemcp_oauth_refreshes_total', 'codemcp_oauth_refresh_failures_total',
      'process_cpu_seconds_total', 'process_resident_memory_bytes']) {
      assert.ok(families(text).has(f), `family ${f} missing:\n${text}`);
    }
    // The two refused scrapes above were counted as 401s.
    assert.ok(sample(text, 'codemcp_http_requests_total{code="401"}') >= 2, text);
    const post = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(post.status, 405);
  });

  test('the text passes promtool check metrics', { skip: !havePromtool && 'promtool is not installed' }, async () => {
    // Something in every family: a program with a tool call first.
    const client = await connectHttp(gw.url, TOKEN);
    try {
      const r = await run(client, 'print(fake_echo(text="hi"))');
      assert.ok(!r.isError, JSON.stringify(r));
    } finally {
      await client.end();
    }
    const text = await (await fetch(metricsUrl(gw.url),
      { headers: { authorization: `Bearer ${TOKEN}` } })).text();
    const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
    assert.equal(r.status, 0, `promtool: ${r.stdout}${r.stderr}\n${text}`);
    assert.equal((r.stdout + r.stderr).trim(), '', `promtool has remarks:\n${r.stdout}${r.stderr}`);
  });
});

test('CODEMCP_METRICS=off serves no /metrics and codemcp metrics says why', async () => {
  const rt = tempDir('codemcp-metrics-rt-');
  const { proc, url } = await startGateway({
    env: { CODEMCP_METRICS: 'off', XDG_RUNTIME_DIR: rt, CODEMCP_INSTANCE_LABEL: 'metrics-off' } });
  try {
    const r = await fetch(metricsUrl(url), { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(r.status, 404);
    const env = { ...process.env, XDG_RUNTIME_DIR: rt };
    delete env.CODEMCP_ADMIN_SOCKET;
    const out = await cli(['metrics', '-i', 'metrics-off'], env);
    assert.equal(out.code, 1, out.stdout + out.stderr);
    assert.match(out.stderr, /metrics are off in this gateway \(CODEMCP_METRICS=off\)/);
    // /mcp is served as before.
    const client = await connectHttp(url, TOKEN);
    await client.end();
  } finally {
    await stop(proc);
  }
});

test('codemcp metrics prints a stdio gateway\'s metrics through its admin socket', async () => {
  const rt = tempDir('codemcp-metrics-rt-');
  const h = await connectClient({ config: writeConfig(rt, gatewayConfig()),
    env: { XDG_RUNTIME_DIR: rt, CODEMCP_INSTANCE_LABEL: 'metrics-e2e', CODEMCP_ENFORCE_MUTATIONS: '1' } });
  const env = { ...process.env, XDG_RUNTIME_DIR: rt };
  delete env.CODEMCP_ADMIN_SOCKET;
  try {
    let r = await run(h.client, 'fake_echo(text="a")\nfake_echo(text="b")\nprint("done")',
      { allow_mutations: ['fake_echo'] });
    assert.ok(!r.isError, JSON.stringify(r));
    // A run leaving a thread behind (under CODEMCP_ENFORCE_MUTATIONS): its worker is recycled.
    r = await run(h.client, 'import threading, time\nthreading.Thread(target=time.sleep, args=(60,), daemon=True).start()');
    assert.ok(!r.isError, JSON.stringify(r));
    // A worker that ends itself in a run: a crash.
    r = await run(h.client, 'import os\nos._exit(3)');
    assert.ok(r.isError, JSON.stringify(r));
    const out = await cli(['metrics', '-i', 'metrics-e2e'], env);
    assert.equal(out.code, 0, out.stderr);
    const text = out.stdout;
    assert.equal(sample(text, 'codemcp_tool_calls_total{server="fake",tool="echo",outcome="ok"}'), 2, text);
    assert.match(text, /^codemcp_runs_finished_total\{principal="[^"]*",outcome="ok"\} 2$/m);
    assert.match(text, /^codemcp_runs_finished_total\{principal="[^"]*",outcome="worker"\} 1$/m);
    assert.equal(sample(text, 'codemcp_worker_recycles_total'), 1, text);
    assert.equal(sample(text, 'codemcp_worker_crashes_total'), 1, text);
    assert.ok(sample(text, 'codemcp_worker_spawns_total') >= 3, text);
    assert.ok(sample(text, 'codemcp_client_bytes_total{transport="stdio",direction="in"}') > 0, text);
    assert.ok(sample(text, 'codemcp_client_bytes_total{transport="stdio",direction="out"}') > 0, text);
    assert.equal(sample(text, 'codemcp_upstream_connected{server="fake"}'), 1, text);
    // The same families as GET /metrics of codemcp start (same config, one scrape).
    const { proc, url } = await startGateway();
    try {
      const http = await (await fetch(metricsUrl(url),
        { headers: { authorization: `Bearer ${TOKEN}` } })).text();
      assert.deepEqual([...families(text)].sort(), [...families(http)].sort());
    } finally {
      await stop(proc);
    }
  } finally {
    await h.close();
  }
});

describe('a real Prometheus scraping codemcp start', { skip: !havePrometheus && 'prometheus is not installed' }, () => {
  let gw, prom, promUrl, dir;

  before(async () => {
    dir = tempDir('codemcp-prom-', { shared: true });
    gw = await startGateway({ shared: true });
    const port = await freePort();
    const target = new URL(gw.url).host;
    fs.writeFileSync(path.join(dir, 'token'), TOKEN);
    fs.writeFileSync(path.join(dir, 'prometheus.yml'), [
      'global:',
      '  scrape_interval: 1s',
      '  scrape_timeout: 1s',
      'scrape_configs:',
      '  - job_name: codemcp',
      '    metrics_path: /metrics',
      '    authorization:',
      '      type: Bearer',
      `      credentials_file: ${path.join(dir, 'token')}`,
      '    static_configs:',
      `      - targets: ['${target}']`,
      '',
    ].join('\n'));
    prom = spawn(PROMETHEUS, [
      `--config.file=${path.join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ], { stdio: ['ignore', 'ignore', 'pipe'] });
    let promErr = '';
    prom.stderr.on('data', (d) => { promErr = (promErr + d).slice(-4000); });
    promUrl = `http://127.0.0.1:${port}`;
    const upNow = await waitFor(async () => {
      const v = await query('up{job="codemcp"}').catch(() => null);
      return v && v.length === 1 && v[0].value[1] === '1';
    }, ms(60000), 200);
    assert.ok(upNow, `Prometheus never scraped codemcp successfully:\n${promErr}`);
  });

  after(async () => {
    if (prom && prom.exitCode === null) {
      prom.kill('SIGTERM');
      await new Promise((r) => prom.once('exit', r));
    }
    if (gw) await stop(gw.proc);
  });

  /** The instant vector of a PromQL query (Prometheus's /api/v1/query). */
  async function query(q) {
    const r = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(q)}`);
    const body = await r.json();
    if (body.status !== 'success') throw new Error(`${q}: ${JSON.stringify(body)}`);
    return body.data.result;
  }

  /** One series' value as Prometheus has it now (0 when it has no such series). */
  async function value(q) {
    const v = await query(q);
    assert.ok(v.length <= 1, `${q}: ${JSON.stringify(v)}`);
    return v.length ? Number(v[0].value[1]) : 0;
  }

  const SERIES = {
    echoOk: 'codemcp_tool_calls_total{server="fake",tool="echo",outcome="ok"}',
    addOk: 'codemcp_tool_calls_total{server="fake",tool="add",outcome="ok"}',
    failIsError: 'codemcp_tool_calls_total{server="fake",tool="fail",outcome="isError"}',
    echoDenied: 'codemcp_tool_calls_total{server="fake",tool="echo",outcome="denied"}',
    sleepDryRun: 'codemcp_tool_calls_total{server="fake",tool="sleep",outcome="dry-run"}',
    structuredTimeout: 'codemcp_tool_calls_total{server="fake",tool="structured",outcome="timeout"}',
    boomError: 'codemcp_tool_calls_total{server="fake",tool="boom",outcome="error"}',
    unknownNotFound: 'codemcp_tool_calls_total{server="unknown",tool="unknown",outcome="not_found"}',
    runsOk: 'codemcp_runs_finished_total{principal="alice",outcome="ok"}',
    runsValidation: 'codemcp_runs_finished_total{principal="alice",outcome="validation"}',
    runsException: 'codemcp_runs_finished_total{principal="alice",outcome="exception"}',
    runsStarted: 'codemcp_runs_started_total{principal="alice"}',
    rejectedProgram: 'codemcp_validation_rejections_total{kind="program"}',
    rejectedArguments: 'codemcp_validation_rejections_total{kind="arguments"}',
    latencyCount: 'codemcp_upstream_call_duration_seconds_count{server="fake"}',
    runSeconds: 'codemcp_run_duration_seconds_count',
  };

  test('counters move by exactly what a known workload did', async () => {
    const before = {};
    for (const [k, q] of Object.entries(SERIES)) before[k] = await value(q);
    const client = await connectHttp(gw.url, TOKEN);
    try {
      // 1 run ok: two echo calls and an add.
      let r = await run(client, 'fake_echo(text="a")\nfake_echo(text="b")\nprint(fake_add(a=1, b=2))');
      assert.ok(!r.isError, JSON.stringify(r));
      // 1 run ok: a tool answering isError, and one answering a JSON-RPC error, both caught.
      r = await run(client, [
        'for f in (fake_fail, fake_boom):',
        '    try:',
        '        f()',
        '    except Exception as e:',
        '        print(type(e).__name__)',
      ].join('\n'));
      assert.ok(!r.isError, JSON.stringify(r));
      // 1 run ok: a call the policy denies, one it answers with a dry-run stub, one that
      // times out (its own timeout_ms under the server's 5 s).
      r = await run(client, [
        'from codemcp_rt import client',
        'try:',  // the text is made at run time: the pre-flight check cannot know it
        '    print(fake_echo(text="".join(["sec", "ret"])))',
        'except Exception as e:',
        '    print("denied", getattr(e, "kind", None))',
        'print(fake_sleep(ms=1))',
        'try:',
        '    client.call("fake", "structured", {}, timeout_ms=300).result()',
        'except Exception as e:',
        '    print("timeout", getattr(e, "kind", None))',
      ].join('\n'));
      assert.ok(!r.isError, JSON.stringify(r));
      assert.match(JSON.stringify(r), /denied denied/);
      assert.match(JSON.stringify(r), /timeout timeout/);
      // 1 run that the pre-flight validator refuses: no such function.
      r = await run(client, 'fake_no_such_tool(x=1)');
      assert.ok(r.isError, JSON.stringify(r));
      assert.match(JSON.stringify(r), /validation|no_such_tool/);
      // 1 run raising: an exception outcome.
      r = await run(client, 'raise ValueError("planned")');
      assert.ok(r.isError, JSON.stringify(r));
      // execute_python arguments that are not valid: refused before a run exists.
      r = await client.callTool({ name: 'execute_python', arguments: { code: 'print(1)', timeout_ms: -5 } },
        undefined, { timeout: ms(60000) }).catch((e) => ({ isError: true, thrown: String(e) }));
      assert.ok(r.isError, JSON.stringify(r));
      // 1 run ok: a call to a tool the catalog does not list, made through the runtime's raw
      // client (the SDK has no such function), refused as not_found.
      r = await run(client, [
        'from codemcp_rt import client',
        'try:',
        '    client.call("fake", "no_such_tool_at_all", {}).result()',
        'except Exception as e:',
        '    print("refused", getattr(e, "kind", type(e).__name__))',
      ].join('\n'));
      assert.ok(!r.isError, JSON.stringify(r));
      assert.match(JSON.stringify(r), /refused not_found/);
    } finally {
      await client.end();
    }
    const want = {
      echoOk: 2, addOk: 1, failIsError: 1, echoDenied: 1, sleepDryRun: 1, structuredTimeout: 1,
      boomError: 1, unknownNotFound: 1,
      runsOk: 4, runsValidation: 1, runsException: 1, runsStarted: 6,
      rejectedProgram: 1, rejectedArguments: 1, latencyCount: 6, runSeconds: 6,
    };
    // Prometheus scrapes every second: wait until the last counter the workload moved is seen,
    // then every other one must have moved by exactly its amount.
    let got = {};
    const seen = await waitFor(async () => {
      for (const [k, q] of Object.entries(SERIES)) got[k] = (await value(q)) - before[k];
      return Object.keys(want).every((k) => got[k] >= want[k]);
    }, ms(30000), 250);
    assert.ok(seen, `Prometheus did not see the workload: ${JSON.stringify(got)}`);
    assert.deepEqual(got, want);
  });
});
