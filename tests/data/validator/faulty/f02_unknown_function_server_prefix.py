# The model guessed a tool name under a real server prefix.
# expect: `memory_get_graph` is not a known SDK function (line 4). Did you mean `memory_read_graph`?
import json
graph = memory_get_graph()
result = json.dumps(graph)[:200]
