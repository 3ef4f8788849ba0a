# add_observations with contents.
# result: ["new"]
memory_create_entities(entities=[{'name': 'v_obs', 'entityType': 'p', 'observations': []}])
memory_add_observations(observations=[{'entityName': 'v_obs', 'contents': ['new']}])
g = memory_open_nodes(names=['v_obs'])
result = g['entities'][0]['observations']
