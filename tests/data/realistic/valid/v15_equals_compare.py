# Comparing with ==.
# result: ["Ann", "Cleo"]
g = memory_read_graph()
acme = [r['from'] for r in g['relations'] if r['to'] == 'Acme' and r['relationType'] == 'works_at']
result = sorted(acme)
