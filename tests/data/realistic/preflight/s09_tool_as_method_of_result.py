# A tool called as a method of another result.
# class: shapes
# expect: memory_search_nodes(
graph = memory_read_graph()
hits = graph.search_nodes(query='acme')
result = [e['name'] for e in hits['entities']]
