# An unterminated string.
# expect: SyntaxError: unterminated string literal
# expect: msg = "hello
msg = "hello
everything_echo(message=msg)
