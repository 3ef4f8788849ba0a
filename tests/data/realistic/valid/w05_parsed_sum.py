# Held out (written after the fixes): parsed sum.
# result: 5
s = everything_get_sum(a=2, b=3)
n = float(s.split()[-1].rstrip('.'))
total = 0
total = total + n
result = total
