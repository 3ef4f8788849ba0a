# Ages of the people: a field typo inside a loop over a filtered comprehension.
# class: shapes
# expect: has no field `observation` (line 8). Did you mean `observations`?
g = memory_read_graph()
people = [e for e in g['entities'] if e['entityType'] == 'person']
ages = {}
for p in people:
    ages[p['name']] = [int(o.split()[1]) for o in p['observation'] if o.startswith('age ')]
result = ages
