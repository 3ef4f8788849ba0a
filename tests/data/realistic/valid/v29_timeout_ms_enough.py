# A long operation with a per-call timeout that suffices.
# result: true
r = everything_trigger_long_running_operation(duration=1, steps=1, timeout_ms=15000).result()
result = 'completed' in str(r).lower()
