# async def helpers gathered.
# result: ["ECHO: X", "ECHO: Y", "ECHO: Z"]
import asyncio
async def shout(m):
    r = await everything_echo(message=m)
    return r.upper()
async def main():
    return await asyncio.gather(*(shout(m) for m in ['x', 'y', 'z']))
result = asyncio.run(main())
