# A deleted name counts as the program's own.
memory_tmp = memory_read_graph()
n = len(memory_tmp["entities"])
del memory_tmp
result = n
