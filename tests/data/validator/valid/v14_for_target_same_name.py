# The same name used as a loop variable.
node = memory_search_nodes(query="Ada")
for node in [{"label": "x"}, {"label": "y"}]:
    print(node["label"])
