# Loop variables over a result.
# result: {"v_loop_a": 1, "v_loop_b": 2}
memory_create_entities(entities=[{'name': 'v_loop_a', 'entityType': 'probe', 'observations': ['a']}, {'name': 'v_loop_b', 'entityType': 'probe', 'observations': ['b', 'c']}])
g = memory_open_nodes(names=['v_loop_a', 'v_loop_b'])
out = {}
for e in g['entities']:
    out[e['name']] = len(e['observations'])
result = out
