# A misspelled server name in an otherwise fine program.
# expect: `everythin_echo` is not a known SDK function (line 5). Did you mean `everything_echo`?
greeting = "hello"
shout = greeting.upper()
reply = everythin_echo(message=shout)
result = reply
