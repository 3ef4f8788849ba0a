# A typo in an async helper.
# expect: has no field `nmae`
import asyncio
async def names():
    g = await memory_read_graph()
    return [e['nmae'] for e in g['entities']]
result = asyncio.run(names())
