// The OCI image (contrib/docker/Dockerfile) and the Debian package (contrib/debian/) as users
// run them: an MCP client through `docker run -i` with the config mounted read-only and a real
// upstream on the host, the shared gateway through `docker run -p` with its token from the
// state volume, the sandbox's fail-closed start under Docker's default seccomp profile, and
// the .deb installed with apt-get into a fresh debian:bookworm-slim where the README's smoke
// runs. Started by docker_image.sh, which builds the image and the package (and skips where
// Docker cannot run); not meant to be run alone.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { Client, NODE, NPM_PEERS, REPO, StdioClientTransport, ms, tempDir, waitFor } from './lib.mjs';

const IMAGE = process.env.CODEMCP_TEST_IMAGE;
const DEB_DIR = process.env.CODEMCP_TEST_DEB_DIR;
const SECCOMP = path.join(REPO, 'contrib', 'docker', 'seccomp.json');
// What the sandbox needs from Docker (README.md, "Docker").
const SANDBOX_OPTS = ['--security-opt', `seccomp=${SECCOMP}`, '--security-opt', 'systempaths=unconfined'];
const EVERYTHING = path.join(NPM_PEERS, 'server-everything', 'dist', 'index.js');
// The README's smoke program (its first lines).
const README_SMOKE = 'r = [everything_get_sum(a=i, b=1) for i in range(5)]; result = [str(x) for x in r]';

if (!IMAGE || !DEB_DIR) throw new Error('run through tests/e2e/docker_image.sh');

function docker(args, { input = '', timeout = ms(120000) } = {}) {
  const r = spawnSync('docker', args, { input, timeout, encoding: 'utf8' });
  if (r.error) throw r.error;
  return r;
}

/** Starts server-everything over Streamable HTTP on the host, on all interfaces (containers
 *  reach it as host.docker.internal). Resolves {port, stop()}. */
async function everythingOverHttp() {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child = spawn(NODE, [EVERYTHING, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  await waitFor(() => /listening|port/i.test(out), ms(20000));
  return { port, stop: () => child.kill('SIGKILL') };
}

/** "The sum of 0 and 1 is 1." -> "1" */
function lastNumber(text) {
  return text.match(/(\d+)\D*$/)[1];
}

function envelope(r) {
  assert.equal(r.isError, false, JSON.stringify(r));
  return JSON.parse(r.content[0].text);
}

test('the image runs as an unprivileged user and holds no token', () => {
  const r = docker(['run', '--rm', '--entrypoint', 'sh', IMAGE, '-c', 'id -u; ls -A /state']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, '10001\n', 'uid 10001 (codemcp) and an empty /state');
  const env = JSON.parse(docker(['image', 'inspect', IMAGE, '--format', '{{json .Config.Env}}']).stdout);
  assert.ok(!env.some((e) => /TOKEN/.test(e)), JSON.stringify(env));
});

test("under Docker's default seccomp profile codemcp stops at start, naming both options", () => {
  const r = docker(['run', '--rm', '-i', IMAGE]);
  assert.notEqual(r.status, 0, 'a gateway without its sandbox must not serve');
  assert.equal(r.stdout, '', 'nothing served on stdout');
  assert.match(r.stderr, /--security-opt seccomp=seccomp\.json \(contrib\/docker\/seccomp\.json/);
  assert.match(r.stderr, /--security-opt systempaths=unconfined/);
});

test("with the profile but Docker's masked /proc, the start names systempaths=unconfined", () => {
  const r = docker(['run', '--rm', '-i', '--security-opt', `seccomp=${SECCOMP}`, IMAGE]);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /mount \/proc: Operation not permitted\. .*--security-opt systempaths=unconfined/);
});

test('the profile the messages name is in the image, as shipped in contrib/docker', () => {
  const r = docker(['run', '--rm', '--entrypoint', 'cat', IMAGE, '/usr/share/codemcp/seccomp.json']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, fs.readFileSync(SECCOMP, 'utf8'));
});

describe('stdio: docker run -i with the config mounted read-only', () => {
  let upstream, client, stderr = '';
  before(async () => {
    upstream = await everythingOverHttp();
    const config = tempDir('codemcp-docker-cfg-');
    fs.writeFileSync(path.join(config, 'mcp.json'), JSON.stringify({
      mcpServers: { everything: { url: `http://host.docker.internal:${upstream.port}/mcp` } },
    }));
    fs.chmodSync(config, 0o755);
    fs.chmodSync(path.join(config, 'mcp.json'), 0o644);
    const transport = new StdioClientTransport({
      command: 'docker',
      args: ['run', '-i', '--rm', ...SANDBOX_OPTS, '--add-host', 'host.docker.internal:host-gateway',
        '-v', `${config}:/config:ro`, IMAGE],
      stderr: 'pipe',
    });
    transport.stderr?.setEncoding('utf8');
    transport.stderr?.on('data', (d) => (stderr += d));
    client = new Client({ name: 'docker-e2e', version: '0' });
    await client.connect(transport, { timeout: ms(60000) });
  });
  after(async () => {
    await client?.close().catch(() => {});
    upstream?.stop();
  });

  test('one tool, execute_python, whose SDK has the mounted config\'s upstream', async () => {
    const { tools } = await client.listTools(undefined, { timeout: ms(60000) });
    assert.deepEqual(tools.map((t) => t.name), ['execute_python']);
    await waitFor(async () => {
      const r = await client.callTool({ name: 'execute_python', arguments: { code: 'result = "everything_echo" in dir()' } });
      return r.isError === false && JSON.parse(r.content[0].text).result === true;
    }, ms(60000), 500);
  });

  test('a program calls the upstream, sandboxed: no network, its own PIDs, uid 1000', async () => {
    const code = `
import os, socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    net = "allowed"
except OSError:
    net = "refused"
r = [everything_get_sum(a=i, b=1) for i in range(5)]
result = {"sums": [str(x) for x in r], "net": net, "uid": os.getuid(),
          "pids": len([p for p in os.listdir("/proc") if p.isdigit()]),
          "config_visible": os.path.exists("/config")}`;
    const r = await client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(60000) });
    const v = envelope(r).result;
    assert.deepEqual(v.sums.map(lastNumber), ['1', '2', '3', '4', '5'], JSON.stringify(v));
    assert.equal(v.net, 'refused');
    assert.equal(v.uid, 1000);
    assert.ok(v.pids <= 3, `the sandbox sees only its own processes, got ${v.pids}`);
    assert.equal(v.config_visible, false, 'the config is not inside the sandbox');
  });
});

