# gather with return_exceptions.
# result: ["Echo: ok"]
import asyncio
async def main():
    rs = await asyncio.gather(everything_echo(message='ok'), return_exceptions=True)
    return rs
result = asyncio.run(main())
