# A typo on a loop variable.
# expect: has no field `entityTyp` (line 6). Did you mean `entityType`?
graph = memory_read_graph()
out = []
for e in graph['entities']:
    out.append(e['entityTyp'])
result = out
