# __import__ is dynamic.
j = __import__("json")
result = j.dumps({"ok": True, "x": memory_search_nodes(query="a")})
