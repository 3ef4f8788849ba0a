# A write inside a while loop.
# options: {"enforce_mutations": true}
# expect: memory_add_observations is a write tool and was not authorized (line 6).
pending = ["a", "b"]
while pending:
    memory_add_observations(observations=[{"entityName": "Ada", "contents": [pending.pop()]}])
