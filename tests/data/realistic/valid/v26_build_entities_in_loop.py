# Entities assembled in a loop, then created.
# result: ["rv_Dora", "rv_Eli"]
people = [('rv_Dora', 'age 50'), ('rv_Eli', 'age 22')]
ents = []
for name, obs in people:
    ents.append({'name': name, 'entityType': 'person', 'observations': [obs]})
r = memory_create_entities(entities=ents)
result = sorted(e['name'] for e in r['entities'])
