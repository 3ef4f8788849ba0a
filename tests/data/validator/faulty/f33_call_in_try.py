# try/except around a call does not hide a wrong call.
# expect: everything_get_structured_content: missing required argument(s) `location` (line 4).
try:
    weather = everything_get_structured_content()
except ToolError as e:
    weather = {"error": e.kind}
result = weather
