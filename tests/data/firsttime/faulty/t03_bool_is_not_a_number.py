# Python's True is not a number.
# expect: `a` must be number (float), got bool True
result = everything_get_sum(a=True, b=2)
