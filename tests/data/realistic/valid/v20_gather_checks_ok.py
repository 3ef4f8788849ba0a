# The SDK's gather with every entry checked (one call times out).
# result: ["Echo: x", "timeout"]
calls = [everything_echo(message='x'), everything_trigger_long_running_operation(duration=3, steps=1, timeout_ms=300)]
outs = gather(calls)
texts = []
for o in outs:
    if o['ok']:
        texts.append(str(o['value'])[:7])
    else:
        texts.append(o['error']['kind'])
result = texts
