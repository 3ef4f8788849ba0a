# import <server>.
# expect: `import memory` (line 4)
# expect: memory_read_graph
import memory
result = memory.read_graph()
