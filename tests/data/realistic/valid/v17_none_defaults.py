# Default values with None, filled from the relations.
# result: {"Ann": "Acme", "Bob": "Globex", "Cleo": "Acme"}
g = memory_read_graph()
employer = {e['name']: None for e in g['entities'] if e['entityType'] == 'person'}
for r in g['relations']:
    if r['relationType'] == 'works_at' and r['from'] in employer:
        employer[r['from']] = r['to']
result = {k: employer[k] for k in ('Ann', 'Bob', 'Cleo')}
