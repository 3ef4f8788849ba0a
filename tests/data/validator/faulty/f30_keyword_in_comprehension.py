# Calls inside a comprehension are checked too (only the comprehension's own names are skipped).
# expect: unknown argument `msg` for everything_echo (line 4).
words = ["a", "b", "c"]
echoes = [everything_echo(msg=w) for w in words]
result = [str(e) for e in echoes]
