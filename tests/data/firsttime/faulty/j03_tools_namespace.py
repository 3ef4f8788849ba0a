# tools.<server>.<tool>.
# expect: Call `memory_read_graph(...)`
g = tools.memory.read_graph()
result = g
