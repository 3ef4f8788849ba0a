# The whole run takes longer than the run's timeout.
# class: timeout
# options: {"timeout_ms": 2500}
# expect: timeout_ms
# expect: line 8
done = []
for i in range(3):
    everything_trigger_long_running_operation(duration=2, steps=1).result()
    done.append(i)
result = done
