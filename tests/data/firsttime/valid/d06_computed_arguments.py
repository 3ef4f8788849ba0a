# Arguments computed at run time.
# result: ["11.", "22.", "33."]
xs = [1, 2, 3]
parts = [everything_get_sum(a=x, b=x * 10) for x in xs]
result = [p.split()[-1] for p in parts]
