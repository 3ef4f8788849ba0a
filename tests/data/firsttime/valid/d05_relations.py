# Relations created and read back.
# result: [["v_r1", "knows", "v_r2"]]
memory_create_entities(entities=[{'name': 'v_r1', 'entityType': 'p', 'observations': []}, {'name': 'v_r2', 'entityType': 'p', 'observations': []}])
memory_create_relations(relations=[{'from': 'v_r1', 'to': 'v_r2', 'relationType': 'knows'}])
g = memory_open_nodes(names=['v_r1', 'v_r2'])
result = [(r['from'], r['relationType'], r['to']) for r in g['relations']]
