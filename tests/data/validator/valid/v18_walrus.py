# Walrus bindings.
if (filesystem_cache := {}) is not None:
    filesystem_cache["x"] = 1
data = [y for x in range(5) if (y := x * 2) > 2]
while (memory_next := data.pop() if data else None) is not None:
    print(memory_next)
result = filesystem_cache
