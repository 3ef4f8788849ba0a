# The runtime's gather.
# result: ["Echo: g1", "Echo: g2"]
rs = gather(everything_echo(message='g1'), everything_echo(message='g2'))
result = [r['value'] for r in rs]
