# An entity without observations.
# expect: `entities[0]` is missing the required key `observations`
result = memory_create_entities(entities=[{'name': 'ada', 'entityType': 'person'}])
