# Ages of the people through a filtered comprehension.
# result: {"Ann": 34, "Bob": 41, "Cleo": 29}
g = memory_read_graph()
people = [e for e in g['entities'] if e['entityType'] == 'person']
ages = {}
for p in people:
    ages[p['name']] = [int(o.split()[1]) for o in p['observations'] if o.startswith('age ')][0]
result = ages
