// The end-of-run stray check (src/worker/pystray.h): in the sandbox, whatever a request
// started is killed before its reply goes out. The check is one waitid(2) ("has the worker any
// child?"), which is only sound while every process of the namespace but PID 1 descends from
// the worker and its subreaper flag stays on; these cases attack exactly that, through the real
// gateway, with the prototype (forked workers) and without it (exec'd workers). x86_64 numbers.
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { connectClient, tempDir, writeConfig, servers, ms } from './lib.mjs';

async function attempt(h, code) {
  const r = await h.client.callTool({ name: 'execute_python', arguments: { code } }, undefined,
    { timeout: ms(60000) });
  assert.equal(r.isError, false, JSON.stringify(r).slice(0, 3000));
  return r.structuredContent.result;
}

const PIDS = 'sorted(int(p) for p in os.listdir("/proc") if p.isdigit())';

const PRELUDE = `
import os, time, errno, ctypes, platform
assert platform.machine() == "x86_64", platform.machine()
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def sys_call(nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno()
    return "ok:%d" % r if r >= 0 else "err:" + errno.errorcode.get(e, str(e))
def raw_clone(flags, linger):
    """clone(2) without glibc's fork: the child sleeps for linger s (0: leaves at once)."""
    r = libc.syscall(ctypes.c_long(56), ctypes.c_long(flags), *[ctypes.c_long(0)] * 4)
    if r == 0:
        time.sleep(linger)
        os._exit(0)
    e = ctypes.get_errno()
    return "ok" if r > 0 else "err:" + errno.errorcode.get(e, str(e))
`;

for (const prototype of ['on', 'off']) {
  describe(`stray processes, CODEMCP_PROTOTYPE=${prototype}`, () => {
    let h;
    before(async () => {
      const dir = tempDir('codemcp-strays-', { shared: true });
      h = await connectClient({
        config: writeConfig(dir, { everything: servers.everything() }),
        shared: true,
        env: { CODEMCP_PROTOTYPE: prototype, CODEMCP_SANDBOX_NPROC: '64' },
      });
      assert.deepEqual(await attempt(h, `import os\nresult = ${PIDS}`), [1, 2]);
    });

    test('what the check rests on cannot be undone: CLONE_PARENT, the subreaper flag, a filter of its own', async () => {
      const r = await attempt(h, PRELUDE + `
flag = ctypes.c_int(-1)
libc.prctl(37, ctypes.byref(flag), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
result = {"subreaper": flag.value,
          # a sibling of the worker would be PID 1's child, out of the check's sight
          "clone_parent": raw_clone(0x00008000 | 17, 0),
          "subreaper_off": sys_call(157, 36, 0, 0, 0, 0),
          # NULL programs: EFAULT where a filter could be stacked, EPERM where refused
          "prctl_seccomp": sys_call(157, 22, 2, 0, 0, 0),
          "seccomp": sys_call(317, 1, 0, 0),
          "subreaper_on": sys_call(157, 36, 1, 0, 0, 0),
          # the same with the int option's high bits set: the kernel reads the low 32
          "subreaper_off_high": sys_call(157, (1 << 32) | 36, 0, 0, 0, 0),
          "prctl_seccomp_high": sys_call(157, (1 << 32) | 22, 2, 0, 0, 0)}`);
      assert.equal(r.subreaper, 1, 'the worker is not a child subreaper');
      assert.equal(r.clone_parent, 'err:EPERM');
      assert.equal(r.subreaper_off, 'err:EPERM');
      assert.equal(r.prctl_seccomp, 'err:EPERM');
      assert.equal(r.seccomp, 'err:EPERM');
      assert.equal(r.subreaper_on, 'ok:0', 'setting the flag again stays harmless');
      assert.equal(r.subreaper_off_high, 'err:EPERM');
      assert.equal(r.prctl_seccomp_high, 'err:EPERM');
    });

    test('children of every kind end with the request that started them', async () => {
      const cases = {
        // exit signal 0: not a SIGCHLD child, invisible to a wait without __WALL
        'clone, no exit signal': 'raw_clone(0, 300)',
        'clone, SIGUSR1 as exit signal': 'raw_clone(10, 300)',
        'fork, then setsid and a double fork': `(lambda p: os.waitpid(p, 0) if p else
    (os.setsid(), os.fork() or time.sleep(300), os._exit(0)))(os.fork())`,
        'a zombie never reaped': '(lambda p: p or os._exit(0))(os.fork())',
        'a stopped child': '(lambda p: p or (os.kill(os.getpid(), 19), os._exit(0)))(os.fork())',
        'a plain fork that sleeps': 'os.fork() or (time.sleep(300), os._exit(0))',
      };
      for (const [what, expr] of Object.entries(cases)) {
        const r = await attempt(h, PRELUDE + `
left = ${expr}
time.sleep(0.1)
result = ${PIDS}`);
        assert.ok(r.length >= 3, `${what}: nothing was started (${r})`);
        assert.deepEqual(await attempt(h, `import os\nresult = ${PIDS}`), [1, 2],
          `${what}: a process outlived the request that started it`);
      }
    });

    test('a request that starts nothing leaves the namespace as it was', async () => {
      for (let i = 0; i < 3; i++)
        assert.deepEqual(await attempt(h, `import os\nresult = ${PIDS}`), [1, 2]);
    });
  });
}
