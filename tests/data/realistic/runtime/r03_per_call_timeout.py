# A per-call timeout shorter than the operation.
# class: timeout
# expect: timeout_ms=
# expect: (line 6)
steps = []
r = everything_trigger_long_running_operation(duration=2, steps=2, timeout_ms=500).result()
steps.append(r)
result = steps
