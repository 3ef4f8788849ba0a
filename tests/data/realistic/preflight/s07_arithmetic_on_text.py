# Adding up sums: the result is text, not a number.
# class: shapes
# expect: everything_get_sum
# expect: text (str)
total = 0
for a, b in [(1, 2), (3, 4)]:
    s = everything_get_sum(a=a, b=b)
    total = total + s
result = total
