// What every client and every new user meets first, through the real binary:
//   * the first answer (initialize, or a 2026 client's server/discover; stdio and HTTP) waits
//     for upstreams still connecting, bounded by CODEMCP_LIST_WAIT_MS, so its instructions
//     name each server's functions (a count), never "(connecting)". The upstream here starts
//     two seconds late (a shell sleeps before exec'ing server-everything), so an answer that
//     does not wait, or waits only one second, names it as connecting;
//   * the HTTP front: 404 for paths it does not serve (OAuth discovery included) before any
//     token check; the token in the start-up snippet only on a terminal;
//   * non-text content both ways (server-everything's tiny image in, [text, image] out, the
//     result cap), upstream resources and prompts listed, read and announced, read_resource();
//   * --describe-budget and CODEMCP_DUMP with a broken server listed first;
//   * every command of the README's Commands table answers --help;
//   * config mistakes said once with their line, mcp.json.example against the servers it names;
//   * a banner on a terminal, a note without a config file, a quiet stop.
// Peers: the SDK v1 client, the SDK v2 client (tests/v2) pinned to 2026-07-28 over stdio and
// Streamable HTTP, server-everything, server-memory and server-filesystem from tests/node_modules,
// script(1) for a terminal.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

import { CODEMCP_BIN, NODE, NPM_PEERS, TESTS, codemcpCommand, codemcpEnv, connectClient, ms, runCodemcp, servers, sharedHttpGateway, tempDir, waitFor, writeConfig } from './lib.mjs';

const V2DIR = path.join(TESTS, 'v2', 'node_modules', '@modelcontextprotocol', 'client', 'dist');
const { Client: V2Client, StreamableHTTPClientTransport } = await import(path.join(V2DIR, 'index.mjs'));
const { StdioClientTransport: V2Stdio } = await import(path.join(V2DIR, 'stdio.mjs'));

const EVERYTHING = path.join(NPM_PEERS, 'server-everything', 'dist', 'index.js');
/** server-everything, started `delay` seconds late. */
const lateEverything = (delay = 2) => ({ type: 'local', command: ['/bin/sh', '-c', `sleep ${delay}; exec "$0" "$1" stdio`, NODE, EVERYTHING] });

/** The instructions name the late server with its function count, and nothing as connecting. */
function assertNamesFunctions(instr, server = 'late') {
  assert.ok(typeof instr === 'string' && instr.length > 0, `no instructions: ${instr}`);
  assert.match(instr, new RegExp(`\\b${server} [1-9]\\d*\\b`), `the instructions do not count ${server}'s functions:\n${instr}`);
  assert.doesNotMatch(instr, /connecting|\(0 functions\)/, `the instructions were written before the servers connected:\n${instr}`);
}

