# Pending.result() called, then joined.
# result: "Echo: a | Echo: b"
texts = [everything_echo(message=m).result() for m in ['a', 'b']]
result = ' | '.join(texts)
