# `type` used for `entityType`.
# expect: `entities[0]` has `type` where the key is `entityType`: rename it
result = memory_create_entities(entities=[{'name': 'ada', 'type': 'person', 'observations': ['math']}])
