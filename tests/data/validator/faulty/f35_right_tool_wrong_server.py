# The tool lives on another server.
# expect: `filesystem_search_nodes` is not a known SDK function (line 3). Did you mean `memory_search_nodes`
hits = filesystem_search_nodes(query="Ada")
result = hits
