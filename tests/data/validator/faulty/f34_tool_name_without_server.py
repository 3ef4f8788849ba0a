# Only the tool's name.
# expect: `read_graph` is not a known SDK function (line 3). Did you mean `memory_read_graph`?
graph = read_graph()
result = graph
