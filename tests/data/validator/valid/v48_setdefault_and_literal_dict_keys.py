# Keys written with setdefault / dict literal update on a result.
g = memory_read_graph()
g.setdefault("meta", {})
g.update({"source": "memory"}, note="x")
result = (g["meta"], g["source"], g["note"])
