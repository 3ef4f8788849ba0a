// The escape suite's attack programs, shared by the isolations that must stop them:
// sandbox.test.mjs (the default namespace sandbox) and sandbox_docker.test.mjs
// (CODEMCP_ISOLATION=docker). Each is a Python program run through execute_python that tries
// to get out and returns what it got; each test file asserts the property the attack
// threatens, in the terms of its isolation (a PID namespace of the sandbox's or the
// container's, the sandbox's uid or the container's); where the property reads the same in
// every isolation, its check is here too (assert*).
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { tempDir, writeConfig, servers } from './lib.mjs';

/** What the escape suite attacks from: a home with secret in ~/.bashrc and ~/.config, a
 * config whose memory upstream holds secret in its environment (create_entities denied by
 * policy), and loopback TCP (v4, v6) and UDP servers recording whatever reaches them
 * (tcpSeen, udpSeen). close() stops the servers. */
export async function hostileSetup(prefix, secret) {
  const f = { tcpSeen: [], udpSeen: [] };
  f.dir = tempDir(prefix, { shared: true });
  f.home = tempDir(prefix + 'home-', { shared: true });
  fs.mkdirSync(path.join(f.home, '.config', 'codemcp'), { recursive: true });
  fs.writeFileSync(path.join(f.home, '.bashrc'), `export TOKEN=${secret}\n`);
  fs.writeFileSync(path.join(f.home, '.config', 'codemcp', 'mcp.json'), `{"secret": "${secret}"}`);
  f.memFile = path.join(f.dir, 'memory.json');
  f.config = writeConfig(f.dir, {
    memory: servers.memory(f.memFile, {
      environment: { MEMORY_FILE_PATH: f.memFile, UPSTREAM_API_KEY: secret },
      tools: { create_entities: { policy: 'deny' } },
    }),
  });
  f.tcp = net.createServer((s) => { f.tcpSeen.push('v4'); s.destroy(); });
  await new Promise((r) => f.tcp.listen(0, '127.0.0.1', r));
  f.tcp6 = net.createServer((s) => { f.tcpSeen.push('v6'); s.destroy(); });
  await new Promise((r) => f.tcp6.listen(0, '::1', r).on('error', r));
  f.udp = dgram.createSocket('udp4');
  f.udp.on('message', (m) => f.udpSeen.push(String(m)));
  await new Promise((r) => f.udp.bind(0, '127.0.0.1', r));
  f.ports = () => ({ port: f.tcp.address().port, port6: f.tcp6.address()?.port || 1, uport: f.udp.address().port });
  f.close = () => {
    f.tcp.close();
    f.tcp6.close();
    f.udp.close();
  };
  return f;
}

/** Python: attempt(fn) → "ok:<value>" or "err:<errno name>"; sys_call(nr, *args) likewise. */
export const PRELUDE = `
import os, errno, ctypes, socket, json
def attempt(fn):
    try:
        v = fn()
        return "ok:" + (v if isinstance(v, str) else repr(v))[:200]
    except OSError as e:
        return "err:" + (errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__)
    except Exception as e:
        return "err:" + type(e).__name__
def read(p, n=1 << 20):
    with open(p, "rb") as f:
        return f.read(n).decode("latin-1")
libc = ctypes.CDLL(None, use_errno=True)
def sys_call(nr, *args):
    libc.syscall.restype = ctypes.c_long
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno()
    return "ok:%d" % r if r >= 0 else "err:" + errno.errorcode.get(e, str(e))
`;

/** Python (needs os, time): forks a detached grandchild that sleeps 300 s, then reaps the child. */
export const LEAVE_GRANDCHILD = `pid = os.fork()
if pid == 0:
  os.setsid()
  if os.fork() == 0:
      time.sleep(300)
  os._exit(0)
os.waitpid(pid, 0)
time.sleep(0.2)`;

