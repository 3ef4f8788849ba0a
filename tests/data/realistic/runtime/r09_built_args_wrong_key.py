# Entities assembled in a loop with a wrong key: caught at the call, before the upstream.
# class: arguments
# expect: entityType
# expect: line 9
people = [('Dora', 'age 50'), ('Eli', 'age 22')]
ents = []
for name, obs in people:
    ents.append({'name': name, 'type': 'person', 'observations': [obs]})
r = memory_create_entities(entities=ents)
result = [e['name'] for e in r['entities']]
