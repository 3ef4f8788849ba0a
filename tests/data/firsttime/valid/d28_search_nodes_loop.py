# search_nodes then a loop with .get().
# result: ["needle"]
memory_create_entities(entities=[{'name': 'v_search_me', 'entityType': 'needle', 'observations': ['hay']}])
found = memory_search_nodes(query='v_search_me')
result = [e.get('entityType') for e in found['entities']]
