#!/usr/bin/env python3
"""Fails when a gateway module includes the header of a module above it.

The gateway's modules form one stack (docs/architecture.md draws it): a module may include
the headers of modules strictly below it, and its own. Results flow back up through hooks
registered at init (main.c wires them), never through an upward #include. Every .c/.h file
in src/ must belong to a module listed in RANK, so a new file makes this test fail until
it is placed in the stack.

Usage: check_layers.py SRC_DIR   (exit 1 listing every upward or sideways include)
       check_layers.py --self-test  (checks that the checker itself catches a bad include)
"""
from __future__ import annotations

import os
import re
import sys

# Rank of each module: higher may include lower. Equal ranks may not include each other.
RANK = {
    # base: no knowledge of MCP sessions, runs or workers
    "log": 0, "util": 1, "idmap": 1.2, "timerheap": 1.2, "pgguard": 1, "jsonc": 1, "jsonfast": 1, "jsonpretty": 1.5, "wsserver": 1.5, "jsonscan": 1.5, "run_params": 2.5, "run_answer": 2.5, "run_relay": 2.5, "json_escape": 0, "wsproto": 1, "jsonrpc": 2, "sse": 2, "loop": 2,
    "config": 2, "redact": 2, "policy": 3, "curl_thread": 3, "sdkgen": 3, "connlimit": 3,
    "cfgedit": 3, "admin_paths": 3, "usage": 3, "mcp_era": 3, "admin_client": 4,
    # OAuth: discovery, flows and the token store (blocking; helper threads and the CLI), and
    # the gateway's side of it (oauth_gw: refresh scheduling on the loop)
    "oauth": 3.5, "oauth_gw": 4.5,
    # the namespaces (handles, principals, homes) and which are kept (runs, workers, serve_http ask)
    "namespaces": 4,
    # the registry of upstream servers and what is built from it
    "upstream": 10, "toolstate": 10.5, "catalog": 11, "shapes": 12,
    # the run pipeline, bottom to top
    "calls": 13, "control": 14, "workers": 15, "runs": 16, "mcp_server": 17,
    # how workers are confined (used by workers.c when it spawns one)
    "sandbox": 14.5,
    # worker processes: exec and kill (worker_proc), the prototype that forks them, and the
    # wire format the prototype speaks (a base header)
    "worker_proc": 14.6, "prototype": 14.8, "protowire": 1,
    # transports and commands
    "serve_stdio": 18, "serve_http": 18, "setup": 18,
    "admin": 19, "oauth_cli": 19.2, "tui": 19.5,
    "main": 20,
}
# Files that are part of another module (its transports, internals, helpers).
MODULE_OF = {
    "upstream_http": "upstream", "upstream_stdio": "upstream", "upstream_replay": "upstream",
    "upstream_http_int": "upstream", "upstream_http_hdrs": "upstream", "upstream_http_queue": "upstream",
    "upstream_int": "upstream", "upstream_handshake": "upstream", "upstream_call": "upstream",
    "admin_ops": "admin", "admin_cli": "admin", "upstream_admin": "upstream",
    "setup_clients": "setup",
    "oauth_disc": "oauth", "oauth_flow": "oauth", "oauth_store": "oauth",
    "config_wrap": "config", "config_int": "config", "loop_child": "loop", "loop_int": "loop",
    "http_int": "serve_http", "http_stream": "serve_http", "http_modern": "serve_http", "serve_sse_legacy": "serve_http", "http_auth": "serve_http", "http_addr": "serve_http",
    "redact_rules": "redact",
    "workers_int": "workers", "worker_spawn": "workers", "worker_sessions": "workers", "worker_guard": "workers",
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)\.h"', re.M)


def module_of(stem: str) -> str | None:
    m = MODULE_OF.get(stem, stem)
    if m not in RANK and m.startswith("sandbox_"):
        m = "sandbox"
    return m if m in RANK else None


def check(files: dict[str, str]) -> list[str]:
    """files: name -> text. Returns the violations, one line each."""
    bad = []
    for name, text in sorted(files.items()):
        stem = os.path.splitext(name)[0]
        me = module_of(stem)
        if me is None:
            bad.append(f"{name}: not in the module stack (add it to RANK or MODULE_OF in "
                       f"tests/tools/check_layers.py and to docs/architecture.md)")
            continue
        for inc in INCLUDE.findall(text):
            them = module_of(os.path.basename(inc))
            if them is None:
                bad.append(f"{name}: includes \"{inc}.h\", which is in no module of the stack")
            elif them != me and RANK[them] >= RANK[me]:
                how = "sideways" if RANK[them] == RANK[me] else "upward"
                bad.append(f"{name}: {how} include of \"{inc}.h\" ({me} is rank {RANK[me]}, "
                           f"{them} is rank {RANK[them]}): report up through a hook instead")
    return bad


def self_test() -> int:
    good = {"workers.c": '#include "workers.h"\n#include "control.h"\n#include "log.h"\n'}
    upward = {"workers.c": '#include "workers.h"\n#include "runs.h"\n'}
    sideways = {"serve_stdio.c": '#include "serve_http.h"\n'}
    stranger = {"newthing.c": '#include "log.h"\n'}
    ok = (check(good) == [] and len(check(upward)) == 1 and len(check(sideways)) == 1
          and len(check(stranger)) == 1)
    print("self-test:", "ok" if ok else "FAILED")
    return 0 if ok else 1


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    if self_test():
        return 1
    src = argv[1]
    files = {}
    for root, dirs, names in os.walk(src):
        dirs[:] = [d for d in dirs if d != "worker"]  # the worker host is a binary of its own
        for name in names:
            if name.endswith((".c", ".h")):
                with open(os.path.join(root, name), encoding="utf-8") as f:
                    files[name] = f.read()
    bad = check(files)
    for line in bad:
        print(line)
    print(f"{len(files)} files checked, {len(bad)} bad include(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
