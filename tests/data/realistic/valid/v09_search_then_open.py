# Search, then open the nodes found.
# result: [["Acme", "company"]]
hits = memory_search_nodes(query='Acme')
names = sorted(e['name'] for e in hits['entities'])
opened = memory_open_nodes(names=names)
result = sorted((e['name'], e['entityType']) for e in opened['entities'])
