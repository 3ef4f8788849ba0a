# A number written as a string.
# expect: `a` must be number (float), got str '1'
# expect: Write the number without quotes: 1
result = everything_get_sum(a='1', b=2)
