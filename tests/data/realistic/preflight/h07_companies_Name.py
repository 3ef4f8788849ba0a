# Held out (written after the fixes, measured before tuning): companies Name.
# class: heldout
# expect: Did you mean `name`?
g = memory_read_graph()
companies = [e for e in g['entities'] if e['entityType'] == 'company']
names = [c['Name'] for c in companies]
