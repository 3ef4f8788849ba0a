# A name where a list of names is required.
# expect: `entityNames` must be array (list)
result = memory_delete_entities(entityNames='bob')
