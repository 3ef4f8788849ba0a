# options: {"enforce_mutations": true}
# "trigger" names a write, but server-everything annotates this tool readOnlyHint: true, and the
# annotation wins (sdkgen/mutation.c), so no authorization is needed.
op = everything_trigger_long_running_operation(duration=1, steps=2)
result = op