describe('the first answer waits for the servers still connecting', () => {
  test('stdio, legacy initialize (SDK v1): the instructions count the late server\'s functions', { timeout: ms(60000) }, async () => {
    const dir = tempDir('codemcp-first-');
    const h = await connectClient({ config: writeConfig(dir, { late: lateEverything() }), env: { CODEMCP_LIST_WAIT_MS: '30000' }, limit: ms(40000) });
    try {
      assertNamesFunctions(h.client.getInstructions());
    } finally {
      await h.close();
    }
  });

  test('stdio, SDK v2 pinned to 2026-07-28 (server/discover): the instructions count the late server\'s functions', { timeout: ms(60000) }, async () => {
    const dir = tempDir('codemcp-first-');
    const [cmd, args] = codemcpCommand([]);
    const transport = new V2Stdio({ command: cmd, args, stderr: 'pipe',
      env: codemcpEnv({ config: writeConfig(dir, { late: lateEverything() }), env: { CODEMCP_LIST_WAIT_MS: '30000' } }) });
    const client = new V2Client({ name: 'first-contact-v2', version: '0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(transport, { timeout: ms(40000) });
    try {
      assertNamesFunctions(client.getInstructions());
    } finally {
      await client.close();
    }
  });
});

describe('over Streamable HTTP, server/discover waits too', () => {
  const TOKEN = 'first-contact-token-0123456789';
  const g = sharedHttpGateway({ prefix: 'codemcp-first-http-', tokens: { alice: TOKEN },
    mcp: { late: lateEverything(3) }, env: { CODEMCP_LIST_WAIT_MS: '30000' } });

  test('SDK v2 pinned to 2026-07-28: the instructions count the late server\'s functions', { timeout: ms(60000) }, async () => {
    const transport = new StreamableHTTPClientTransport(new URL(g.url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } });
    const client = new V2Client({ name: 'first-contact-http', version: '0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(transport, { timeout: ms(40000) });
    try {
      assertNamesFunctions(client.getInstructions());
    } finally {
      await client.close();
    }
  });

  test('paths codemcp does not serve are 404 without a token, OAuth discovery included; /mcp stays 401', { timeout: ms(30000) }, async () => {
    const base = new URL(g.url);
    const at = (p) => new URL(p, base).href;
    for (const [method, p] of [['GET', '/.well-known/oauth-authorization-server'], ['GET', '/.well-known/oauth-protected-resource'],
      ['GET', '/.well-known/oauth-protected-resource/mcp'], ['GET', '/.well-known/openid-configuration'], ['POST', '/register'],
      ['GET', '/authorize'], ['GET', '/no/such/path']]) {
      const r = await fetch(at(p), { method, headers: { 'content-type': 'application/json' }, body: method === 'POST' ? '{}' : undefined });
      assert.equal(r.status, 404, `${method} ${p}: ${r.status}`);
      assert.match(await r.text(), /does not serve OAuth.*Authorization: Bearer <token>/, `${method} ${p}`);
    }
    const r = await fetch(g.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
    assert.equal(r.status, 401);
  });
});

describe('codemcp start and its token', () => {
  test('the token is in the start-up snippet only when stderr is a terminal', { timeout: ms(30000) }, async () => {
    const home = tempDir('codemcp-tty-');
    const token = 'tty-token-0123456789abcdefghij';
    const env = { ...codemcpEnv({ config: writeConfig(home, {}), home, env: { CODEMCP_HTTP_TOKEN: token } }) };
    // script(1) gives codemcp a terminal; timeout ends it once the snippet is out
    const [cmd, args] = codemcpCommand(['start', '-p', '0']);
    const line = [cmd, ...args].map((a) => `'${a}'`).join(' ');
    const tty = spawnSync('script', ['-qec', `timeout -s TERM 4 ${line}`, '/dev/null'], { env, encoding: 'utf8', timeout: ms(20000) });
    assert.match(tty.stdout, new RegExp(`Authorization: Bearer ${token}`), tty.stdout + tty.stderr);
    const piped = spawnSync('timeout', ['-s', 'TERM', '4', cmd, ...args], { env, encoding: 'utf8', timeout: ms(20000) });
    assert.match(piped.stderr, /Authorization: Bearer <token>/, piped.stderr);
    assert.ok(!piped.stderr.includes(token), 'the token reached a stderr that is not a terminal');
  });
});

// ---- non-text content both ways -----------------------------------------------------------
describe('images and other non-text content, in from tools and out to the client', () => {
  let h;
  test('setup', { timeout: ms(60000) }, async () => {
    const dir = tempDir('codemcp-content-', { shared: true });
    h = await connectClient({ config: writeConfig(dir, { everything: { type: 'local', command: [NODE, EVERYTHING, 'stdio'] } }), shared: true, limit: ms(40000) });
  });
  const run = async (code) => {
    const r = await h.client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(60000) });
    return r;
  };

  test('an upstream image reaches the program as an object it can inspect', { timeout: ms(60000) }, async () => {
    const r = await run('r = everything_get_tiny_image()\n'
      + 'img = [x for x in r if isinstance(x, Content)][0]\n'
      + 'result = {"types": [type(x).__name__ for x in r], "kind": img.type, "mime": img.mime_type, '
      + '"png": img.bytes()[:4] == b"\\x89PNG", "texts": [x for x in r if isinstance(x, str)], "repr": repr(img)}');
    assert.ok(!r.isError, JSON.stringify(r));
    const v = r.structuredContent.result;
    assert.deepEqual(v.types, ['str', 'Content', 'str'], JSON.stringify(v));
    assert.equal(v.kind, 'image');
    assert.equal(v.mime, 'image/png');
    assert.equal(v.png, true);
    assert.ok(v.texts.length === 2 && v.repr.length < 80 && /^<image image\/png, [\d,]+ bytes>$/.test(v.repr), JSON.stringify(v));
    assert.equal(r.content.length, 1, 'nothing returned, so no extra block');
  });

  test('a program returns [text, image]: the client gets a text block and a proper image block', { timeout: ms(60000) }, async () => {
    const r = await run('kept = everything_get_tiny_image()\n'
      + 'img = [x for x in kept if isinstance(x, Content)][0]\n'
      + 'result = ["the tiny image", img, Content.image(b"\\x89PNG\\r\\n\\x1a\\nxyz", "image/png")]');
    assert.ok(!r.isError, JSON.stringify(r).slice(0, 2000));
    assert.equal(r.content.length, 3, JSON.stringify(r.content.map((c) => c.type)));
    const [text, a, b] = r.content;
    assert.equal(text.type, 'text');
    assert.equal(a.type, 'image');
    assert.equal(a.mimeType, 'image/png');
    assert.ok(Buffer.from(a.data, 'base64').subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47])));
    assert.equal(b.type, 'image');
    assert.equal(Buffer.from(b.data, 'base64').toString('latin1').slice(8), 'xyz');
    // the structured result names the blocks, without their base64
    const res = r.structuredContent.result;
    assert.equal(res[0], 'the tiny image');
    assert.match(res[1], /^<image image\/png, [\d,]+ bytes: content block 1>$/);
    assert.match(res[2], /content block 2>$/);
    assert.ok(!text.text.includes(a.data), 'the base64 is not repeated in the text block');
  });

  test('a kept image can be returned by a later run; a resource and a link go out too', { timeout: ms(60000) }, async () => {
    const r = await run('result = {"again": img, "doc": Content.resource("file:///notes.txt", text="hello"), '
      + '"link": Content.link("file:///big.bin", "big.bin")}');
    assert.ok(!r.isError, JSON.stringify(r).slice(0, 2000));
    assert.deepEqual(r.content.slice(1).map((c) => c.type), ['image', 'resource', 'resource_link']);
    assert.deepEqual(r.content[2].resource, { uri: 'file:///notes.txt', text: 'hello' });
    assert.equal(r.content[3].uri, 'file:///big.bin');
  });

  test('blocks count in the result cap (CODEMCP_MAX_OUTPUT_BYTES, 1 MiB): one past it is not returned and the result says so', { timeout: ms(60000) }, async () => {
    // two images of 800,000 base64 bytes each: the first fits, the second does not
    const r = await run('result = ["big", Content.image(b"x" * 600000), Content.image(b"y" * 600000)]');
    assert.ok(!r.isError, JSON.stringify(r).slice(0, 2000));
    assert.deepEqual(r.content.map((c) => c.type), ['text', 'image'], 'the block over the cap was sent');
    assert.equal(Buffer.from(r.content[1].data, 'base64').length, 600000);
    assert.match(r.structuredContent.result[1], /content block 1>$/);
    assert.match(r.structuredContent.result[2], /not returned, over the result cap of 1048576 bytes/);
  });

  test('a dict that only looks like a block stays data: only Content objects become blocks', { timeout: ms(60000) }, async () => {
    const r = await run('result = {"type": "image", "data": 5}');
    assert.ok(!r.isError);
    assert.equal(r.content.length, 1);
    assert.deepEqual(r.structuredContent.result, { type: 'image', data: 5 });
  });
});

