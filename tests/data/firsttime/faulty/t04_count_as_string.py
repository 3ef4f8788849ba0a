# A count written as a string.
# expect: `count` must be number (float), got str '3'
result = everything_get_resource_links(count='3')
