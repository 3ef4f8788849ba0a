# A text result used as text.
# result: ["echo: hello world", "E", 17, true]
r = everything_echo(message='Hello World')
result = [r.lower(), r[0], len(r), 'World' in r]