// ---- upstream resources and prompts through codemcp ---------------------------------------
describe('upstream resources and prompts, listed and read through codemcp', () => {
  let h;
  const changed = [];
  test('setup', { timeout: ms(60000) }, async () => {
    const dir = tempDir('codemcp-res-', { shared: true });
    h = await connectClient({ config: writeConfig(dir, { everything: { type: 'local', command: [NODE, EVERYTHING, 'stdio'] } }), shared: true, limit: ms(40000) });
    const { ResourceListChangedNotificationSchema } = await import('@modelcontextprotocol/sdk/types.js');
    h.client.setNotificationHandler(ResourceListChangedNotificationSchema, () => changed.push(Date.now()));
  });

  test('capabilities, namespaced lists, the cursor', { timeout: ms(30000) }, async () => {
    const caps = h.client.getServerCapabilities();
    assert.deepEqual([caps.resources?.listChanged, caps.prompts?.listChanged], [true, true], JSON.stringify(caps));
    const all = await h.client.listResources();
    assert.ok(all.resources.length >= 2, JSON.stringify(all));
    for (const r of all.resources) {
      assert.match(r.name, /^everything_/);
      assert.equal(r._meta['codemcp/server'], 'everything');
      assert.match(r.uri, /^demo:\/\//, 'the URI stays the server\'s own');
    }
    const rest = await h.client.listResources({ cursor: '1' });
    assert.deepEqual(rest.resources.map((r) => r.uri), all.resources.slice(1).map((r) => r.uri));
    await assert.rejects(h.client.listResources({ cursor: 'x' }), /cursor/);
    const tpl = await h.client.listResourceTemplates();
    assert.ok(tpl.resourceTemplates.some((t) => t.name.startsWith('everything_') && t.uriTemplate.includes('{')), JSON.stringify(tpl));
    const prompts = await h.client.listPrompts();
    assert.ok(prompts.prompts.some((p) => p.name === 'everything_simple-prompt'), JSON.stringify(prompts));
  });

  test('resources/read and prompts/get reach the server', { timeout: ms(30000) }, async () => {
    const { resources } = await h.client.listResources();
    const r = await h.client.readResource({ uri: resources[0].uri });
    assert.equal(r.contents[0].uri, resources[0].uri);
    assert.ok(r.contents[0].text.length > 10);
    const dyn = await h.client.readResource({ uri: 'demo://resource/dynamic/text/7' }); // a template's
    assert.match(dyn.contents[0].text, /7/);
    const p = await h.client.getPrompt({ name: 'everything_args-prompt', arguments: { city: 'Paris' } });
    assert.match(JSON.stringify(p.messages), /Paris/);
    await assert.rejects(h.client.readResource({ uri: 'nowhere://x' }), /not found/);
    await assert.rejects(h.client.getPrompt({ name: 'nosuch_prompt' }), /unknown prompt/);
  });

  test('a program reads a resource a tool made, returns it; the new resource is announced and listed', { timeout: ms(60000) }, async () => {
    const before = changed.length;
    const r = await h.client.callTool({ name: 'execute_python', arguments: { code: [
      'import gzip',
      'link = everything_gzip_file_as_resource(name="hi.gz", data="data:text/plain,hello%20there")',
      'got = read_resource(link.uri)',
      'result = {"kind": link.type, "plain": gzip.decompress(got[0].bytes()).decode(), "back": got[0]}',
    ].join('\n') } }, undefined, { timeout: ms(60000) });
    assert.ok(!r.isError, JSON.stringify(r).slice(0, 2000));
    const v = r.structuredContent.result;
    assert.equal(v.kind, 'resource_link');
    assert.equal(v.plain, 'hello there');
    assert.match(v.back, /content block 1>$/);
    assert.equal(r.content[1].type, 'resource');
    assert.equal(r.content[1].resource.mimeType, 'application/gzip');
    assert.ok(await waitFor(() => changed.length > before, ms(10000)), 'notifications/resources/list_changed never came');
    const { resources } = await h.client.listResources();
    assert.ok(resources.some((x) => x.name === 'everything_hi.gz'), JSON.stringify(resources.map((x) => x.name)));
  });

  test('a 2026 client\'s subscriptions/listen gets resources list changes tagged with its id', { timeout: ms(60000) }, async () => {
    const dir = tempDir('codemcp-listen-');
    const { RawClient, meta2026 } = await import('./lib.mjs');
    const c = new RawClient({ config: writeConfig(dir, { everything: { type: 'local', command: [NODE, EVERYTHING, 'stdio'] } }) });
    const meta = meta2026('listen-e2e');
    await c.request('server/discover', { _meta: meta }, { limit: ms(30000) }); // answered once everything is ready
    c.send({ jsonrpc: '2.0', id: 'sub-1', method: 'subscriptions/listen', params: { _meta: meta, notifications: { resourcesListChanged: true, promptsListChanged: true } } });
    const ack = await c.next((m) => m.method === 'notifications/subscriptions/acknowledged');
    assert.deepEqual(ack.params.notifications, { toolsListChanged: false, resourcesListChanged: true, promptsListChanged: true }, JSON.stringify(ack));
    const r = await c.request('tools/call', { _meta: meta, name: 'execute_python', arguments: {
      code: 'everything_gzip_file_as_resource(name="sub.gz", data="data:text/plain,x").result()' } }, { limit: ms(60000) });
    assert.ok(!r.result?.isError, JSON.stringify(r));
    const n = await c.next((m) => m.method === 'notifications/resources/list_changed', ms(10000));
    assert.equal(n.params._meta['io.modelcontextprotocol/subscriptionId'], 'sub-1', JSON.stringify(n));
    const list = await c.request('resources/list', { _meta: meta });
    assert.ok(list.result.resources.some((x) => x.name === 'everything_sub.gz'), JSON.stringify(list).slice(0, 1500));
    await c.kill();
  });

  test('read_resource of a URI the server does not have is a ToolError with the server\'s word', { timeout: ms(30000) }, async () => {
    // one server offers resources: an unknown URI goes to it, and it says what is wrong
    const r = await h.client.callTool({ name: 'execute_python', arguments: { code:
      'try:\n    read_resource("nowhere://x").result()\nexcept ToolError as e:\n    result = [e.kind, str(e)]' } }, undefined, { timeout: ms(30000) });
    const [kind, msg] = r.structuredContent.result;
    assert.equal(kind, 'upstream_error', JSON.stringify(r));
    assert.match(msg, /nowhere:\/\/x/);
  });
});

// ---- read_resource() is held to the limits of a tool call -----------------------------------
describe('read_resource() in a program: the gateway\'s limits hold as for a tool call', () => {
  let h;
  test('setup', { timeout: ms(60000) }, async () => {
    const dir = tempDir('codemcp-readcap-', { shared: true });
    h = await connectClient({ config: writeConfig(dir, { files: servers.fake(['--resource', 'fake://big=200000', '--resource', 'fake://small=3000', '--resource', 'fake://stall=-1']) }),
      env: { CODEMCP_CONTROL_MAX_FRAME: '65536', CODEMCP_MAX_OUTPUT_BYTES: '1024' }, shared: true, limit: ms(40000) });
  });
  const run = async (code) => (await h.client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(60000) }));

  test('a resource over one message to the worker fails at once with kind too_large', { timeout: ms(60000) }, async () => {
    // the read's own timeout is long: a read that is never answered shows as "timeout"
    const r = await run('try:\n    read_resource("fake://big", timeout_ms=20000).result()\nexcept ToolError as e:\n    result = [e.kind, str(e)]');
    assert.ok(!r.isError, JSON.stringify(r).slice(0, 1500));
    const [kind, msg] = r.structuredContent.result;
    assert.equal(kind, 'too_large', msg);
    assert.match(msg, /read_resource.*CODEMCP_CONTROL_MAX_FRAME/);
    const after = await run('result = len(read_resource("fake://small")[0].text)');
    assert.equal(after.structuredContent.result, 3000, 'the worker lives on');
  });

  test('reads the server never answers end at their timeout_ms in the gateway too: they do not hold its places for reads', { timeout: ms(90000) }, async () => {
    // the gateway holds at most 64 reads in flight; each of these is given up by its program
    // after 1 s, and a read the gateway still held would refuse the one after them
    const r = await run([
      'waits = [read_resource("fake://stall", timeout_ms=1000) for _ in range(64)]',
      'kinds = set()',
      'for w in waits:',
      '    try:',
      '        w.result()',
      '    except ToolError as e:',
      '        kinds.add(e.kind)',
      'result = [sorted(kinds), len(read_resource("fake://small")[0].text)]',
    ].join('\n'));
    assert.ok(!r.isError, JSON.stringify(r).slice(0, 1500));
    assert.deepEqual(r.structuredContent.result, [['timeout'], 3000]);
  });

  test('a run\'s reads end with it: reads a timed-out run left waiting do not hold the places for reads', { timeout: ms(90000) }, async () => {
    const stuck = await h.client.callTool({ name: 'execute_python', arguments: { timeout_ms: 3000, code:
      'waits = [read_resource("fake://stall") for _ in range(64)]\nwaits[0].result()' } }, undefined, { timeout: ms(60000) });
    assert.equal(stuck.isError, true, JSON.stringify(stuck).slice(0, 800));
    assert.match(stuck.structuredContent.error, /timed out/);
    const r = await run('result = len(read_resource("fake://small")[0].text)');
    assert.ok(!r.isError, JSON.stringify(r).slice(0, 1500));
    assert.equal(r.structuredContent.result, 3000);
  });

  test('a resource read and returned counts in the result cap', { timeout: ms(60000) }, async () => {
    const r = await run('result = read_resource("fake://small")');
    assert.ok(!r.isError, JSON.stringify(r).slice(0, 1500));
    assert.match(JSON.stringify(r.structuredContent.result), /not returned, over the result cap of 1024 bytes/);
    assert.equal(r.content.length, 1, 'only the text block: the resource did not go out');
  });
});

