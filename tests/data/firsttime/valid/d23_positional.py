# Positional arguments.
# result: "15."
result = everything_get_sum(7, 8).split()[-1]
