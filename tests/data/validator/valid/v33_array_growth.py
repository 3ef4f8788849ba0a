# Appending foreign-shaped elements to a result's list.
g = memory_read_graph()
w = everything_get_structured_content(location="Chicago")
g["entities"].append(w)
result = g["entities"][-1]["humidity"]
