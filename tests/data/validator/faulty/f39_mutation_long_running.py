# A tool classified as a write by its name (trigger).
# options: {"enforce_mutations": true, "allow_mutations": ["memory_create_entities"]}
# expect: everything_trigger_long_running_operation is a write tool and was not authorized (line 4).
op = everything_trigger_long_running_operation(duration=1, steps=2)
result = op
