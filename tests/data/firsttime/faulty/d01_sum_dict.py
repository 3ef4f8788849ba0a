# Options object for get_sum.
# expect: pass arguments as keywords: everything_get_sum(a=1, b=2)
result = everything_get_sum({'a': 1, 'b': 2})
