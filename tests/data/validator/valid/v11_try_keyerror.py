# Reads guarded by try/except KeyError.
g = memory_read_graph()
try:
    version = g["version"]
except KeyError:
    version = None
try:
    stamp = g.updatedAt
except (AttributeError, KeyError):
    stamp = None
result = {"version": version, "stamp": stamp}
