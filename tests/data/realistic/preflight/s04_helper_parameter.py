# A helper that formats an entity: the typo is on its parameter.
# class: shapes
# expect: has no field `observation` (line 5). Did you mean `observations`?
def summary(entity):
    return '%s (%s): %d notes' % (entity['name'], entity['entityType'], len(entity['observation']))

g = memory_read_graph()
lines = [summary(e) for e in g['entities']]
result = '\n'.join(lines)
