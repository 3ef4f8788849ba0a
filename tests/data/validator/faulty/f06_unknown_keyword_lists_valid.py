# An argument that has no close match lists the valid ones.
# expect: unknown argument `c` for everything_get_sum (line 3). Valid arguments: a, b, timeout_ms.
total = everything_get_sum(a=1, b=2, c=3)
result = total
