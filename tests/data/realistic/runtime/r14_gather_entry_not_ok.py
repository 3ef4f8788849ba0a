# Reading gather entries as values without checking ok (one call timed out).
# class: async
# expect: ['ok']
# expect: timed out
calls = [everything_echo(message='x'), everything_trigger_long_running_operation(duration=3, steps=1, timeout_ms=300)]
outs = gather(calls)
texts = []
for o in outs:
    texts.append(str(o['value'])[:10])
result = texts
