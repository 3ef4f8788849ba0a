# A plain re-binding of a result.
# expect: memory_read_graph: result has no field `relation`
# expect: Did you mean `relations`?
r = memory_read_graph()
g = r
result = g['relation']
