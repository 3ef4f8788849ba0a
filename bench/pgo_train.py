#!/usr/bin/python3
"""pgo_train — the training run of codemcp's profile-guided release build.

install.sh builds build-release/ with -Db_pgo=generate, runs this script on it, then rebuilds
with -Db_pgo=use: GCC then compiles the gateway and the worker from the counts this run left
(hot paths straight, cold blocks split out of them, inlining where calls are frequent), which
makes a one-call execute ~3 % faster. bench/results/percall.md (tenth pass) has the numbers.

What it runs: the built `codemcp` over stdio, in front of tests/fixtures/fake_upstream.py
twice, as two servers (standard library only, so an install needs no npm), with the host
isolation (a sandboxed worker could not write its counters into the build tree) and a
temporary HOME and runtime directory. Then the programs an agent typically sends, each many
times: one call, calls in sequence and at once, no call, printing, dicts and lists built from
results, a prose result, a failing tool, an exception, a syntax error, a timeout-bounded
call, tools/list. Last, SIGUSR2 to every codemcp-worker (a generating build's worker writes
its counters on it: src/worker/pgo_dump.c) and EOF to the gateway, which writes its own at
exit.

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
sys.path.insert(0, os.path.join(ROOT, "python"))
from codemcp_rt.procs import descendants  # noqa: E402 (the runtime's /proc walk, stdlib only)

# The mix: (program, expected `result`, or None when the run is meant to fail). Two servers
# with names of different lengths, one with a dash, and tools of different name lengths, as a
# real configuration has: GCC also profiles the sizes that copies and compares see, and a
# training with one size only would specialize the code for that size (a 1-letter server
# name did: every longer one took the block split out as cold). Results are numbers, prose
# and JSON text, as tools answer.
PROGRAMS = [
    ("result = notes_add(a=1, b=2)", 3),
    ("result = file_store_echo(text='The sum of 1 and 2 is 3.')", "The sum of 1 and 2 is 3."),
    ("result = 1", 1),
    ("s = 0\nfor i in range(20):\n    s += notes_add(a=i, b=1)\nresult = s", 210),
    ("ps = [file_store_add(a=i, b=1) for i in range(20)]\nresult = sum(p for p in ps)", 210),
    ("ps = [notes_echo(text='row %d: done' % i) for i in range(8)]\n"
     "result = [str(p).split(': ')[1] for p in ps].count('done')", 8),
    ("ps = [file_store_echo(text='w%d' % i) for i in range(8)]\nresult = ','.join(str(p) for p in ps)",
     ",".join("w%d" % i for i in range(8))),
    ("print('scanning')\nrows = [{'id': i, 'v': notes_add(a=i, b=i)} for i in range(5)]\n"
     "result = {r['id']: r['v'] for r in rows if r['v'] % 4 == 0}", {"0": 0, "2": 4, "4": 8}),
    ("r = file_store_structured()\nresult = sorted(r) if isinstance(r, dict) else str(r)[:20]", ...),
    ("x = notes_add(a=2, b=3, timeout_ms=5000)\nresult = x * 2", 10),
    ("try:\n    file_store_fail()\nexcept ToolError as e:\n    result = e.kind\n", ...),
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


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def counting(build):
    """True when build was set up with -Db_pgo=generate (meson's record of its options)."""
    try:
        with open(os.path.join(build, "meson-info", "intro-buildoptions.json")) as f:
            return any(o.get("name") == "b_pgo" and o.get("value") == "generate" for o in json.load(f))
    except (OSError, ValueError, AttributeError):
        return False


def counts_written(build, since, side):
    """(files, newest mtime): the count files (.gcda) of side ("gateway" or "worker") under
    build/src written at or after since (a time.time()). Those of an earlier training do not
    count and are left alone: a build that uses the profile in the same tree reads them."""
    n, newest = 0, 0.0
    for d, _, files in os.walk(os.path.join(build, "src")):
        worker = os.path.relpath(d, build).startswith(os.path.join("src", "worker"))
        if worker != (side == "worker"):
            continue
        for f in files:
            try:
                t = os.stat(os.path.join(d, f)).st_mtime if f.endswith(".gcda") else 0.0
            except OSError:
                continue
            if t >= since:
                n, newest = n + 1, max(newest, t)
    return n, newest


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
        json.dump({"mcp": {name: {"type": "local", "command": ["/usr/bin/python3", UPSTREAM]}
                           for name in ("notes", "file-store")}}, f)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODEMCP_")}
    # Everything the gateway writes stays in home (its admin socket and instance record
    # included: the training gateway does not show up in the user's `codemcp instances`).
    env.update({"HOME": home, "XDG_CONFIG_HOME": home, "XDG_STATE_HOME": home,
                "XDG_CACHE_HOME": home, "XDG_RUNTIME_DIR": home, "CODEMCP_ISOLATION": "host",
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
    while True:  # until both upstreams' tools are in the SDK
        r = gw.execute("result = notes_add(a=1, b=2) + file_store_add(a=1, b=2)")
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
    # Only a counting build's worker handles SIGUSR2; any other dies of it.
    workers = [p for p in descendants(gw.p.pid) if comm(p) == "codemcp-worker"] if counting(build) else []
    for p in workers:
        try:
            os.kill(p, signal.SIGUSR2)
        except OSError:
            pass
    # Until the workers' counts are on disk and no file has changed for 0.3 s: each signalled
    # worker rewrites the same files (merging its counts), ms apart. At most 10 s.
    deadline = time.monotonic() + 10
    while workers and time.monotonic() < deadline and gw.p.poll() is None:
        n, newest = counts_written(build, t0, "worker")
        if n and time.time() - newest > 0.3:
            break
        time.sleep(0.05)
    gw.p.stdin.close()
    try:
        rc = gw.p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        gw.p.kill()
        fail("the gateway did not exit within 30 s of EOF")
    if rc != 0:
        fail("the gateway exited with status %d" % rc)
    n_gw, n_wk = counts_written(build, t0, "gateway")[0], counts_written(build, t0, "worker")[0]
    if not n_gw or not n_wk:
        fail("no profile written (gateway %d files, worker %d): is %s a -Db_pgo=generate build?"
             % (n_gw, n_wk, build))
    print("pgo_train: %d runs in %d workers; profile files: gateway %d, worker %d"
          % (runs, len(workers), n_gw, n_wk))


if __name__ == "__main__":
    main()
