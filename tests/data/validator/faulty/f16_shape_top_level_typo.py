# A misspelled top-level field of a tool result.
# expect: memory_read_graph: result has no field `entites` (line 4). Did you mean `entities`?
g = memory_read_graph()
people = [e["name"] for e in g["entites"]]
result = people
