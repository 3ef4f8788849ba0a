# A typo inside a branch.
# expect: memory_read_graph: result['relations'][0] has no field `form` (line 5). Did you mean `from`?
g = memory_read_graph()
if g["relations"]:
    print(g["relations"][0]["form"])
