# Joining relations with entities: employees per company with their ages.
# result: {"Acme": [["Ann", 34], ["Cleo", 29]], "Globex": [["Bob", 41]]}
g = memory_read_graph()
ents = {e['name']: e for e in g['entities']}
out = {}
for r in g['relations']:
    if r['relationType'] != 'works_at' or r['from'] not in ('Ann', 'Bob', 'Cleo'):
        continue
    age = next(int(o.split()[1]) for o in ents[r['from']]['observations'] if o.startswith('age'))
    out.setdefault(r['to'], []).append((r['from'], age))
result = {k: sorted(v) for k, v in sorted(out.items())}
