# Both numbers are missing.
# expect: everything_get_sum: missing required argument(s) `a`, `b` (line 4).
def add():
    return everything_get_sum()

result = add()
