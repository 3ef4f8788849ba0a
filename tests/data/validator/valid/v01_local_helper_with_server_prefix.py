# Helpers named like SDK functions are the program's own.
def memory_summary(graph):
    return {"entities": len(graph["entities"]), "relations": len(graph["relations"])}

def filesystem_join(*parts):
    return "/".join(p.strip("/") for p in parts)

g = memory_read_graph()
result = {"summary": memory_summary(g), "path": filesystem_join("/tmp", "a", "b.txt")}
