# An int where text is required.
# expect: `message` must be string (str), got int 42
# expect: Write it as a string: "42"
result = everything_echo(message=42)
