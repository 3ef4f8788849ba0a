# Subscript on a text result.
# expect: everything_echo: result is text (str), not a dict, so result['text'] fails (line 4)
r = everything_echo(message='hi')
result = r['text']
