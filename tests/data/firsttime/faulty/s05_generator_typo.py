# A typo inside a generator expression.
# expect: has no field `observatons` (line 4). Did you mean `observations`?
g = memory_read_graph()
result = sum(len(e['observatons']) for e in g['entities'])
