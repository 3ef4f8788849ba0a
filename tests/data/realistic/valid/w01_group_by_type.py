# Held out (written after the fixes): group by type.
# result: ["company", "person"]
g = memory_read_graph()
by_type = {}
for e in g['entities']:
    by_type.setdefault(e['entityType'], []).append(e['name'])
result = {k: sorted(v) for k, v in by_type.items()}
result = sorted(by_type)
