"""A fast stdio MCP server for bench/bigresult.mjs and bench/coldstart.mjs: newline-delimited
JSON-RPC, no SDK (the loop of tests/fixtures/big_upstream.py). Tool `records(n)` answers n GitHub-issue-like records of ~1 KB as one JSON
text block; `records_structured(n)` the same records as structuredContent. Each answer is built
once per n and kept, so the server's own cost per call is one write of ready bytes."""
import json
import os
import random
import sys

# The stdio loop is the test fixture's (tests/fixtures/big_upstream.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures"))
import big_upstream  # noqa: E402

RECORDS = {}
ANSWERS = {}


def record(i, rnd):
    words = ["gateway", "worker", "frame", "parse", "buffer", "python", "result", "memory",
             "socket", "timeout", "shape", "upstream", "session", "token", "cold", "start"]
    body = " ".join(rnd.choice(words) for _ in range(95))
    return {
        "id": 1000000 + i, "number": i, "title": f"Issue {i}: " + " ".join(rnd.choice(words) for _ in range(6)),
        "state": rnd.choice(["open", "closed"]), "locked": False, "comments": rnd.randrange(40),
        "user": {"login": f"user{rnd.randrange(5000)}", "id": rnd.randrange(10**7), "site_admin": False},
        "labels": [{"name": rnd.choice(words), "color": "%06x" % rnd.randrange(1 << 24)} for _ in range(2)],
        "created_at": "2026-%02d-%02dT12:00:00Z" % (1 + i % 12, 1 + i % 28),
        "score": round(rnd.random() * 100, 3), "url": f"https://example.test/issues/{i}", "body": body,
    }


def records(n):
    if n not in RECORDS:
        rnd = random.Random(n)
        RECORDS[n] = [record(i, rnd) for i in range(n)]
    return RECORDS[n]


def answer(name, n):
    key = (name, n)
    if key not in ANSWERS:
        recs = records(n)
        if name == "records":
            result = {"content": [{"type": "text", "text": json.dumps(recs, separators=(",", ":"))}]}
        else:
            result = {"content": [{"type": "text", "text": f"{n} records"}],
                      "structuredContent": {"records": recs}}
        ANSWERS[key] = json.dumps(result, separators=(",", ":")).encode()
    return ANSWERS[key]


TOOLS = [
    {"name": "records", "description": "n issue records as JSON text",
     "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
    {"name": "records_structured", "description": "n issue records as structuredContent",
     "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
]


def main():
    if len(sys.argv) > 1:  # prepare: build the answers for these n before serving
        for n in sys.argv[1:]:
            answer("records", int(n))
    big_upstream.serve(TOOLS, lambda name, args: answer(name, int(args.get("n", 1))), "bigresult")


if __name__ == "__main__":
    main()
