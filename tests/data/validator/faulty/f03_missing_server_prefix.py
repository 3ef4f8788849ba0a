# The tool name without its server prefix.
# expect: `search_nodes` is not a known SDK function (line 4). Did you mean `memory_search_nodes`?
queries = ["alice", "bob"]
found = [search_nodes(query=q) for q in queries]
result = len(found)
