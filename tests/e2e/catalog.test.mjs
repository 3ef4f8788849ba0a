// Catalogs of any size: the budgeted execute_python description, search_tools /
// describe inside programs, calls to functions the description does not show, and a server
// that connects late. Real binary, real worker, real npm servers plus the GitHub REST fixture
// (tests/catalog/github_api.mjs: 1,223 tools from the pinned @octokit/openapi). Time bounds
// are generous: they prove "does not wait for the slow server", not speed (bench/catalog.mjs).
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  connectClient, tempDir, writeConfig, servers, ms, waitFor, runCodemcp, NODE, TESTS, PYTHON,
  FAKE_UPSTREAM,
} from './lib.mjs';

const GITHUB = path.join(TESTS, 'catalog', 'github_api.mjs');
const DEFAULTS = { CODEMCP_DESCRIBE_BUDGET: '', CODEMCP_LIST_WAIT_MS: '' }; // the real defaults

function run(h, code, extra = {}) {
  return h.client.callTool({ name: 'execute_python', arguments: { code, ...extra } }, undefined,
    { timeout: ms(90000) });
}

function bigConfig(dir) {
  return writeConfig(dir, {
    github: { type: 'local', command: [NODE, GITHUB], timeout: 60000 },
    everything: servers.everything(),
    memory: servers.memory(path.join(dir, 'memory.json')),
    filesystem: servers.filesystem(dir),
  });
}

