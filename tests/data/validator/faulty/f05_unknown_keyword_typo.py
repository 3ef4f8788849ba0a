# A typo in a keyword argument.
# expect: unknown argument `mesage` for everything_echo (line 4). Did you mean `message`?
msg = "ping"
answer = everything_echo(mesage=msg)
result = answer
