# A tool classified as a write by its name (add): its annotations give no verdict.
# options: {"enforce_mutations": true, "allow_mutations": ["memory_create_entities"]}
# expect: memory_add_observations is a write tool and was not authorized (line 4).
op = memory_add_observations(observations=[{"entityName": "a", "contents": ["b"]}])
result = op
