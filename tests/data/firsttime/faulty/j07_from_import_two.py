# Two tools imported.
# expect: Call `memory_read_graph(...)`
# expect: Call `memory_search_nodes(...)`
from memory import read_graph, search_nodes
result = [read_graph(), search_nodes(query='x')]
