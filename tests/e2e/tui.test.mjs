// `codemcp tui` driven like a user at a terminal: a real gateway with two npm servers, the TUI
// inside a private tmux server (send-keys, capture-pane). What the screen shows is checked,
// and every change made with a key is checked again through `codemcp tools --json`,
// `codemcp list --json` and mcp.json on disk. Resizes and a gateway that goes away included.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cli, cliJson } from './admin_lib.mjs';
import { CODEMCP_BIN, Proc, tempDir, writeConfig, servers, ms, sleep, waitFor } from './lib.mjs';

const TMUX = spawnSync('sh', ['-c', 'command -v tmux'], { encoding: 'utf8' }).stdout.trim();
const LABEL = 'tui-e2e';

let rt, env, gw, config, sock, tmuxSock, tmuxDir;

function tmux(...args) {
  const r = spawnSync(TMUX, ['-S', tmuxSock, ...args], { encoding: 'utf8', timeout: ms(10000) });
  return r;
}

function screen() {
  return tmux('capture-pane', '-p', '-t', 'tui').stdout || '';
}

function keys(...k) {
  const r = tmux('send-keys', '-t', 'tui', ...k);
  assert.equal(r.status, 0, r.stderr);
}

/** Waits until the screen matches re and has settled (the same capture twice, 150 ms apart);
 * returns it (fails with the screen shown). Settled, because a capture can fall in the middle
 * of a redraw (ncurses writes top to bottom): re would match the first rows while the rows
 * asserted next are still blank (1 run in 4 failed so). */
async function until(re, what, limit = ms(10000)) {
  let s = '';
  const ok = await waitFor(async () => {
    if (!re.test((s = screen()))) return false;
    await sleep(150);
    const again = screen();
    const settled = again === s;
    s = again;
    return settled && re.test(s);
  }, limit, 100);
  assert.ok(ok, `screen never showed ${what} (${re}), settled:\n${s}`);
  return s;
}

before(async () => {
  if (!TMUX) return;
  rt = tempDir('codemcp-tui-rt-', { shared: true });
  const dir = tempDir('codemcp-tui-', { shared: true });
  config = writeConfig(dir, {
    everything: servers.everything(),
    memory: servers.memory(path.join(dir, 'memory.jsonl')),
  });
  env = { ...process.env, XDG_RUNTIME_DIR: rt };
  delete env.CODEMCP_ADMIN_SOCKET;
  gw = new Proc({ config, shared: true, env: { XDG_RUNTIME_DIR: rt, CODEMCP_INSTANCE_LABEL: LABEL } });
  const ok = await waitFor(async () => {
    const r = await cli(['list', '--json'], env);
    return r.code === 0 && JSON.parse(r.stdout).servers.every((s) => s.connected);
  }, ms(40000), 200);
  assert.ok(ok, `gateway never had both servers:\n${gw.stderrTail()}`);
  // Not a lib.mjs temp dir: those are removed before this file's `after` runs, and a tmux
  // server whose socket is gone can no longer be told to exit.
  tmuxDir = fs.mkdtempSync(path.join(os.tmpdir(), 'codemcp-tmux-'));
  tmuxSock = path.join(tmuxDir, 'sock');
  const cmd = `env LANG=C.UTF-8 TERM=screen XDG_RUNTIME_DIR='${rt}' '${CODEMCP_BIN}' tui -i ${LABEL}; ` +
    'echo "tui exited with $?"; sleep 60';
  const r = tmux('-u', 'new-session', '-d', '-s', 'tui', '-x', '80', '-y', '24', cmd);
  assert.equal(r.status, 0, r.stderr);
  sock = (await cliJson(['instances'], env))[0].socket;
});

after(() => {
  if (tmuxSock) tmux('kill-server');
  if (tmuxDir) fs.rmSync(tmuxDir, { recursive: true, force: true });
});

