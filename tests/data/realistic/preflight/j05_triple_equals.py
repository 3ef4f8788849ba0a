# Comparing with ===.
# class: js
# expect: ==
g = memory_read_graph()
acme = [r['from'] for r in g['relations'] if r['to'] === 'Acme']
result = acme
