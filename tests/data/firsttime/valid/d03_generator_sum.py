# Generator expression over a result.
# result: 3
memory_create_entities(entities=[{'name': 'v_gen', 'entityType': 'probe', 'observations': ['1', '2', '3']}])
g = memory_open_nodes(names=['v_gen'])
result = sum(len(e['observations']) for e in g['entities'])
