# The second of two entities is broken.
# expect: `entities[1]` has `entityTyp` where the key is `entityType`: rename it
# expect: (line 4)
result = memory_create_entities(entities=[
    {'name': 'a', 'entityType': 't', 'observations': []},
    {'name': 'b', 'entityTyp': 't', 'observations': []},
])
