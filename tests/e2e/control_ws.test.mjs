// The control channel's WebSocket server (src/wire/wsserver.c, codemcp's own since libwebsockets
// stopped serving it), seen from agent code: a frame that breaks RFC 6455 (here an unmasked
// one, which libwebsockets accepted) ends that worker's connection with a clear run error and
// the session goes on; and the loopback TCP listener (CODEMCP_CONTROL_TCP=1, otherwise only
// the Unix one is exercised, by limits) serves workers, answers a bad upgrade request with
// 404/400, a good one with the RFC's accept value, a ping with a pong, and closes a
// connection whose first frame is not a worker token; the Unix listener's socket keeps other
// local users out.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { connectClient, ms, PY_OWN_SOCKETS, PYTHON, tempDir, waitFor, writeConfig } from './lib.mjs';

async function session(env = {}) {
  const dir = tempDir();
  const h = await connectClient({ config: writeConfig(dir, {}), env });
  const run = async (code) => {
    const r = await h.client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(60000) });
    return r.structuredContent ?? JSON.parse(r.content[0].text);
  };
  return { h, run };
}

const UNMASKED = String.raw`
import os, time
${PY_OWN_SOCKETS}
for fd in socks:
    os.write(fd, bytes([0x81, 0x02]) + b"{}")
time.sleep(3)
result = "the gateway read an unmasked frame"`;

test('an unmasked frame from agent code ends its worker\'s connection with a clear error', { timeout: ms(120000) }, async () => {
  const { h, run } = await session({ CODEMCP_EXEC_TIMEOUT_MS: '30000' });
  try {
    let e = await run('kept = 1\nresult = 0');
    const t0 = Date.now();
    e = await run(UNMASKED);
    const took = Date.now() - t0;
    assert.equal(e.error_kind, 'worker', JSON.stringify(e));
    assert.match(e.error, /breaks the WebSocket protocol \(client frame not masked\)/, JSON.stringify(e));
    assert.ok(took < ms(15000), `the run took ${took} ms`);
    // stderr is a pipe of its own: the log line may reach us after the answer on stdout
    const logged = /\[control\] connection \d+ broke the WebSocket protocol \(client frame not masked\)/;
    await waitFor(() => logged.test(h.stderr()), ms(5000));
    assert.match(h.stderr(), logged);
    e = await run('result = 6 * 7');
    assert.equal(e.result, 42, `the run after: ${JSON.stringify(e)}`);
  } finally {
    await h.close();
  }
});

const RAW_TCP = String.raw`
import os, socket, time
url = os.environ["CODEMCP_CONTROL_URL"]
host, port = url.split("//")[1].split("/")[0].split(":")
KEY = "dGhlIHNhbXBsZSBub25jZQ=="

def talk(data, wait):
    s = socket.create_connection((host, int(port)))
    s.settimeout(wait)
    s.sendall(data)
    got, t0 = b"", time.monotonic()
    try:
        while True:
            b = s.recv(65536)
            if not b:
                got += b"<EOF>"
                break
            got += b
    except socket.timeout:
        pass
    s.close()
    return got.decode("latin1"), round(time.monotonic() - t0, 2)

def upgrade(path="/control", proto="codemcp-control"):
    return (("GET %s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"
             "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n" % (path, KEY)) +
            ("Sec-WebSocket-Protocol: chat, %s\r\n" % proto if proto else "") + "\r\n").encode()

def frame(op, payload):
    mask = b"\x01\x02\x03\x04"
    return bytes([0x80 | op, 0x80 | len(payload)]) + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload))

result = {
    "url": url,
    "wrong_path": talk(upgrade("/nope"), 5),
    "no_protocol": talk(upgrade(proto=None), 5),
    "plain_get": talk(b"GET /control HTTP/1.1\r\nHost: x\r\n\r\n", 5),
    "good": talk(upgrade() + frame(9, b"hi") + frame(1, b"not-the-token"), 5),
}`;

