# Indentation broken in the middle of a program.
# expect: SyntaxError:
# expect: (line 6
total = 0
for i in range(3):
total += everything_get_sum(a=i, b=1)
result = total
