# Builtins, including ones shadowed later.
data = list(range(10))
total = sum(data)
biggest = max(data, default=0)
pairs = list(zip(data, map(str, data)))
print(len(pairs), any(pairs), all(data), sorted(set(data), reverse=True)[:3])
def len(x):
    return 0
result = (total, biggest, len(data))
