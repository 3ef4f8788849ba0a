# Counting entities with len().
# result: {"people": 3, "all": true}
g = memory_read_graph()
people = [e for e in g['entities'] if e['entityType'] == 'person']
n = len(g['entities'])
result = {'people': len(people), 'all': n >= 5}
