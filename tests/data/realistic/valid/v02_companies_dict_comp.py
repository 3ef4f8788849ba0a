# Companies by name with a filtered dict comprehension.
# result: {"Acme": 1999, "Globex": 2005}
g = memory_read_graph()
companies = {e['name']: e['observations'] for e in g['entities'] if e['entityType'] == 'company'}
founded = {}
for name, obs in companies.items():
    founded[name] = [int(o.split()[1]) for o in obs if o.startswith('founded')][0]
result = founded
