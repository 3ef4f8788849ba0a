# A guessed verb for creating relations.
# class: names
# expect: memory_create_relations
g = memory_read_graph()
people = [e['name'] for e in g['entities'] if e['entityType'] == 'person']
memory_add_relations(relations=[{'from': p, 'to': 'Acme', 'relationType': 'knows_of'} for p in people])
result = len(people)
