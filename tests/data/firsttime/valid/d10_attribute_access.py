# Attribute access on a dict result.
# result: true
w = everything_get_structured_content(location='Los Angeles')
result = isinstance(w.conditions, str)
