# One entity dict where a list is required.
# expect: `entities` must be array (list), got a dict
# expect: Pass a list of such dicts
result = memory_create_entities(entities={'name': 'ada', 'entityType': 'person', 'observations': []})
