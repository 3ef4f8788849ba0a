// The Docker Engine API as the docker tests ask it (docker_isolation.test.mjs,
// sandbox_docker.test.mjs): over the socket DOCKER_HOST names, as codemcp does, so the same
// calls reach Docker or Podman's Docker-compatible service.
import assert from 'node:assert/strict';
import http from 'node:http';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, Proc, tempDir, writeConfig, ms, waitFor } from './lib.mjs';

const SOCK = (process.env.DOCKER_HOST || 'unix:///var/run/docker.sock').replace(/^unix:\/\//, '');

/** One Engine API call: { status, body } (body parsed when JSON). */
export function engine(method, path, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const rq = http.request({
      socketPath: SOCK, method, path,
      headers: data ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) } : {},
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => {
        let parsed = text;
        try { parsed = JSON.parse(text); } catch { /* not JSON */ }
        resolve({ status: res.statusCode, body: parsed });
      });
    });
    rq.on('error', reject);
    if (data) rq.write(data);
    rq.end();
  });
}

/** Worker containers (running or not) whose gateway label contains `pid` as its pid. */
export async function workerContainers(pid) {
  const filters = encodeURIComponent(JSON.stringify({ label: ['codemcp.worker'] }));
  const r = await engine('GET', `/containers/json?all=1&filters=${filters}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.filter((c) => pid === undefined
    || (c.Labels['codemcp.gateway'] || '').split(':')[1] === String(pid));
}


/** A `codemcp start` in docker isolation (with env) and one HTTP session per name: fn(clients,
 * proc, connect), each client as { client, transport }, connect(name) opening one more; all
 * closed after. */
export async function withDockerSessions(names, fn, env = {}) {
  const dir = tempDir('codemcp-dock-http-');
  const proc = new Proc({ args: ['start', '-p', '0', '--no-auth'], config: writeConfig(dir, {}), home: dir,
    env: { CODEMCP_ISOLATION: 'docker', ...env } });
  const found = await waitFor(() => proc.exit || proc.stderr.match(/serving MCP over Streamable HTTP at (\S+)/), ms(60000));
  assert.ok(found && found[1], proc.stderrTail());
  const clients = [];
  const connect = async (name) => {
    const c = new Client({ name: `dock-${name}`, version: '0' });
    const transport = new StreamableHTTPClientTransport(new URL(found[1]));
    await c.connect(transport, { timeout: ms(15000) });
    clients.push({ client: c, transport });
    return clients[clients.length - 1];
  };
  try {
    for (const name of names) await connect(name);
    await fn(clients, proc, connect);
  } finally {
    for (const c of clients) await c.client.close().catch(() => {});
    await proc.kill();
  }
}
