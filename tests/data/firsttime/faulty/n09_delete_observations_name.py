# name for entityName.
# expect: `deletions[0]` has `name` where the key is `entityName`: rename it
result = memory_delete_observations(deletions=[{'name': 'ada', 'observations': ['x']}])
