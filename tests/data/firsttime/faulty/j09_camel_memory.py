# camelCase memory tool.
# expect: Call `memory_read_graph(...)`
result = memory.readGraph()
