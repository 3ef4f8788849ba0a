# *args spreads cannot be judged statically.
pairs = [(1, 2), (3, 4), (5, 6)]
sums = [everything_get_sum(*p) for p in pairs]
paths = ["/tmp/a", "/tmp/b"]
moved = filesystem_read_multiple_files(*[paths])
result = [str(s) for s in sums]
