# Attribute on a text result.
# expect: everything_get_sum: result is text (str) and has no attribute `result_value` (line 4)
r = everything_get_sum(a=1, b=2)
result = r.result_value
