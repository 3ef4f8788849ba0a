# Async write then read of memory.
# result: [["v_async", ["one"]]]
import asyncio
async def main():
    await memory_create_entities(entities=[{'name': 'v_async', 'entityType': 'probe', 'observations': ['one']}])
    g = await memory_open_nodes(names=['v_async'])
    return [(e['name'], e['observations']) for e in g['entities']]
result = asyncio.run(main())
