# Nested loops over a result.
# result: ["AB", "CD"]
memory_create_entities(entities=[{'name': 'v_nest', 'entityType': 'p', 'observations': ['ab', 'cd']}])
g = memory_open_nodes(names=['v_nest'])
out = []
for e in g['entities']:
    for o in e['observations']:
        out.append(o.upper())
result = out
