# Lambda parameters named like SDK things.
g = memory_read_graph()
ordered = sorted(g["entities"], key=lambda memory_entity: memory_entity["name"])
pick = lambda filesystem_path, n=1: filesystem_path[:n]
result = [pick(e["name"], 3) for e in ordered]
