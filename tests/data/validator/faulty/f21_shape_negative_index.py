# Negative indexes address array elements too.
# expect: memory_open_nodes: result['entities'][-1] has no field `observation` (line 4). Did you mean `observations`?
nodes = memory_open_nodes(names=["Ada", "Grace"])
last = nodes["entities"][-1]["observation"]
result = last
