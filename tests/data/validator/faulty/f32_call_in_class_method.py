# A call inside a method of a helper class.
# expect: memory_open_nodes: missing required argument(s) `names` (line 8).
class Graph:
    def __init__(self, names):
        self.names = names

    def load(self):
        return memory_open_nodes()

result = Graph(["Ada"]).load()