test('codemcp tui under tmux: panes, Space, D, filter, help, resize, gateway gone', { skip: !TMUX && 'tmux is not installed (install.sh installs it)' }, async () => {
  // 1. The panes at 80x24, as drawn in the original README.
  let s = await until(/Tools — everything/, 'the tools pane');
  const lines = s.split('\n');
  assert.match(lines[0], /^┌─ Servers ─+┐┌─ Tools — everything ─+┐$/);
  assert.match(s, /│▸ ● everything\s+local\s+def:on\s+\d+t│/);
  assert.match(s, /│  ● memory\s+local\s+def:on\s+\d+t│/);
  assert.match(s, /│▸ ON  echo\s+Echoes/);
  assert.match(s, new RegExp(`^ \\[${LABEL}\\] pid ${gw.pid} (…)?\\S*${path.basename(path.dirname(config))}/mcp\\.json`, 'm'));
  assert.match(s, /Space:session D:default Tab:pane j\/k:move \/:filter r:refresh \?:help q:quit/);
  assert.ok(lines.slice(0, 24).every((l) => [...l].length <= 80), 'nothing wider than 80 columns');

  // 2. Space on a tool: off for this run (session override).
  const tools = (await cliJson(['tools'], env)).tools.filter((t) => t.server === 'everything');
  const second = tools[1].tool;
  keys('Tab', 'j', 'Space');
  s = await until(new RegExp(`▸ off ${second}\\(s\\)`), `${second} off with (s)`);
  assert.match(s, new RegExp(`everything/${second} disabled \\[session\\]`));
  let t = (await cliJson(['tools'], env)).tools.find((x) => x.server === 'everything' && x.tool === second);
  assert.deepEqual([t.on, t.default, t.session], [false, true, 'off']);
  keys('Space');
  await until(new RegExp(`▸ ON  ${second}\\(s\\)`), `${second} back on`);
  t = (await cliJson(['tools'], env)).tools.find((x) => x.server === 'everything' && x.tool === second);
  assert.deepEqual([t.on, t.session], [true, 'on']);

  // 3. D on a server: default off, written into mcp.json; the server disconnects.
  keys('Tab', 'j', 'D');
  s = await until(/▸ ○ memory\s+local\s+def:off/, 'memory off by default');
  assert.match(s, /memory is disconnected; mcp.json updated/);
  const file = JSON.parse(fs.readFileSync(config, 'utf8'));
  assert.equal(file.mcp.memory.enabled, false);
  assert.ok(file.mcp.everything.command, 'other keys kept');
  const mem = (await cliJson(['list'], env)).servers.find((x) => x.name === 'memory');
  assert.deepEqual([mem.connected, mem.default], [false, false]);
  keys('D');
  await until(/▸ ● memory\s+local\s+def:on/, 'memory back on');
  assert.equal(JSON.parse(fs.readFileSync(config, 'utf8')).mcp.memory.enabled, true);

  // 4. Filter the tools, then clear it.
  keys('k', '/', 's', 'u', 'm', 'Enter');
  s = await until(/Tools — everything \[\/sum\]/, 'the filter in the title');
  assert.match(s, /get-sum/);
  assert.doesNotMatch(s, /│.{0,3}ON  echo/);
  keys('/', 'Escape');
  await until(/Tools — everything ─/, 'the filter cleared');

  // 5. Help, and any key closes it.
  keys('?');
  await until(/codemcp tui — keys/, 'the help');
  keys('x');
  await until(/Tools — everything/, 'the panes again');

  // 6. Resize: the panes follow the terminal.
  tmux('resize-window', '-t', 'tui', '-x', '120', '-y', '30');
  // Both borders: the top one is drawn first, and a capture can fall between the two.
  s = await until(/^┌.{118}┐$[\s\S]*^└.{118}┘$/m, 'the 120-column layout');
  assert.match(s.split('\n')[27], /^└.*┘$/, 'bottom border on row 28 of 30');
  tmux('resize-window', '-t', 'tui', '-x', '80', '-y', '24');
  s = await until(/^┌.{78}┐$/m, 'the 80-column layout again');

  // 7. The gateway goes away: an error screen, not a crash; q quits cleanly.
  process.kill(gw.pid, 'SIGTERM');
  await gw.waitExit(ms(15000));
  s = await until(/the gateway cannot be reached/, 'the gateway-gone screen', ms(15000));
  assert.match(s, /r: try again\s+q: quit/);
  assert.ok(!fs.existsSync(sock), 'a gateway that exits removes its socket');
  keys('q');
  await until(/tui exited with 0/, 'a clean exit');
});
