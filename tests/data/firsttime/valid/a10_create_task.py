# Tasks created explicitly.
# result: ["Echo: 1", "Echo: 2"]
import asyncio
async def main():
    t1 = asyncio.create_task(everything_echo(message='1'))
    t2 = asyncio.ensure_future(everything_echo(message='2'))
    return [await t1, await t2]
result = asyncio.run(main())
