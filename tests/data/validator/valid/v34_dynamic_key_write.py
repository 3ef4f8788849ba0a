# Writing computed keys into a result: any key may exist afterwards.
g = memory_read_graph()
w = everything_get_structured_content(location="Chicago")
for k, v in dict(w).items():
    g[k] = v
result = g["temperature"]
