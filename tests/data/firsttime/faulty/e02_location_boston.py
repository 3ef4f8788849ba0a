# A city that is not offered.
# expect: `location` must be one of 'New York', 'Chicago', 'Los Angeles'; got 'Boston'
result = everything_get_structured_content(location='Boston')
