# Held out (written after the fixes, measured before tuning): helper param short.
# class: heldout
# expect: has no field `obs` (line 5)
def ages(entity):
    return [o for o in entity['obs'] if o.startswith('age')]
g = memory_search_nodes(query='person')
out = {e['name']: ages(e) for e in g['entities']}
