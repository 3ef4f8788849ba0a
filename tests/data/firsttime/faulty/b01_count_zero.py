# Below the minimum.
# expect: `count` must be >= 1, got 0
result = everything_get_resource_links(count=0)
