# Held out (written after the fixes, measured before tuning): relations setdefault case.
# class: heldout
# expect: Did you mean `relationType`?
g = memory_read_graph()
rels = {}
for r in g['relations']:
    rels.setdefault(r['from'], []).append(r['relationtype'])
result = rels
