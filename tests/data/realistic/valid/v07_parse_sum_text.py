# Adding up sums parsed from the text results.
# result: 10
import re
total = 0
for a, b in [(1, 2), (3, 4)]:
    s = everything_get_sum(a=a, b=b)
    total += float(re.findall(r'[-\d.]+', str(s).rstrip('.'))[-1])
result = total
