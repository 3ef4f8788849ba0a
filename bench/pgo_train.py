#!/usr/bin/python3
"""pgo_train — the training run of codemcp's profile-guided release build (issue 17).

install.sh builds build-release/ with -Db_pgo=generate, runs this script on it, then rebuilds
with -Db_pgo=use: GCC then compiles the gateway and the worker from the counts this run left
(hot paths straight, cold blocks split out of them, inlining where calls are frequent), which
makes a one-call execute ~3 % faster. bench/results/percall.md (tenth pass) has the numbers.

What it runs: the built `codemcp` over stdio, in front of tests/fixtures/fake_upstream.py
(standard library only, so an install needs no npm), with the host isolation (a sandboxed
worker could not write its counters into the build tree) and its own HOME. Then the programs
an agent typically sends, each many times: one call, calls in sequence and at once, no call,
printing, dicts and lists built from results, a failing tool, an exception, a syntax error,
a timeout-bounded call, tools/list. Last, SIGUSR2 to every codemcp-worker (a generating
build's worker writes its counters on it: src/worker/pgo_dump.c) and EOF to the gateway,
which writes its own at exit.

Usage: /usr/bin/python3 bench/pgo_train.py BUILD_DIR [rounds=100]
Exit status 0 when the gateway and the worker both left counters in BUILD_DIR, else 1 with
the reason on stderr (install.sh then builds without a profile).
"""
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UPSTREAM = os.path.join(ROOT, "tests", "fixtures", "fake_upstream.py")

# The mix: (program, expected `result`, or None when the run is meant to fail).
PROGRAMS = [
    ("result = t_add(a=1, b=2)", 3),
    ("result = 1", 1),
    ("s = 0\nfor i in range(20):\n    s += t_add(a=i, b=1)\nresult = s", 210),
    ("ps = [t_add(a=i, b=1) for i in range(20)]\nresult = sum(p for p in ps)", 210),
    ("ps = [t_echo(text='w%d' % i) for i in range(8)]\nresult = ','.join(str(p) for p in ps)",
     ",".join("w%d" % i for i in range(8))),
    ("print('scanning')\nrows = [{'id': i, 'v': t_add(a=i, b=i)} for i in range(5)]\n"
     "result = {r['id']: r['v'] for r in rows if r['v'] % 4 == 0}", {"0": 0, "2": 4, "4": 8}),
    ("r = t_structured()\nresult = sorted(r) if isinstance(r, dict) else str(r)[:20]", ...),
    ("x = t_add(a=2, b=3, timeout_ms=5000)\nresult = x * 2", 10),
    ("try:\n    t_fail()\nexcept ToolError as e:\n    result = e.kind\n", ...),
    ("raise ValueError('no such row')", None),
    ("result = (", None),
    ("import json\nresult = json.loads(json.dumps({'a': [1, 2, 3]}))['a'][1]", 2),
]


LOG = None  # the gateway's stderr (the host-isolation warning, whatever went wrong)
STARTED = []  # the gateways started, killed on the way out if still running


def fail(msg):
    sys.stderr.write("pgo_train: %s\n" % msg)
    if LOG is not None:
        LOG.seek(0)
        tail = LOG.read().decode(errors="replace").splitlines()[-20:]
        sys.stderr.write("".join("pgo_train: gateway: %s\n" % line for line in tail))
    sys.exit(1)


class Gateway:
    """codemcp over stdio: newline-delimited JSON-RPC, one request at a time."""

    def __init__(self, argv, env, log):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env)
        STARTED.append(self.p)
        self.buf = b""
        self.next_id = 1

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def request(self, method, params, timeout=60.0):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            nl = self.buf.find(b"\n")
            if nl >= 0:
                line, self.buf = self.buf[:nl], self.buf[nl + 1:]
                msg = json.loads(line)
                if msg.get("id") == rid and ("result" in msg or "error" in msg):
                    return msg
                continue  # a notification or a request of the gateway's: not ours
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.p.stdout], [], [], left)[0]:
                fail("no answer to %s within %.0f s" % (method, timeout))
            chunk = os.read(self.p.stdout.fileno(), 65536)
            if not chunk:
                fail("the gateway closed its stdout (exit status %s)" % self.p.poll())
            self.buf += chunk

    def execute(self, code):
        msg = self.request("tools/call", {"name": "execute_python", "arguments": {"code": code}})
        if "error" in msg:
            fail("execute_python answered an error: %s" % json.dumps(msg["error"])[:300])
        return msg["result"]


