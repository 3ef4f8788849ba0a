# Logging progress with console.log.
# class: js
# expect: print(
g = memory_read_graph()
for e in g['entities']:
    console.log(e['name'])
result = len(g['entities'])
