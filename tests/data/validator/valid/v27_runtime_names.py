# Names the runtime injects.
calls = [everything_get_sum(a=i, b=i) for i in range(3)]
settled = gather(*calls)
again = settle(calls)
deep = resolve({"x": calls})
ok = isinstance(calls[0], Pending)
try:
    memory_read_graph().result()
except ToolError as err:
    print(err.kind)
result = {"settled": settled, "again": again, "deep": deep, "ok": ok}
