# Through .result().
# expect: has no field `entity_type`
g = memory_read_graph().result()
result = [e['entity_type'] for e in g['entities']]
