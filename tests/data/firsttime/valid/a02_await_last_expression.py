# The last expression awaited.
# result: "The sum of 2 and 3 is 5."
await everything_get_sum(a=2, b=3)