test('the loopback TCP listener: workers connect; bad upgrades refused, a wrong token closed', { timeout: ms(120000) }, async () => {
  const { h, run } = await session({
    CODEMCP_ISOLATION: 'host', CODEMCP_CONTROL_TCP: '1', CODEMCP_CONTROL_AUTH_TIMEOUT_MS: '20000',
  });
  try {
    const e = await run(RAW_TCP);
    const r = e.result;
    assert.ok(r, JSON.stringify(e));
    assert.match(r.url, /^ws:\/\/127\.0\.0\.1:\d+\/control$/);
    for (const [k, status] of [['wrong_path', 404], ['no_protocol', 400], ['plain_get', 400]]) {
      assert.match(r[k][0], new RegExp(`^HTTP/1\\.1 ${status} [^]*<EOF>$`), `${k}: ${JSON.stringify(r[k])}`);
      assert.ok(r[k][1] < 4, `${k}: closed after ${r[k][1]} s`);
    }
    const [good, secs] = r.good;
    assert.match(good, /^HTTP\/1\.1 101 Switching Protocols\r\n/, JSON.stringify(good));
    assert.match(good, /\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=\r\n/i);
    assert.match(good, /\r\nSec-WebSocket-Protocol: codemcp-control\r\n/i);
    const body = good.slice(good.indexOf('\r\n\r\n') + 4);
    assert.equal(body, '\x8a\x02hi<EOF>', JSON.stringify(body)); // the pong, then closed
    assert.ok(secs < 4, `the wrong token was closed after ${secs} s (the auth deadline is 20 s)`);
    const wrong = /\[control\] connection \d+ sent a wrong token: closing it/;
    await waitFor(() => wrong.test(h.stderr()), ms(5000));
    assert.match(h.stderr(), wrong);
    const next = await run('result = 6 * 7');
    assert.equal(next.result, 42, JSON.stringify(next));
  } finally {
    await h.close();
  }
});

// CODEMCP_CONTROL_UNIX=1: the listening socket is a door on the host. Another local user finds
// it shut twice over: its directory is 0700, and the socket itself is born 0600 (not left to
// the umask), so a careless chmod of the directory still does not open it.
test('another user cannot connect to the CODEMCP_CONTROL_UNIX socket (directory 0700, socket 0600)', { timeout: ms(60000) }, async (t) => {
  if (process.getuid() !== 0) return t.skip('needs root to create a second user');
  const name = `cmcpws${process.pid % 100000}`;
  const add = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', name], { encoding: 'utf8' });
  if (add.status !== 0 && add.status !== 9) return t.skip(`useradd failed: ${add.stderr}`); // 9: left over
  const { h, run } = await session({ CODEMCP_ISOLATION: 'host', CODEMCP_CONTROL_UNIX: '1' });
  let dir, dirMode;
  try {
    const e = await run('import os\nresult = os.environ["CODEMCP_CONTROL_URL"]');
    const sock = String(e.result).replace(/^unix:/, '');
    assert.ok(fs.statSync(sock).isSocket(), `no socket at ${sock}: ${JSON.stringify(e)}`);
    assert.equal(fs.statSync(sock).mode & 0o777, 0o600, 'the socket must be born 0600');
    dir = path.dirname(sock);
    dirMode = fs.statSync(dir).mode & 0o7777;
    assert.equal(dirMode, 0o700);
    const uid = Number(spawnSync('id', ['-u', name], { encoding: 'utf8' }).stdout.trim());
    const gid = Number(spawnSync('id', ['-g', name], { encoding: 'utf8' }).stdout.trim());
    const probe = 'import socket, sys\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect(sys.argv[1])\n' +
      '    print("connected")\nexcept OSError as e:\n    print("connect:", e.strerror)';
    const asOther = () => spawnSync(PYTHON, ['-c', probe, sock], { uid, gid, encoding: 'utf8', timeout: ms(10000) });
    let r = asOther();
    assert.match(r.stdout, /connect: Permission denied/, r.stdout + r.stderr);
    fs.chmodSync(dir, 0o755); // the careless chmod
    r = asOther();
    assert.match(r.stdout, /connect: Permission denied/, r.stdout + r.stderr);
    const next = await run('result = 6 * 7');
    assert.equal(next.result, 42, JSON.stringify(next));
  } finally {
    if (dir && dirMode !== undefined) fs.chmodSync(dir, dirMode);
    await h.close();
    spawnSync('userdel', [name]);
  }
});
