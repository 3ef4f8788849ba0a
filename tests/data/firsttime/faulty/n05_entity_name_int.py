# An entity name that is a number.
# expect: `entities[0].name` must be string (str), got int 7
result = memory_create_entities(entities=[{'name': 7, 'entityType': 'number', 'observations': []}])