// ---- diagnostics wait for every server, whatever the order ---------------------------------
describe('--describe-budget and CODEMCP_DUMP with a broken server listed first', () => {
  const config = () => writeConfig(tempDir('codemcp-dumporder-'), {
    broken: { type: 'local', command: ['/nonexistent/codemcp-test-cmd'] },
    everything: { type: 'local', command: [NODE, EVERYTHING, 'stdio'] },
  });
  for (const [what, opts] of [['--describe-budget', { args: ['--describe-budget'] }], ['CODEMCP_DUMP=1', { env: { CODEMCP_DUMP: '1' } }]]) {
    test(`${what}: the working server's functions are there, the broken one is named with why`, { timeout: ms(60000) }, async () => {
      const r = await runCodemcp({ ...opts, config: config() }, ms(45000));
      assert.equal(r.code, 0, r.stderr.slice(-2000));
      assert.match(r.stdout, /everything_echo\b/, r.stdout.slice(0, 3000));
      if (opts.args) assert.match(r.stdout, /Servers \([1-9]\d* functions\): broken \(failed\), everything [1-9]\d*\b/, r.stdout.slice(0, 3000));
      assert.match(r.stdout, /^# server broken: failed: .*\/nonexistent\/codemcp-test-cmd.*No such file/m, r.stdout.slice(-1500));
    });
  }
});

// ---- every command's --help, as the README lists them ---------------------------------------
describe('every command in the README has --help that exits 0 and starts with its README usage', () => {
  const readme = fs.readFileSync(path.join(TESTS, '..', 'README.md'), 'utf8');
  const section = readme.split('\n## Commands\n')[1].split('\n## ')[0];
  const usages = [...section.matchAll(/^\| `(codemcp[^`]*)` \|/gm)].map((m) => m[1].replace(/\\\|/g, '|'));
  test('the README lists the commands', () => {
    assert.ok(usages.length >= 13, usages.join('\n'));
  });
  const top = spawnSync(CODEMCP_BIN, ['--help'], { encoding: 'utf8' });
  for (const usage of usages) {
    // "codemcp setup a|b|c [...]" names subcommands a, b, c; every word before an option or argument is a command
    const words = usage.split(' ').slice(1);
    const cmd = [];
    for (const w of words) {
      if (!/^[a-z][a-z|-]*$/.test(w)) break;
      cmd.push(w);
    }
    const variants = cmd.length > 1 ? [[cmd[0]], ...cmd[1].split('|').map((s) => [cmd[0], s])] : [cmd];
    for (const argv of variants) {
      test(`codemcp ${[...argv, '--help'].join(' ')}`, () => {
        const r = spawnSync(CODEMCP_BIN, [...argv, '--help'], { encoding: 'utf8', env: codemcpEnv({}), timeout: ms(10000) });
        assert.equal(r.status, 0, `exit ${r.status}: ${r.stdout}${r.stderr}`);
        assert.ok(r.stdout.split('\n')[0].startsWith(`usage: ${usage}`), `first line:\n${r.stdout.split('\n')[0]}\nREADME:\nusage: ${usage}`);
        assert.ok(r.stdout.split('\n').length > 1 || argv.length === 0, 'one line of help');
        if (argv.length) assert.match(top.stdout, new RegExp(`codemcp ${argv[0]}\\b|\\b${argv[0]}\\b`), `codemcp --help does not name ${argv[0]}`);
      });
    }
  }
  test('codemcp --help names every setup target', () => {
    assert.match(top.stdout, /setup opencode\|claude-desktop\|cursor\|vscode/, top.stdout);
    const targets = usages.find((u) => u.startsWith('codemcp setup ')).split(' ')[2].split('|');
    for (const t of targets) assert.match(top.stdout, new RegExp(`\\b${t}\\b`), `codemcp --help does not name setup ${t}`);
  });
});

// ---- config mistakes are said once, with their line -----------------------------------------
describe('config mistakes: unknown keys and tool names, an mcpServers entry inside "mcp"', () => {
  const MEMORY = path.join(NPM_PEERS, 'server-memory', 'dist', 'index.js');
  function badConfig(dir) {
    const p = path.join(dir, 'mcp.json');
    // one key per line, so the lines asserted below are the file's
    fs.writeFileSync(p, [
      '{',
      '  "mcp": {',
      '    "memory": {',
      '      "type": "local",',
      `      "command": [${JSON.stringify(NODE)}, ${JSON.stringify(MEMORY)}],`,
      `      "environment": { "MEMORY_FILE_PATH": ${JSON.stringify(path.join(dir, 'mem.json'))} },`,
      '      "colour": "blue",',
      '      "tools": {',
      '        "delete_entity": { "enabled": false },',
      '        "delete_entities": { "enabled": false },',
      '        "read_graph": { "enabld": false }',
      '      }',
      '    },',
      '    "pasted": {',
      `      "command": ${JSON.stringify(NODE)},`,
      `      "args": [${JSON.stringify(EVERYTHING)}, "stdio"]`,
      '    }',
      '  }',
      '}',
    ].join('\n'));
    return p;
  }
  const expected = (file) => [
    `${file} line 7: mcp.memory.colour is not a setting codemcp knows`,
    `${file} line 11: mcp.memory.tools.read_graph.enabld is not a tool setting (enabled, mutation, policy); ignored`,
    `${file} line 9: tools.delete_entity: server memory has no tool of that name (did you mean delete_entities?)`,
    `${file} line 16: mcp.pasted is written in the mcpServers format`,
  ];

  test('--describe-budget: each warning once with its line; the pasted entry runs; counts leave out disabled tools', { timeout: ms(60000) }, async () => {
    const dir = tempDir('codemcp-badcfg-');
    const file = badConfig(dir);
    const r = await runCodemcp({ args: ['--describe-budget'], config: file }, ms(45000));
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    for (const w of expected(file)) {
      assert.equal(r.stdout.split('\n').filter((l) => l.startsWith(`# warning: ${w}`)).length, 1, `"${w}" not once in:\n${r.stdout.slice(-2500)}`);
      assert.equal(r.stderr.split('\n').filter((l) => l.includes(w)).length, 1, `"${w}" not logged once:\n${r.stderr.slice(-2500)}`);
    }
    // memory lists 9 tools, one of them off; the pasted server is read as mcpServers and connects
    assert.match(r.stdout, /Servers \(\d+ functions\): memory 8, pasted [1-9]\d*\./, r.stdout.slice(0, 1500));
  });

  test('codemcp list shows the warnings of a running gateway', { timeout: ms(60000) }, async () => {
    const dir = tempDir('codemcp-badcfg-');
    const file = badConfig(dir);
    const rt = tempDir('codemcp-rt-');
    const h = await connectClient({ config: file, env: { XDG_RUNTIME_DIR: rt }, limit: ms(40000) });
    try {
      await h.client.listTools(); // the servers have listed their tools
      const { cli } = await import('./admin_lib.mjs');
      const r = await cli(['list'], { ...process.env, XDG_RUNTIME_DIR: rt });
      assert.equal(r.code, 0, r.stderr);
      for (const w of expected(file)) assert.equal(r.stdout.split('\n').filter((l) => l.startsWith(`warning: ${w}`)).length, 1, `"${w}" in:\n${r.stdout}`);
    } finally {
      await h.close();
    }
  });

  test('mcp.json.example against the real servers it names: no warning, the disabled tool left out', { timeout: ms(60000) }, async () => {
    const dir = tempDir('codemcp-example-');
    const example = JSON.parse(fs.readFileSync(path.join(TESTS, '..', 'mcp.json.example'), 'utf8'));
    const mcp = example.mcp;
    // the same entries, started from this machine's installs instead of npx and a global path
    mcp.everything.command = [NODE, EVERYTHING, 'stdio'];
    mcp.memory.command = [NODE, path.join(NPM_PEERS, 'server-memory', 'dist', 'index.js')];
    mcp.memory.environment = { MEMORY_FILE_PATH: path.join(dir, 'memory.jsonl') };
    mcp.filesystem.command = [NODE, path.join(NPM_PEERS, 'server-filesystem', 'dist', 'index.js'), dir];
    mcp.filesystem.cwd = dir;
    mcp.filesystem.enabled = true;
    mcp.github.enabled = false; // remote: no network here
    const file = path.join(dir, 'mcp.json');
    fs.writeFileSync(file, JSON.stringify(example, null, 2));
    const r = await runCodemcp({ args: ['--describe-budget'], config: file }, ms(45000));
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    assert.doesNotMatch(r.stdout, /# warning/, r.stdout.slice(-2500));
    assert.doesNotMatch(r.stderr, /warn \[config\]/, r.stderr.slice(-2500));
    // the same servers without their tools settings: one more function each
    const bare = JSON.parse(JSON.stringify(example));
    delete bare.mcp.everything.tools;
    delete bare.mcp.memory.tools;
    const bareFile = path.join(dir, 'bare.json');
    fs.writeFileSync(bareFile, JSON.stringify(bare, null, 2));
    const b = await runCodemcp({ args: ['--describe-budget'], config: bareFile }, ms(45000));
    const count = (text, s) => Number(text.match(new RegExp(`Servers \\(\\d+ functions\\):.*\\b${s} (\\d+)`))?.[1]);
    for (const s of ['everything', 'memory']) {
      assert.ok(count(b.stdout, s) > 1, b.stdout.slice(0, 1500));
      assert.equal(count(r.stdout, s), count(b.stdout, s) - 1, `${s}: the example's disabled tool is still counted\n${r.stdout.slice(0, 800)}`);
    }
    assert.match(r.stdout, /filesystem [1-9]\d*\b/);
  });
});

