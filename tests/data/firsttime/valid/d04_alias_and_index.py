# Alias of a result list.
# result: "z"
memory_create_entities(entities=[{'name': 'v_alias', 'entityType': 'probe', 'observations': ['z']}])
g = memory_open_nodes(names=['v_alias'])
items = g['entities']
result = items[0]['observations'][0]
