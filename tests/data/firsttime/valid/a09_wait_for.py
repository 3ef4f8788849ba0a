# asyncio.wait_for around an SDK call.
# result: "Echo: t"
import asyncio
async def main():
    return await asyncio.wait_for(everything_echo(message='t'), timeout=10)
result = asyncio.run(main())
