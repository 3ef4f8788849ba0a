# **kwargs spread.
# result: "11."
args = {'a': 5, 'b': 6}
result = everything_get_sum(**args).split()[-1]
