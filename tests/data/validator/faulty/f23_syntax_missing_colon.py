# A missing colon.
# expect: SyntaxError:
# expect: (line 5, col
g = memory_read_graph()
for e in g["entities"]
    print(e["name"])
