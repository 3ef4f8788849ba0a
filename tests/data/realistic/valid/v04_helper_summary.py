# A helper that formats an entity.
# result: ["Acme (company): 2 notes", "Ann (person): 3 notes"]
def summary(entity):
    return '%s (%s): %d notes' % (entity['name'], entity['entityType'], len(entity['observations']))

g = memory_read_graph()
lines = sorted(summary(e) for e in g['entities'] if e['name'] in ('Ann', 'Acme'))
result = lines
