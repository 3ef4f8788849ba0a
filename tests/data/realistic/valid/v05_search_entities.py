# Iterating the entities inside a search result.
# result: ["Acme"]
found = memory_search_nodes(query='Acme')
names = []
for e in found['entities']:
    names.append(e['name'])
result = sorted(names)
