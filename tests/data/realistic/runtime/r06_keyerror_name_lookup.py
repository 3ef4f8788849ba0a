# Looking up a person that is not in the graph.
# class: keyerror
# expect: 'Dan'
# expect: memory_read_graph
g = memory_read_graph()
by_name = {e['name']: e for e in g['entities']}
wanted = ['Ann', 'Dan']
result = [by_name[n]['entityType'] for n in wanted]
