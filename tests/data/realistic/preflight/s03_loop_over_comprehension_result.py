# Who works at Acme: a field typo on items of a comprehension's result.
# class: shapes
# expect: has no field `source` (line 9). Fields: from, relationType, to.
g = memory_read_graph()
works = [r for r in g['relations'] if r['relationType'] == 'works_at']
staff = []
for r in works:
    if r['to'] == 'Acme':
        staff.append(r['source'])
result = sorted(staff)
