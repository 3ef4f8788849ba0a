# A str key on a list.
# expect: result['entities'] is a list, so result['entities']['name'] fails (line 4)
g = memory_read_graph()
result = g['entities']['name']
