# The required argument was forgotten.
# expect: memory_create_entities: missing required argument(s) `entities` (line 5).
# options: {"enforce_mutations": true, "allow_mutations": ["memory_create_entities"]}
people = [{"name": "Ada", "entityType": "person", "observations": []}]
created = memory_create_entities()
result = created