// ---- what a person in a terminal sees: a banner, a note without config, a quiet stop --------
describe('a banner on a terminal, a note without a config file, a quiet stop', () => {
  test('a one-line banner on a terminal naming the config, the servers and where the log goes; none on a pipe', { timeout: ms(30000) }, async () => {
    const dir = tempDir('codemcp-banner-');
    const config = writeConfig(dir, { late: lateEverything(1) });
    const env = codemcpEnv({ config, home: dir, env: { CODEMCP_LOG: 'warn' } });
    const [cmd, args] = codemcpCommand(['-c', config]);
    const line = [cmd, ...args].map((a) => `'${a}'`).join(' ');
    // stdin: a pipe that closes after a moment (codemcp then stops); stderr: the terminal
    const tty = spawnSync('script', ['-qec', `sleep 0.5 | ${line}`, '/dev/null'], { env, encoding: 'utf8', timeout: ms(20000) });
    const banner = tty.stdout.split(/\r?\n/).filter((l) => l.startsWith('codemcp '));
    assert.equal(banner.length, 1, tty.stdout);
    assert.match(banner[0], new RegExp(`^codemcp \\S+: serving MCP over stdio; config ${config.replace(/[.]/g, '\\.')} \\(1 server: late\\); log on stderr at level warn \\(CODEMCP_LOG\\)$`));
    const piped = spawnSync('sh', ['-c', `sleep 0.5 | ${line}`], { env, encoding: 'utf8', timeout: ms(20000) });
    assert.equal(piped.status, 0);
    assert.doesNotMatch(piped.stderr, /serving MCP over stdio/, 'a banner on a pipe (a harness\'s log)');
  });

  test('no config file: a warning says where it was looked for and what to do', { timeout: ms(30000) }, async () => {
    const home = tempDir('codemcp-nocfg-');
    const env = { ...codemcpEnv({ home }) };
    const [cmd, args] = codemcpCommand([]);
    const r = spawnSync('sh', ['-c', `sleep 0.3 | '${cmd}' ${args.map((a) => `'${a}'`).join(' ')}`], { env, encoding: 'utf8', timeout: ms(20000) });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`warn \\[config\\] no config file at ${home.replace(/[.]/g, '\\.')}/codemcp/mcp\\.json: serving no MCP servers \\(copy mcp\\.json\\.example there`), r.stderr);
  });

  test('stopping while servers still connect says nothing alarming', { timeout: ms(30000) }, async () => {
    const dir = tempDir('codemcp-quiet-');
    const config = writeConfig(dir, { late: lateEverything(3), also: lateEverything(3) });
    for (const how of ['stdin closed', 'SIGINT']) {
      const p = new (await import('./lib.mjs')).Proc({ config, env: { CODEMCP_LOG: 'warn' } });
      await new Promise((r) => setTimeout(r, 1000)); // running (signals handled), servers still starting
      if (how === 'SIGINT') p.child.kill('SIGINT');
      else p.child.stdin.end();
      const ex = await p.waitExit(ms(10000));
      assert.equal(ex.code, 0, `${how}: ${JSON.stringify(ex)} ${p.stderr}`);
      assert.doesNotMatch(p.stderr, /warn|error/, `${how}: a clean stop logged:\n${p.stderr}`);
    }
  });
});
