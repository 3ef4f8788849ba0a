# Comprehension variables with SDK-looking names.
names = ["Ada", "Grace"]
upper = [memory_name.upper() for memory_name in names]
pairs = {everything_key: everything_val for everything_key, everything_val in zip(names, upper)}
gen = sum(len(filesystem_p) for filesystem_p in ["/a", "/bb"])
result = (upper, pairs, gen)
