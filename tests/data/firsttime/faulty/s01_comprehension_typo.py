# A typo on a comprehension variable.
# expect: memory_read_graph: result['entities'][…] has no field `nme` (line 4). Did you mean `name`?
g = memory_read_graph()
result = [e['nme'] for e in g['entities']]
