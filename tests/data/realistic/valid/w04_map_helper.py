# Held out (written after the fixes): map helper.
# result: [true, "n"]
def fmt(x):
    return x['name']
g = memory_read_graph()
names = list(map(fmt, g['entities']))
other = fmt({'name': 'n'})
result = [len(names) >= 5, other]
