# Names where entity dicts are required.
# expect: `entities[0]` must be object (dict), got str 'ada'
result = memory_create_entities(entities=['ada', 'bob'])
