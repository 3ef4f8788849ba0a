# x = fn(...).result() binds the value itself.
# expect: memory_read_graph: result['relations'][0] has no field `relation_type` (line 4). Did you mean `relationType`?
graph = memory_read_graph().result()
kinds = graph["relations"][0]["relation_type"]
result = kinds
