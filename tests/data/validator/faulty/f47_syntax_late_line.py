# A syntax error at the end of a longer program.
# expect: SyntaxError:
# expect: (line 13,
g = memory_read_graph()
names = sorted(e["name"] for e in g["entities"])
types = {}
for e in g["entities"]:
    types.setdefault(e["entityType"], []).append(e["name"])
report = []
for t, ns in types.items():
    report.append(f"{t}: {', '.join(ns)}")
print("\n".join(report))
result = {"names": names, "types": types)
