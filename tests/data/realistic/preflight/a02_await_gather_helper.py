# Awaiting the SDK's gather helper.
# class: async
# expect: asyncio.gather(
files = ['notes/a.md', 'notes/b.md']
outs = await gather(*[filesystem_read_text_file(path=f) for f in files])
result = [o['value']['content'].splitlines()[0] for o in outs]
