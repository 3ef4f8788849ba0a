# A case-insensitive match with .lower() on the observations list itself.
# class: shapes
# expect: is a list
# expect: (line 8)
g = memory_read_graph()
tea = []
for e in g['entities']:
    if 'tea' in e['observations'].lower():
        tea.append(e['name'])
result = tea
