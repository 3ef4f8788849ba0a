# A count within the bounds.
# result: true
r = everything_get_resource_links(count=2)
result = isinstance(r, (dict, str, list))
