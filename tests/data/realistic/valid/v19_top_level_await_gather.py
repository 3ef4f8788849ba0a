# Top-level await of asyncio.gather.
# result: ["# A", "# B"]
import asyncio
files = ['notes/a.md', 'notes/b.md']
outs = await asyncio.gather(*[filesystem_read_text_file(path=f) for f in files])
result = [o['content'].splitlines()[0] for o in outs]
