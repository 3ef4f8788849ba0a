# Comprehension over a result.
# result: ["probe"]
memory_create_entities(entities=[{'name': 'v_comp', 'entityType': 'probe', 'observations': []}])
g = memory_open_nodes(names=['v_comp'])
result = [e['entityType'] for e in g['entities']]
