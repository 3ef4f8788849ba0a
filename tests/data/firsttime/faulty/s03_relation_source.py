# Relations have from/to, not source.
# expect: memory_read_graph: result['relations'][…] has no field `source` (line 6)
r = memory_read_graph()
result = []
for rel in r['relations']:
    result.append(rel['source'])
