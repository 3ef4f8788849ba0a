# Looking people up with .get() so a missing one is None.
# result: ["person", null]
g = memory_read_graph()
by_name = {e['name']: e for e in g['entities']}
result = [by_name.get(n, {}).get('entityType') for n in ['Ann', 'Dan']]
