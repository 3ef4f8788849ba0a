# asyncio.run inside a program that already awaits at top level.
# class: async
# expect: await main()
import asyncio
first = await memory_search_nodes(query='Acme')
async def main():
    return await memory_search_nodes(query='Globex')
second = asyncio.run(main())
result = [e['name'] for e in first['entities'] + second['entities']]
