# options: {"enforce_mutations": true, "dry_run": true}
# A dry run previews writes: nothing to authorize.
made = memory_create_entities(entities=[{"name": "Ada", "entityType": "person", "observations": []}])
filesystem_write_file(path="/tmp/out.txt", content="hello")
result = made
