# asyncio.run of a main coroutine, without top-level await.
# result: ["Acme", "Globex"]
import asyncio
async def main():
    a, b = await asyncio.gather(memory_search_nodes(query='Acme'), memory_search_nodes(query='Globex'))
    return sorted({e['name'] for e in a['entities'] + b['entities']})
result = asyncio.run(main())