/** Who the program is: PIDs it sees, ids, capabilities, seccomp, hostname, root, interfaces. */
export const IDENTITY = PRELUDE + `
st = read("/proc/self/status")
field = lambda k: [l.split(":", 1)[1].strip() for l in st.splitlines() if l.startswith(k + ":")][0]
result = {"pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
          "uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
          "cap_eff": field("CapEff"), "cap_prm": field("CapPrm"), "cap_bnd": field("CapBnd"),
          "no_new_privs": field("NoNewPrivs"), "seccomp": field("Seccomp"),
          "hostname": socket.gethostname(), "cwd": os.getcwd(), "root": sorted(os.listdir("/")),
          "ifaces": [l.split(":")[0].strip() for l in read("/proc/net/dev").splitlines()[2:]]}`;

/** Reads each of paths and every process's environ and mem: what holds secret or a worker token. */
export function secretsProgram(paths, secret) {
  return PRELUDE + `
paths = ${JSON.stringify(paths)}
got = {p: attempt(lambda p=p: os.listdir(p) and "dir" if os.path.isdir(p) else read(p)) for p in paths}
leak = [k for k, v in got.items() if ${JSON.stringify(secret)} in v]
import re
tokens = []
for p in os.listdir("/proc"):
    if p.isdigit():
        v = attempt(lambda p=p: read("/proc/%s/environ" % p))
        if ${JSON.stringify(secret)} in v:
            leak.append("/proc/%s/environ" % p)
        tokens += re.findall(r"CODEMCP_WORKER_TOKEN=([0-9a-f]{8,})", v)
        got["/proc/%s/mem" % p] = attempt(lambda p=p: read("/proc/%s/mem" % p, 16))
envs = dict(os.environ)
result = {"got": got, "leak": leak, "env": envs, "tokens": tokens,
          "home": os.path.expanduser("~")}`;
}

/** Appends to each target, writes its own /tmp/ok, chmods bin. */
export function writesProgram(targets, bin) {
  return PRELUDE + `
def w(p):
    with open(p, "a") as f:
        f.write("pwned\\n")
    return "written"
got = {p: attempt(lambda p=p: w(p)) for p in ${JSON.stringify(targets)}}
got["/tmp/ok"] = attempt(lambda: w("/tmp/ok"))
got["chmod"] = attempt(lambda: os.chmod(${JSON.stringify(bin)}, 0o777))
result = got`;
}

/** TCP, UDP, IPv6 to the given loopback ports, AF_UNIX by path and abstract name, raw and
 * netlink sockets; an AF_UNIX socketpair must keep working. */
export function networkProgram({ port, port6, uport }) {
  return PRELUDE + `
def tcp4():
    socket.create_connection(("127.0.0.1", ${port}), timeout=2).close()
def tcp6():
    socket.create_connection(("::1", ${port6}), timeout=2).close()
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"escaped", ("127.0.0.1", ${uport}))
def unix_path():
    s = socket.socket(socket.AF_UNIX)
    s.connect("/tmp/anything.sock")
def unix_abstract():
    s = socket.socket(socket.AF_UNIX)
    s.connect("\\0codemcp")
def raw():
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
def netlink():
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
def pair_inet():
    socket.socketpair(socket.AF_INET)
def pair_unix():
    a, b = socket.socketpair()
    a.send(b"x")
    return b.recv(1).decode()
result = {k: attempt(f) for k, f in dict(tcp4=tcp4, tcp6=tcp6, udp=udp, unix_path=unix_path,
          unix_abstract=unix_abstract, raw=raw, netlink=netlink, pair_inet=pair_inet,
          pair_unix=pair_unix).items()}`;
}
/** networkProgram's result: every kind refused, the socketpair working. */
export function assertNetworkRefused(r) {
  for (const k of ['tcp4', 'tcp6', 'udp', 'unix_path', 'unix_abstract', 'raw', 'netlink', 'pair_inet']) {
    assert.match(r[k], /^err:/, `${k} worked: ${r[k]}`);
  }
  assert.equal(r.pair_unix, 'ok:x', 'AF_UNIX socketpairs stay usable');
}

