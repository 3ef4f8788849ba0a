# An average over a search that matched nothing.
# class: empty
# expect: memory_search_nodes
# expect: no matches
found = memory_search_nodes(query='zeppelin')['entities']
counts = [len(e['observations']) for e in found]
avg = sum(counts) / len(counts)
result = round(avg, 2)
