# Observation items that are numbers.
# expect: `observations[0].contents[0]` must be string (str), got int 1
result = memory_add_observations(observations=[{'entityName': 'ada', 'contents': [1, 2]}])
