# isinstance-guarded reads of text results in a loop.
# result: ["2", "6"]
out = []
for a in (1, 5):
    s = everything_get_sum(a=a, b=1)
    if isinstance(s, dict):
        out.append(s['result'])
    else:
        out.append(str(s).split()[-1].rstrip('.'))
result = out
