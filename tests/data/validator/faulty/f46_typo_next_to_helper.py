# A local helper is fine, a typo next to it is not.
# expect: `memory_add_observation` is not a known SDK function (line 8). Did you mean `memory_add_observations`?
def memory_summary(graph):
    return {"entities": len(graph["entities"]), "relations": len(graph["relations"])}

g = memory_read_graph()
summary = memory_summary(g)
memory_add_observation(observations=[{"entityName": "Ada", "contents": ["x"]}])
result = summary
