# **kwargs spreads cannot be judged statically.
params = {"a": 2, "b": 3}
s = everything_get_sum(**params)
common = {"timeout_ms": 2000}
w = everything_get_structured_content(location="Chicago", **common)
result = {"sum": s, "w": w}
