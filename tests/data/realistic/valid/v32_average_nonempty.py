# An average over a search, guarded for no matches.
# result: true
found = memory_search_nodes(query='person')['entities']
counts = [len(e['observations']) for e in found]
avg = sum(counts) / len(counts) if counts else 0
result = avg > 0
