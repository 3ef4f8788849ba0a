# An annotated assignment binds like a plain one.
# expect: memory_open_nodes: result has no field `entitys` (line 4). Did you mean `entities`?
nodes: dict = memory_open_nodes(names=["Ada"])
result = len(nodes["entitys"])
