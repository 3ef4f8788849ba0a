# The same argument given by position and by keyword.
# expect: everything_get_sum got multiple values for argument `a` (line 3).
s = everything_get_sum(1, 2, a=3)
result = s
