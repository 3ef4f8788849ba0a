# Held out (written after the fixes): stored field.
# result: true
g = memory_read_graph()
people = [e for e in g['entities'] if e['entityType'] == 'person']
for p in people:
    p['age'] = 1
for p in people:
    print(p["age"])
result = len(people) >= 3
