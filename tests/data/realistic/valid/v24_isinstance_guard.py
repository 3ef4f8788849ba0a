# A guarded subscript of a text result.
# result: "The sum of 1 and 2 is 3."
s = everything_get_sum(a=1, b=2)
v = s['sum'] if isinstance(s, dict) else s
result = v
