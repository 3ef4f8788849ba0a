# Delete then read (program order).
# result: 0
memory_create_entities(entities=[{'name': 'v_del', 'entityType': 'p', 'observations': []}])
memory_delete_entities(entityNames=['v_del'])
g = memory_open_nodes(names=['v_del'])
result = len(g['entities'])
