# A list where a number is required.
# expect: `duration` must be number (float), got a list
result = everything_trigger_long_running_operation(duration=[1], steps=1)
