# Held out (written after the fixes): grown rows.
# result: 1
g = memory_read_graph()
rows = [e for e in g['entities'] if e['entityType'] == 'person']
rows = rows + [{'name': 'extra', 'entityType': 'x', 'observations': [], 'tag': 1}]
tags = [r.get('tag') for r in rows]
result = tags[-1]
