# An abbreviation.
# expect: `location` must be one of 'New York', 'Chicago', 'Los Angeles'; got 'NYC'
result = everything_get_structured_content(location='NYC')
