# Dict methods on results are not fields.
g = memory_read_graph()
keys = list(g.keys())
vals = list(g.values())
items = dict(g.items())
copy = g.copy()
result = {"keys": keys, "n": len(vals), "same": items == copy}
