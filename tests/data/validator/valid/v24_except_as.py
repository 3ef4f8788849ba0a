# except ... as binds a name.
try:
    w = everything_get_structured_content(location="Chicago")
    value = w["temperature"]
except ToolError as memory_error:
    value = memory_error.kind
except Exception as everything_exc:
    value = str(everything_exc)
result = value
