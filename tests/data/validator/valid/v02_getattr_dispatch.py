# Calling SDK functions by name through a dict of globals-like mapping.
import json
tools = {"graph": memory_read_graph, "dirs": filesystem_list_allowed_directories}
out = {}
for key, fn in tools.items():
    out[key] = fn(timeout_ms=10_000)
result = json.loads(json.dumps(out, default=str))
