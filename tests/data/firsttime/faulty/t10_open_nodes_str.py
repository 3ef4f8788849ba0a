# open_nodes with one name.
# expect: `names` must be array (list), got str 'alice'
result = memory_open_nodes(names='alice')
