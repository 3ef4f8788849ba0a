# A call in a default argument runs at definition time; still checked.
# expect: everything_get_sum: missing required argument(s) `b` (line 3).
def f(x=everything_get_sum(a=1)):
    return x

result = f()
