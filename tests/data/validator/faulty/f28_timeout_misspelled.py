# timeout instead of timeout_ms.
# expect: unknown argument `timeout` for memory_read_graph (line 3). Did you mean `timeout_ms`?
g = memory_read_graph(timeout=5000)
result = len(g["entities"])
