# Counting entity types.
# result: {"company": 2, "person": 3}
from collections import Counter
g = memory_read_graph()
c = Counter(e['entityType'] for e in g['entities'] if e['name'] in ('Ann', 'Bob', 'Cleo', 'Acme', 'Globex'))
result = dict(sorted(c.items()))
