# Default values written as JavaScript null.
# class: js
# expect: None
g = memory_read_graph()
employer = {e['name']: null for e in g['entities'] if e['entityType'] == 'person'}
for r in g['relations']:
    if r['relationType'] == 'works_at':
        employer[r['from']] = r['to']
result = employer