describe('a 1,260-function catalog seen by Claude Code', () => {
  let h, dir, home;
  before(async () => {
    dir = tempDir('codemcp-catalog-', { shared: true });
    home = tempDir('codemcp-catalog-home-', { shared: true });
    h = await connectClient({ config: bigConfig(dir), shared: true, clientName: 'claude-code', env: DEFAULTS, home });
  });

  // First, while no function has been called yet (call counts change what is listed first).
  test('--describe-budget prints exactly what the client gets', async () => {
    const config = bigConfig(tempDir('codemcp-catalog-dump-'));
    const r = await runCodemcp({ args: ['--describe-budget=claude-code'], config, env: DEFAULTS, home }, ms(90000));
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    const m = r.stdout.match(/^# -+ execute_python description for client "claude-code" \(budget 2000, (\d+) bytes, 1260 functions\) -+\n([\s\S]*)\n# -+ instructions \((\d+) bytes\) -+\n/);
    assert.ok(m, r.stdout.slice(0, 3000));
    assert.ok(Number(m[1]) <= 2000);
    let desc = '';
    await waitFor(async () => /github 1223/.test(desc = (await h.client.listTools()).tools[0].description), ms(60000), 200);
    assert.equal(m[2], desc, 'the dump differs from what the client received');
    const instr = r.stdout.slice(r.stdout.indexOf('# ---- instructions')).replace(/^[^\n]*\n/, '').trimEnd();
    // The instructions are made at initialize, with the servers connected by then: here all
    // of them, for the client (which initialized at once) maybe none. Both stay in budget.
    assert.ok(Buffer.byteLength(instr) <= 2000 && instr.startsWith('codemcp: '), instr);
    assert.match(instr, /github_: .*issues_create/);
    assert.ok(h.client.getInstructions().startsWith('codemcp: '));
  });

  test('the description fits 2,000 characters, names every server, and says how to find the rest', async () => {
    let desc = '';
    await waitFor(async () => {
      desc = (await h.client.listTools(undefined, { timeout: ms(30000) })).tools[0].description;
      return /github 1223/.test(desc);
    }, ms(60000), 200);
    assert.ok(desc.length <= 2000, `description is ${desc.length} characters:\n${desc}`);
    for (const s of ['github 1223', 'everything', 'memory', 'filesystem']) assert.ok(desc.includes(s), `no ${s} in:\n${desc}`);
    assert.match(desc, /search_tools\(/);
    assert.match(desc, /\+\d+ more not listed/);
    assert.match(desc, /^[a-z_]+\(.*\) {2}# /m, 'at least one full signature line');
    const instructions = h.client.getInstructions();
    assert.ok(typeof instructions === 'string' && instructions.length <= 2048, `instructions: ${instructions?.length}`);
  });

  test('a program calls a function the description does not show', async () => {
    const desc = (await h.client.listTools()).tools[0].description;
    assert.ok(!desc.includes('github_issues_create('), 'the test needs an undescribed function');
    const r = await run(h, "result = github_issues_create(owner='octo', repo='hello', title='Login crash')",
      { allow_mutations: ['github_issues_create'] });
    assert.ok(!r.isError, JSON.stringify(r.structuredContent));
    assert.deepEqual(r.structuredContent.result,
      { operation: 'issues/create', method: 'POST', path: '/repos/octo/hello/issues', query: {}, body: { title: 'Login crash' } });
    // The same checks as any other function: a missing argument is caught before running...
    const bad = await run(h, "github_issues_create(owner='octo', title='x')");
    assert.ok(bad.isError);
    assert.equal(bad.structuredContent.error_kind, 'validation', JSON.stringify(bad.structuredContent));
    assert.match(bad.structuredContent.error, /repo/);
    // ...and it is a write: dry_run stubs it.
    const dry = await run(h, "result = github_issues_create(owner='o', repo='r', title='t')", { dry_run: true });
    assert.ok(!dry.isError, JSON.stringify(dry.structuredContent));
    assert.equal(dry.structuredContent.result._dry_run, true);
  });

  test('the functions a session calls are listed first, in later sessions too', async () => {
    await run(h, "result = github_repos_get(owner='octo', repo='hello')");
    const desc = (await h.client.listTools()).tools[0].description;
    const first = /Functions \(signature {2}# summary\):\n(github_issues_create|github_repos_get)\(/;
    assert.match(desc, first, desc);
    // Counts are saved a few seconds later (and at exit): a new gateway with the same state
    // directory starts from them.
    await new Promise((r) => setTimeout(r, 4500));
    const h2 = await connectClient({ config: bigConfig(tempDir('codemcp-catalog-2-')), clientName: 'claude-code', env: DEFAULTS, home });
    let d2 = '';
    await waitFor(async () => /github 1223/.test(d2 = (await h2.client.listTools()).tools[0].description), ms(60000), 200);
    assert.match(d2, first, d2);
  });

  test('search_tools and describe return the documented shapes', async () => {
    const r = await run(h, `
hits = search_tools("open a new bug report in a repository", limit=5)
result = {"hits": hits, "fn": describe(hits[0]["name"]), "server": describe("memory")}`);
    assert.ok(!r.isError, JSON.stringify(r.structuredContent));
    const { hits, fn, server } = r.structuredContent.result;
    assert.ok(hits.length >= 1 && hits.length <= 5);
    for (const hit of hits) assert.deepEqual(Object.keys(hit).sort(), ['name', 'server', 'signature', 'summary']);
    assert.equal(hits[0].name, 'github_issues_create');
    assert.equal(hits[0].server, 'github');
    assert.match(hits[0].signature, /^github_issues_create\(owner: str, repo: str, title: /);
    assert.match(fn, /^github_issues_create\(.*\n\[write\] server github, tool issues_create\n/);
    assert.match(fn, /Args:/);
    assert.match(server, /^server memory: 9 functions/);
  });
});

describe('a server that starts 20 s late', () => {
  test('tools/list answers at once, list_changed follows, a run waits for the late server', { timeout: ms(150000) }, async () => {
    const dir = tempDir('codemcp-late-');
    const config = writeConfig(dir, {
      everything: servers.everything(),
      late: { type: 'local', command: ['/bin/sh', '-c', `sleep 20; exec ${PYTHON} ${FAKE_UPSTREAM}`], timeout: 90000 },
    });
    const c0 = Date.now();
    const h = await connectClient({ config, env: DEFAULTS, clientName: 'claude-code' });
    const early = (await h.client.listTools(undefined, { timeout: ms(10000) })).tools[0].description;
    const connectMs = Date.now() - c0;
    assert.ok(connectMs < ms(8000), `initialize + tools/list took ${connectMs} ms with a server 20 s late`);
    assert.match(early, /late \(connecting\)/, early);
    const changed = [];
    h.client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed.push(Date.now()));
    // A first list after the early server is up (node starts in well under 20 s).
    await waitFor(async () => /everything 1\d/.test((await h.client.listTools()).tools[0].description), ms(15000), 200);
    const t0 = Date.now();
    const first = (await h.client.listTools(undefined, { timeout: ms(10000) })).tools[0].description;
    const listMs = Date.now() - t0;
    assert.ok(listMs < ms(5000), `tools/list took ${listMs} ms while a server was connecting`);
    assert.match(first, /late \(connecting\)/, first);
    assert.ok(!first.includes('late_echo'));
    // A run started now calls the late server's function: it waits instead of NameError.
    const started = Date.now();
    const r = await run(h, "result = late_echo(text='made it')");
    assert.ok(!r.isError, JSON.stringify(r.structuredContent));
    assert.equal(r.structuredContent.result, 'made it');
    assert.ok(Date.now() - started > 5000, 'the run should have waited for the late server');
    // list_changed went out, and the catalog now has the late server.
    await waitFor(() => changed.length > 0, ms(10000));
    assert.ok(changed.length >= 1, 'no notifications/tools/list_changed');
    const after = (await h.client.listTools()).tools[0].description;
    assert.match(after, /late \d+/, after);
    // The instructions were made at initialize and stay as they were (the spec has no way to
    // change them), naming the late server as connecting and saying how to reach it: search
    // inside a program, which reads the live catalog.
    const instr = h.client.getInstructions();
    assert.match(instr, /late \(connecting\)/, instr);
    assert.match(instr, /search_tools\("task words"\)/, instr);
    assert.match(instr, /live catalog/, instr);
    const found = await run(h, "result = [r['name'] for r in search_tools('echo the text back', 3, server='late')]");
    assert.ok(found.structuredContent.result.includes('late_echo'), JSON.stringify(found.structuredContent));
  });

  test('search_tools while a server connects: a short wait, then results that name it', { timeout: ms(90000) }, async () => {
    const dir = tempDir('codemcp-late3-');
    const config = writeConfig(dir, {
      fake: servers.fake(),
      slow: { type: 'local', command: ['/bin/sh', '-c', `sleep 40; exec ${PYTHON} ${FAKE_UPSTREAM}`], timeout: 90000 },
    });
    const h = await connectClient({ config, env: { ...DEFAULTS, CODEMCP_DISCOVERY_WAIT_MS: '2000' } });
    await waitFor(async () => /fake \d+/.test((await h.client.listTools()).tools[0].description), ms(15000), 200);
    const t0 = Date.now();
    const r = await run(h, "r = search_tools('add two numbers')\nresult = {'names': [x['name'] for x in r], 'connecting': r.connecting, 'slow': describe('slow')}");
    const took = Date.now() - t0;
    assert.ok(!r.isError, JSON.stringify(r.structuredContent));
    assert.ok(took < ms(25000), `the search took ${took} ms: it waited for "slow" (40 s late)`);
    assert.ok(took >= 1500, `the search did not wait at all (${took} ms) for a server that might be about to connect`);
    const out = r.structuredContent;
    assert.ok(out.result.names.includes('fake_add'), JSON.stringify(out));
    assert.deepEqual(out.result.connecting, ['slow']);
    assert.match(out.result.slow, /server slow is connecting/);
    assert.match(out.stderr || '', /slow still connecting/, JSON.stringify(out));
  });

  test('a run that does not name a connecting server does not wait for it', { timeout: ms(60000) }, async () => {
    const dir = tempDir('codemcp-late2-');
    const config = writeConfig(dir, {
      fake: servers.fake(),
      slow: { type: 'local', command: ['/bin/sh', '-c', `sleep 30; exec ${PYTHON} ${FAKE_UPSTREAM}`], timeout: 90000 },
    });
    const h = await connectClient({ config, env: DEFAULTS });
    await waitFor(async () => /fake \d+/.test((await h.client.listTools()).tools[0].description), ms(15000), 200);
    const t0 = Date.now();
    const r = await run(h, "result = fake_add(a=2, b=3)");
    assert.ok(!r.isError, JSON.stringify(r.structuredContent));
    assert.equal(r.structuredContent.result, 5);
    assert.ok(Date.now() - t0 < ms(15000), `the run took ${Date.now() - t0} ms: it waited for "slow"`);
    // Calling the slow server's function would wait; the validator does not call it a typo.
    const desc = (await h.client.listTools()).tools[0].description;
    assert.match(desc, /slow \(connecting\)/);
  });

  test('a call to a server that failed to start is explained, not called a typo', { timeout: ms(60000) }, async () => {
    const dir = tempDir('codemcp-failed-');
    const config = writeConfig(dir, { fake: servers.fake(), broken: servers.fake(['--exit-at-once']) });
    const h = await connectClient({ config, env: DEFAULTS });
    await waitFor(async () => /broken \(failed\)/.test((await h.client.listTools()).tools[0].description), ms(15000), 200);
    const r = await run(h, "result = broken_echo(text='hi')");
    assert.ok(r.isError);
    assert.equal(r.structuredContent.error_kind, 'validation', JSON.stringify(r.structuredContent));
    assert.match(r.structuredContent.error, /broken_echo: server broken is configured but failed/);
    assert.doesNotMatch(r.structuredContent.error, /Did you mean/i);
    const d = await run(h, "result = describe('broken')");
    assert.match(d.structuredContent.result, /server broken is failed/);
  });
});
