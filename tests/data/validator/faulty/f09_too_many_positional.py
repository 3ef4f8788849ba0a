# One positional argument too many.
# expect: everything_get_sum takes 2 positional argument(s) but 3 were given (line 4).
nums = [1, 2, 3]
s = everything_get_sum(1, 2, 3)
result = s
