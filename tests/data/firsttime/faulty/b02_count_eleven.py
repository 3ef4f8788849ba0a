# Above the maximum.
# expect: `count` must be <= 10, got 11
result = everything_get_resource_links(count=11)
