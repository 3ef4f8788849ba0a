# Companies by name: a mis-cased field in a dict comprehension's filter.
# class: shapes
# expect: has no field `entitytype` (line 5). Did you mean `entityType`?
g = memory_read_graph()
companies = {e['name']: e['observations'] for e in g['entities'] if e['entitytype'] == 'company'}
founded = {}
for name, obs in companies.items():
    founded[name] = [o for o in obs if o.startswith('founded')]
result = founded