/** The syscalls agent code never needs (x86_64 numbers); each must fail EPERM/EACCES/ENOSYS. */
export const SYSCALLS = PRELUDE + `
import platform
assert platform.machine() == "x86_64", platform.machine()
calls = {"ptrace_attach_1": (101, 16, 1, 0, 0), "ptrace_traceme": (101, 0, 0, 0, 0),
         "process_vm_readv": (310, 1, 0, 0, 0, 0, 0), "mount": (165, 0, 0, 0, 0, 0),
         "umount2": (166, 0, 0), "unshare_user": (272, 0x10000000), "unshare_net": (272, 0x40000000),
         "setns": (308, 0, 0), "keyctl": (250, 0, 0, 0), "add_key": (248, 0, 0, 0, 0, 0),
         "bpf": (321, 0, 0, 0), "perf_event_open": (298, 0, 0, 0, 0, 0), "userfaultfd": (323, 0),
         "io_uring_setup": (425, 1, 0), "kexec_load": (246, 0, 0, 0, 0),
         "init_module": (175, 0, 0, 0), "clock_settime": (227, 0, 0), "settimeofday": (164, 0, 0),
         "pivot_root": (155, 0, 0), "chroot": (161, 0), "reboot": (169, 0, 0, 0, 0),
         "clone_newuser": (56, 0x10000000 | 17, 0, 0, 0, 0), "swapon": (167, 0, 0)}
result = {k: sys_call(*v) for k, v in calls.items()}`;
/** SYSCALLS's result: each refused. */
export function assertSyscallsRefused(r) {
  for (const [k, v] of Object.entries(r)) {
    assert.match(v, /^err:(EPERM|EACCES|ENOSYS)$/, `${k} was not refused by the filter: ${v}`);
  }
}

/** SIGKILL to each of pids (by name), to PID 1 and to everyone it may signal. */
export function signalsProgram(pids) {
  return PRELUDE + `
import signal
out = {}
for name, pid in ${JSON.stringify(Object.entries(pids))}:
    out[name] = attempt(lambda pid=pid: os.kill(pid, signal.SIGKILL))
out["init_kill"] = attempt(lambda: os.kill(1, signal.SIGKILL))
out["init_term"] = attempt(lambda: os.kill(1, signal.SIGTERM))
out["everyone"] = attempt(lambda: os.kill(-1, signal.SIGKILL))
result = out`;
}

/** A tools/call the policy denies, written to the upstream's stdin and the gateway's stdout
 * through /proc, and through the SDK (which must say denied). */
export function policyBypassProgram(memPid, gwPid) {
  return PRELUDE + `
msg = json.dumps({"jsonrpc": "2.0", "id": 999, "method": "tools/call", "params": {"name":
      "create_entities", "arguments": {"entities": [{"name": "pwned", "entityType": "x",
      "observations": []}]}}}) + "\\n"
def via_proc():
    with open("/proc/${memPid}/fd/0", "w") as f:
        f.write(msg)
def via_gateway_stdout():
    with open("/proc/${gwPid}/fd/1", "w") as f:
        f.write(msg)
try:
    memory_create_entities(entities=[{"name": "pwned", "entityType": "x", "observations": []}]).result()
    sdk = "called"
except ToolError as e:
    sdk = e.kind
os.write(1, msg.encode())  # to its own stdout: captured by the run, never the MCP client
result = {"proc": attempt(via_proc), "stdout": attempt(via_gateway_stdout), "sdk": sdk}`;
}

/** policyBypassProgram's result, and the upstream's store (memFile) without the entity. */
export async function assertPolicyHeld(r, memFile) {
  assert.match(r.proc, /^err:/);
  assert.match(r.stdout, /^err:/);
  assert.equal(r.sdk, 'denied');
  await new Promise((res) => setTimeout(res, 300));
  const graph = fs.existsSync(memFile) ? fs.readFileSync(memFile, 'utf8') : '';
  assert.ok(!graph.includes('pwned'), 'create_entities ran although policy denies it');
}

/** /bin/sh through subprocess, and execv of a binary it can see (bin) in a child: the
 * child's exit code is the errno (1: EPERM). */
