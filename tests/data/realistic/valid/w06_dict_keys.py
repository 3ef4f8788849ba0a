# Held out (written after the fixes): dict keys.
# result: "ENTITIES"
r = memory_search_nodes(query='a')
keys = [k for k in r]
first = keys[0].upper()
result = first
