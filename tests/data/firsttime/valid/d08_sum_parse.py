# Parse a number out of a text result.
# result: 42
s = everything_get_sum(a=40, b=2)
result = int(s.rsplit(' ', 1)[1].rstrip('.'))