export function subprocessProgram(bin) {
  return PRELUDE + `
import subprocess
def spawn_sh():
    subprocess.run(["/bin/sh", "-c", "true"])
def exec_visible():
    pid = os.fork()
    if pid == 0:
        try:
            os.execv(${JSON.stringify(bin)}, ["x"])
        except OSError as e:
            os._exit(e.errno)
        os._exit(0)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
result = {"sh": attempt(spawn_sh), "exec": attempt(exec_visible)}`;
}

/** subprocessProgram's result: both refused, execve with EPERM. */
export function assertSubprocessRefused(r) {
  assert.match(r.sh, /^err:/);
  assert.equal(r.exec, 'ok:1', `execve of a visible binary must fail with EPERM: ${r.exec}`);
}

/** Forks up to 1000 children: how many, and the errno that stopped it. */
export const FORK_BOMB = PRELUDE + `
import time
kids, err = [], None
try:
    for _ in range(1000):
        pid = os.fork()
        if pid == 0:
            time.sleep(1.5)
            os._exit(0)
        kids.append(pid)
except OSError as e:
    err = errno.errorcode.get(e.errno)
for k in kids:
    os.waitpid(k, 0)
result = {"forked": len(kids), "err": err}`;

/** 2 GiB at once, and 1.6 GB of files in /tmp. */
export const EXHAUSTION = PRELUDE + `
def big():
    b = bytearray(2 << 30)
    return len(b)
def fill():
    chunk = b"x" * (1 << 20)
    n = 0
    for i in range(200):
        with open("/tmp/fill%d" % i, "wb") as f:
            for _ in range(8):
                f.write(chunk)
                n += 1
    return n
result = {"mem": attempt(big), "tmp": attempt(fill)}
for i in range(200):
    try:
        os.unlink("/tmp/fill%d" % i)
    except OSError:
        pass`;

/** Leaves a detached grandchild and tries to rewind ns_last_pid to hide it. */
export const LEAVE_AND_HIDE = PRELUDE + `
import time
before = open("/proc/sys/kernel/ns_last_pid").read().strip()
` + LEAVE_GRANDCHILD + `
try:
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(int(before)))
    rewound = "written"
except OSError as e:
    rewound = type(e).__name__
result = {"pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()), "rewound": rewound}`;

/** The PIDs the next program sees. */
export const PIDS = 'import os\nresult = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())';

/** Session B looks for session A's secret: the runtime's sessions, namespace dicts, the
 * memory, environ and cmdline of every process it sees. */
export function sessionSpyProgram(secret) {
  return PRELUDE + `
import sys, gc
found = []
rt = sys.modules.get("codemcp_rt.runner")
if rt is not None and ${JSON.stringify(secret)} in repr(getattr(rt, "_sessions", {})):
    found.append("runner._sessions")
for o in gc.get_objects():
    if isinstance(o, dict) and o.get("secret_a") == ${JSON.stringify(secret)}:
        found.append("a namespace dict")
        break
needle = ${JSON.stringify(secret)}.encode()
def scan_mem(p):
    hits = 0
    with open("/proc/%s/maps" % p) as maps, open("/proc/%s/mem" % p, "rb", 0) as mem:
        for line in maps:
            addr, perms = line.split()[:2]
            if not perms.startswith("rw"):
                continue
            lo, hi = (int(x, 16) for x in addr.split("-"))
            if hi - lo > (64 << 20):
                continue
            try:
                mem.seek(lo)
                if needle in mem.read(hi - lo):
                    hits += 1
            except OSError:
                pass
    return hits
scanned = {}
for p in os.listdir("/proc"):
    if p.isdigit() and p != str(os.getpid()):
        scanned[p] = attempt(lambda p=p: scan_mem(p))
        if scanned[p] not in ("ok:0",) and scanned[p].startswith("ok:"):
            found.append("/proc/%s/mem" % p)
        for f in ("environ", "cmdline"):
            v = attempt(lambda p=p, f=f: read("/proc/%s/%s" % (p, f), 1 << 16))
            if ${JSON.stringify(secret)} in v:
                found.append("/proc/%s/%s" % (p, f))
result = {"found": found, "has_var": "secret_a" in globals()}`;
}
