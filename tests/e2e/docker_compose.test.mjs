// contrib/fleet/compose.yaml as docker_compose.sh brought it up (three replicas, HAProxy and
// Redis from Debian's packages, host networking on the ports it chose): the balancer becomes
// ready, a session keeps its variables across calls through it, and after `docker-compose stop
// r2` (SIGTERM: the replica drains and exits) every new session is served by r1 or r3.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { describe, test } from 'node:test';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, ms, sleep, waitFor, withTimeout } from './lib.mjs';

const env = process.env;
for (const v of ['FLEET_PORT', 'FLEET_R1_PORT', 'FLEET_R2_PORT', 'FLEET_R3_PORT', 'FLEET_REDIS_PORT', 'CODEMCP_HTTP_TOKEN', 'COMPOSE_FILE'])
  assert.ok(env[v], `${v} is set by docker_compose.sh`);
const LB = Number(env.FLEET_PORT);
const REPLICAS = { r1: Number(env.FLEET_R1_PORT), r2: Number(env.FLEET_R2_PORT), r3: Number(env.FLEET_R3_PORT) };
const URL_MCP = `http://127.0.0.1:${LB}/mcp`;
const SID = /^(r[123])\.[0-9a-f]{56}\.[0-9a-f]{32}$/;

/** The status of GET path on a loopback port, or 0 when nothing answers. */
function status(port, path) {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false, timeout: 5000 }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
  });
}

/** A 2025 session through the balancer: { client, transport, replica } (its session id's head). */
async function session() {
  const transport = new StreamableHTTPClientTransport(new URL(URL_MCP),
    { requestInit: { headers: { authorization: `Bearer ${env.CODEMCP_HTTP_TOKEN}` } } });
  const client = new Client({ name: 'compose-e2e', version: '0' });
  await client.connect(transport, { timeout: ms(30000) });
  const m = (transport.sessionId || '').match(SID);
  assert.ok(m, `a fleet session id names its replica: ${transport.sessionId}`);
  return { client, transport, replica: m[1] };
}

const exec = (client, code) =>
  withTimeout(client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(60000) }),
    ms(65000), 'an execute_python call');

function compose(...args) {
  const r = spawnSync('docker-compose', args, { encoding: 'utf8', timeout: ms(120000) });
  assert.equal(r.status, 0, `docker-compose ${args.join(' ')}: ${r.stderr}${r.stdout}`);
  return r.stdout;
}

describe('contrib/fleet/compose.yaml under docker-compose', { concurrency: false }, () => {
  test('HAProxy becomes ready with every replica behind it', async () => {
    const ready = await waitFor(async () => {
      const all = await Promise.all([LB, ...Object.values(REPLICAS)].map((p) => status(p, '/readyz')));
      return all.every((s) => s === 200);
    }, ms(120000), 500);
    assert.ok(ready, `balancer and replicas answer /readyz 200:\n${compose('ps')}`);
    // HAProxy marks a server up after two good checks (rise 2, inter 1s).
    await sleep(3000);
  });

  test('Redis, on the host\'s loopback, refuses a local user without its password; the replicas use it', async () => {
    const answer = await new Promise((resolve) => {
      const c = net.connect(Number(env.FLEET_REDIS_PORT), '127.0.0.1', () => c.write('PING\r\n'));
      let got = '';
      c.on('data', (d) => { got += d; if (got.includes('\r\n')) { c.destroy(); resolve(got); } });
      c.on('error', (e) => resolve(`error ${e.message}`));
      c.setTimeout(5000, () => { c.destroy(); resolve(`timeout ${got}`); });
    });
    assert.match(answer, /^-NOAUTH/, `Redis answered a PING without a password: ${JSON.stringify(answer)}`);
    // every replica reaches its state store (a replica without it reports it as degraded)
    for (const [name, port] of Object.entries(REPLICAS)) {
      const body = await new Promise((resolve) => {
        http.get({ host: '127.0.0.1', port, path: '/readyz', agent: false }, (res) => {
          let b = '';
          res.on('data', (d) => { b += d; });
          res.on('end', () => resolve(b));
        }).on('error', (e) => resolve(`error ${e.message}`));
      });
      assert.doesNotMatch(body, /degraded|error /, `${name} /readyz: ${body}`);
    }
  });

  test('a session keeps a variable across two calls through the balancer, and sessions reach r2', async () => {
    const opened = [];
    try {
      // leastconn spreads new sessions; open them until one lands on r2, the replica stopped next.
      for (let i = 0; i < 9 && !opened.some((s) => s.replica === 'r2'); i++) opened.push(await session());
      assert.ok(opened.some((s) => s.replica === 'r2'), `some session lands on r2: ${opened.map((s) => s.replica)}`);
      for (const [k, { client }] of opened.entries()) {
        const first = await exec(client, `kept = ${k} * 7 + 1\nresult = kept`);
        assert.equal(first.isError, false, JSON.stringify(first.content));
        const second = await exec(client, 'result = kept * 2');
        assert.equal(second.isError, false, JSON.stringify(second.content));
        assert.equal(second.structuredContent.result, (k * 7 + 1) * 2);
      }
    } finally {
      for (const { client } of opened) await client.close().catch(() => {});
    }
  });

  test('after `docker-compose stop r2` every new session is served by r1 or r3', async () => {
    compose('stop', 'r2');
    const state = JSON.parse(spawnSync('docker', ['inspect', '--format', '{{json .State}}',
      compose('ps', '-q', 'r2').trim()], { encoding: 'utf8' }).stdout);
    assert.equal(state.Running, false, 'r2 is stopped');
    assert.equal(state.ExitCode, 0, 'r2 drained and exited cleanly on SIGTERM');
    assert.equal(await status(REPLICAS.r2, '/readyz'), 0, 'nothing answers on r2\'s port');
    const seen = new Set();
    for (let i = 0; i < 6; i++) {
      const { client, replica } = await session();
      try {
        assert.notEqual(replica, 'r2', 'a new session goes to a running replica');
        seen.add(replica);
        const r = await exec(client, `n = ${i}\nresult = n + 1`);
        assert.equal(r.isError, false, JSON.stringify(r.content));
        assert.equal(r.structuredContent.result, i + 1);
      } finally {
        await client.close().catch(() => {});
      }
    }
    assert.ok([...seen].every((r) => r === 'r1' || r === 'r3'), `served by ${[...seen]}`);
  });
});
