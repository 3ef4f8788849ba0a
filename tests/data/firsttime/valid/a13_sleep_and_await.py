# asyncio.sleep next to SDK calls.
# result: "Echo: later"
import asyncio
async def main():
    p = everything_echo(message='later')
    await asyncio.sleep(0.01)
    return await p
result = asyncio.run(main())
