# Observations as one string.
# expect: `entities[0].observations` must be array (list), got str 'math'
# expect: Wrap it in a list: ['math']
n = 'ada'
result = memory_create_entities(entities=[{'name': n, 'entityType': 'person', 'observations': 'math'}])
