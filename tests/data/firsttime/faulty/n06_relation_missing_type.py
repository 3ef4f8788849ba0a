# A relation without relationType.
# expect: `relations[0]` is missing the required key `relationType`
result = memory_create_relations(relations=[{'from': 'a', 'to': 'b'}])