def descendants(pid):
    """Every process below pid (from /proc), children first."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def gcda_count(build, sub, since):
    """Counts files (.gcda) under build/sub written at or after since (a time.time()): the
    ones of an earlier training do not count, and are left alone (a profile-using build in the
    same tree reads them)."""
    n = 0
    for d, _, files in os.walk(os.path.join(build, sub)):
        for f in files:
            if f.endswith(".gcda"):
                try:
                    n += os.stat(os.path.join(d, f)).st_mtime >= since
                except OSError:
                    pass
    return n


def main():
    home = tempfile.mkdtemp(prefix="codemcp-pgo-")
    try:
        train(home)
    finally:
        for p in STARTED:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(home, ignore_errors=True)


def train(home):
    """The whole run, in the temporary directory home; leaves through fail() on a problem."""
    if len(sys.argv) < 2:
        fail("usage: pgo_train.py BUILD_DIR [rounds]")
    build = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    binary = os.path.join(build, "src", "codemcp")
    if not os.access(binary, os.X_OK):
        fail("%s is not built" % binary)
    t0 = time.time() - 1  # a file system's timestamps may be coarser than ours
    cfg = os.path.join(home, "mcp.json")
    with open(cfg, "w") as f:
        json.dump({"mcp": {"t": {"type": "local", "command": ["/usr/bin/python3", UPSTREAM]}}}, f)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODEMCP_")}
    env.update({"HOME": home, "XDG_CONFIG_HOME": home, "XDG_STATE_HOME": home,
                "XDG_CACHE_HOME": home, "CODEMCP_ISOLATION": "host",
                "CODEMCP_LOG_LEVEL": "error", "CODEMCP_USAGE_FILE": "off"})
    global LOG
    LOG = tempfile.TemporaryFile(dir=home)
    gw = Gateway([binary, "--config", cfg], env, LOG)
    init = gw.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "pgo-train", "version": "1"}})
    if "result" not in init:
        fail("initialize failed: %s" % json.dumps(init)[:300])
    gw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    deadline = time.monotonic() + 60
    while True:  # until the upstream's tools are in the SDK
        r = gw.execute("result = t_add(a=1, b=2)")
        if not r.get("isError"):
            break
        if time.monotonic() > deadline:
            fail("the SDK never got the upstream's tools: %s" % json.dumps(r)[:300])
        time.sleep(0.2)
    runs = 0
    for _ in range(rounds):
        gw.request("tools/list", {})
        for code, want in PROGRAMS:
            r = gw.execute(code)
            runs += 1
            if want is None:
                if not r.get("isError"):
                    fail("expected a failed run for %r, got %s" % (code, json.dumps(r)[:300]))
                continue
            if r.get("isError"):
                fail("run failed: %r: %s" % (code, json.dumps(r)[:300]))
            got = (r.get("structuredContent") or {}).get("result")
            if want is not ... and got != want:
                fail("run %r gave %r, expected %r" % (code, got, want))
    workers = [p for p in descendants(gw.p.pid) if comm(p) == "codemcp-worker"]
    for p in workers:
        try:
            os.kill(p, signal.SIGUSR2)
        except OSError:
            pass
    time.sleep(1.0)
    gw.p.stdin.close()
    try:
        rc = gw.p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        gw.p.kill()
        fail("the gateway did not exit within 30 s of EOF")
    if rc != 0:
        fail("the gateway exited with status %d" % rc)
    n_gw = gcda_count(build, "src/codemcp.p", t0) + gcda_count(build, "src/libcodemcp_gateway.a.p", t0)
    n_wk = gcda_count(build, "src/worker", t0)
    if not n_gw or not n_wk:
        fail("no profile written (gateway %d files, worker %d): is %s a -Db_pgo=generate build?"
             % (n_gw, n_wk, build))
    print("pgo_train: %d runs in %d workers; profile files: gateway %d, worker %d"
          % (runs, len(workers), n_gw, n_wk))


if __name__ == "__main__":
    main()
