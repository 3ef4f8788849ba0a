# observations for contents.
# expect: `observations[0]` has `observations` where the key is `contents`: rename it
result = memory_add_observations(observations=[{'entityName': 'ada', 'observations': ['x']}])
