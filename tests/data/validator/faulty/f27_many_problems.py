# Several problems are all reported, each with its line.
# options: {"enforce_mutations": true}
# expect: `memory_serach_nodes` is not a known SDK function (line 8). Did you mean `memory_search_nodes`?
# expect: unknown argument `pth` for filesystem_list_directory (line 9). Did you mean `path`?
# expect: everything_get_sum: missing required argument(s) `b` (line 10).
# expect: memory_delete_entities is a write tool and was not authorized (line 11).
# expect: memory_read_graph: result['entities'][0] has no field `nme` (line 13). Did you mean `name`?
hits = memory_serach_nodes(query="x")
listing = filesystem_list_directory(pth="/tmp")
s = everything_get_sum(a=1)
memory_delete_entities(entityNames=["x"])
g = memory_read_graph()
result = g["entities"][0]["nme"]
