# An alias of a result list.
# expect: result['entities'][0] has no field `nam`
g = memory_read_graph()
items = g['entities']
result = [items[0]['nam']] if items else []
