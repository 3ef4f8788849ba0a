# .result() in the middle of the chain.
# expect: memory_search_nodes: result['entities'][0] has no field `entity_type` (line 4). Did you mean `entityType`?
x = memory_search_nodes(query="a")
t = x.result()["entities"][0]["entity_type"]
