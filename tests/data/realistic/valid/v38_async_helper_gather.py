# Async helpers awaited together at top level.
# result: ["# A", "# B"]
import asyncio
async def first_line(p):
    r = await filesystem_read_text_file(path=p)
    return r['content'].splitlines()[0]
lines = await asyncio.gather(first_line('notes/a.md'), first_line('notes/b.md'))
result = list(lines)
