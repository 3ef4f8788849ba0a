# Counting entities the JavaScript way.
# class: js
# expect: len(
g = memory_read_graph()
people = [e for e in g['entities'] if e['entityType'] == 'person']
n = g['entities'].length
result = {'people': len(people), 'all': n}
