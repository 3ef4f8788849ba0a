# Creating relations, then reading them back.
# result: [["rv_Finn", "Acme"]]
memory_create_entities(entities=[{'name': 'rv_Finn', 'entityType': 'person', 'observations': ['age 30']}])
memory_create_relations(relations=[{'from': 'rv_Finn', 'to': 'Acme', 'relationType': 'works_at'}])
g = memory_open_nodes(names=['rv_Finn', 'Acme'])
rels = [(r['from'], r['to']) for r in g['relations'] if r['from'] == 'rv_Finn']
result = rels
