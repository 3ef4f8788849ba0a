# Who works at Acme, looping over a comprehension's result.
# result: ["Ann", "Cleo"]
g = memory_read_graph()
works = [r for r in g['relations'] if r['relationType'] == 'works_at']
staff = []
for r in works:
    if r['to'] == 'Acme':
        staff.append(r['from'])
result = sorted(staff)
