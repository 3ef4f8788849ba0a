# A guessed verb for searching the graph.
# class: names
# expect: memory_search_nodes
out = {}
for q in ['Acme', 'Globex']:
    r = memory_find_nodes(query=q)
    out[q] = [e['name'] for e in r['entities']]
result = out
