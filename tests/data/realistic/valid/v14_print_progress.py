# Printing progress while counting.
# result: true
g = memory_read_graph()
n = 0
for e in g['entities']:
    print(e['name'])
    n += 1
result = n >= 5