describe('shared gateway: docker run -p, token from the state volume', () => {
  let name, volume, url, token;
  before(async () => {
    name = `codemcp-e2e-${process.pid}`;
    volume = `${name}-state`;
    assert.equal(docker(['volume', 'create', volume]).status, 0);
    const r = docker(['run', '-d', '--name', name, ...SANDBOX_OPTS, '-p', '127.0.0.1::3388',
      '-v', `${volume}:/state`, IMAGE, 'start', '-H', '0.0.0.0']);
    assert.equal(r.status, 0, r.stderr);
    const port = docker(['port', name, '3388']).stdout.trim().split('\n')[0].split(':').pop();
    url = `http://127.0.0.1:${port}/mcp`;
    await waitFor(async () => {
      try {
        return (await fetch(url, { method: 'POST' })).status === 401;
      } catch {
        return false;
      }
    }, ms(60000), 250);
    token = docker(['exec', name, 'codemcp', 'start', '--print-token']).stdout.trim();
  });
  after(() => {
    docker(['rm', '-f', name]);
    docker(['volume', 'rm', '-f', volume]);
  });

  test('the token was generated into the volume, 0600, owned by codemcp', () => {
    assert.match(token, /^\S{20,}$/);
    const r = docker(['exec', name, 'stat', '-c', '%a %U', '/state/codemcp/http-token']);
    assert.equal(r.stdout.trim(), '600 codemcp', r.stderr);
  });

  test('without the token: 401', async () => {
    const r = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    assert.equal(r.status, 401);
  });

  test('with the token a Streamable HTTP client runs code in the sandbox', async () => {
    const client = new Client({ name: 'docker-e2e-http', version: '0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }), { timeout: ms(30000) });
    try {
      const r = await client.callTool({ name: 'execute_python', arguments: { code: 'import os\nresult = [6 * 7, os.getuid()]' } },
        undefined, { timeout: ms(60000) });
      assert.deepEqual(envelope(r).result, [42, 1000]);
    } finally {
      await client.close();
    }
  });
});

test('the .deb installs into a fresh debian:bookworm-slim and the README smoke runs there', () => {
  const debs = fs.readdirSync(DEB_DIR).filter((f) => /^codemcp_[^_]+_[^_]+\.deb$/.test(f));
  assert.equal(debs.length, 1, `one codemcp_<version>_<arch>.deb in ${DEB_DIR}: ${debs}`);
  // The npm peers as a node_modules directory, and this node (a self-contained binary): the
  // README's upstream, with nothing else installed in the container but the package.
  const peers = fs.realpathSync(path.join(NPM_PEERS, '..'));
  const script = [
    'set -e',
    'apt-get update -q >/dev/null',
    `DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends ./${debs[0]} >/dev/null`,
    'codemcp --version',
    `CODEMCP_SMOKE='${README_SMOKE}' codemcp --wrap "node /peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio" --name everything`,
  ].join('\n');
  const r = docker(['run', '--rm', ...SANDBOX_OPTS, '-v', `${DEB_DIR}:/deb:ro`,
    '-v', `${peers}:/peers/node_modules:ro`, '-v', `${fs.realpathSync(NODE)}:/usr/local/bin/node:ro`,
    '-w', '/deb', 'debian:bookworm-slim', 'sh', '-c', script], { timeout: ms(600000) });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /^codemcp \d+\.\d+\.\d+\n/);
  const out = JSON.parse(r.stdout.slice(r.stdout.indexOf('{')));
  assert.deepEqual(out.result.map(lastNumber), ['1', '2', '3', '4', '5'], r.stdout);
});
