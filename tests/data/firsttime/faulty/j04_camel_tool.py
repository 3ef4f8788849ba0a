# camelCase tool as an attribute.
# expect: Call `everything_get_sum(...)`
result = everything.getSum(a=1, b=2)
