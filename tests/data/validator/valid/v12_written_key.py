# Keys the program adds itself.
g = memory_read_graph()
g["summary"] = {"n": len(g["entities"])}
g["entities"][0]["score"] = 1.0 if g["entities"] else None
result = (g["summary"], g["entities"][0]["score"])
