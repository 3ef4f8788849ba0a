# globals() makes the program dynamic: nothing name-based is judged.
name = "memory_" + "read_graph"
fn = globals()[name]
graph = fn()
result = len(graph["entities"])
