# A failing read handled with ToolError or the error text.
# result: {"todo.txt": 3, "nope.txt": "error"}
out = {}
for p in ['todo.txt', 'nope.txt']:
    try:
        r = filesystem_read_text_file(path=p)
        out[p] = len(r['content'].splitlines()) if isinstance(r, dict) else 'error'
    except ToolError:
        out[p] = 'error'
result = out
