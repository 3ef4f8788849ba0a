# Floats and negative numbers.
# result: "-1."
result = everything_get_sum(a=-1.5, b=0.5).split()[-1]
