# A case-insensitive match over each observation.
# result: ["Ann"]
g = memory_read_graph()
tea = []
for e in g['entities']:
    if any('tea' in o.lower() for o in e['observations']):
        tea.append(e['name'])
result = tea
