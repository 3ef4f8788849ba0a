# source/target for from/to.
# expect: `relations[0]` is missing the required key `from`
# expect: `relations[0]` is missing the required key `to`
result = memory_create_relations(relations=[{'source': 'a', 'target': 'b', 'relationType': 'knows'}])
