# Comparing with ===.
# class: js
# expect: `===` is JavaScript: Python writes `==`
g = memory_read_graph()
acme = [r['from'] for r in g['relations'] if r['to'] === 'Acme']
result = acme
