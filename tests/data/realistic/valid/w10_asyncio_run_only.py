# Held out (written after the fixes): asyncio run only.
# result: true
import asyncio
async def main():
    g = await memory_read_graph()
    return [e['name'] for e in g['entities']]
names = asyncio.run(main())
result = 'Ann' in names
