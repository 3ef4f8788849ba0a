# Iterating the search result as if it were the list of entities inside it.
# class: shapes
# expect: memory_search_nodes
# expect: result['entities']
found = memory_search_nodes(query='Acme')
names = []
for e in found:
    names.append(e['name'])
result = names
