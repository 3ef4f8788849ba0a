# A positional literal of the wrong type.
# expect: `message` must be string (str), got float 3.5
result = everything_echo(3.5)
