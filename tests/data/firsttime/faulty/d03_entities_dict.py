# Options object for create_entities.
# expect: pass arguments as keywords: memory_create_entities(entities=
result = memory_create_entities({'entities': [{'name': 'a', 'entityType': 't', 'observations': []}]})
