# Pending.result used without calling it.
# class: async
# expect: .result()
texts = [everything_echo(message=m).result for m in ['a', 'b']]
joined = ' | '.join(texts)
result = joined
