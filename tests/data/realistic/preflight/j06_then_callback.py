# Chaining a callback with .then().
# class: js
# expect: .result()
names = []
memory_search_nodes(query='person').then(lambda r: names.extend(e['name'] for e in r['entities']))
result = names
