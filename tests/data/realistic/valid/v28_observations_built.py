# Observations built with a comprehension.
# result: [["rv_Gus", 2]]
memory_create_entities(entities=[{'name': 'rv_Gus', 'entityType': 'person', 'observations': []}])
facts = {'rv_Gus': ['speaks German', 'likes jazz']}
adds = [{'entityName': n, 'contents': f} for n, f in facts.items()]
r = memory_add_observations(observations=adds)
result = [(x['entityName'], len(x['addedObservations'])) for x in r['results']]
