# Held out (written after the fixes, measured before tuning): run after await.
# class: heldout
# expect: await go()
import asyncio
async def go():
    return await asyncio.gather(memory_read_graph(), memory_search_nodes(query='x'))
a = await go()
b = asyncio.run(go())
