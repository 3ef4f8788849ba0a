# A write while mutations are enforced and none were allowed.
# options: {"enforce_mutations": true}
# expect: memory_create_entities is a write tool and was not authorized (line 6). Re-send with "allow_mutations": ["memory_create_entities"], or preview it with "dry_run": true.
people = ["Ada", "Grace"]
entities = [{"name": n, "entityType": "person", "observations": []} for n in people]
out = memory_create_entities(entities=entities)
result = out
