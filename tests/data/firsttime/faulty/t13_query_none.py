# None where text is required.
# expect: `query` must be string (str), got NoneType None
result = memory_search_nodes(query=None)
