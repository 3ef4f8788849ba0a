# One write allowed, the second one not.
# options: {"enforce_mutations": true, "allow_mutations": ["memory_create_entities"]}
# expect: memory_create_relations is a write tool and was not authorized (line 6).
memory_create_entities(entities=[{"name": "A", "entityType": "t", "observations": []}])
memory_create_entities(entities=[{"name": "B", "entityType": "t", "observations": []}])
memory_create_relations(relations=[{"from": "A", "to": "B", "relationType": "knows"}])
