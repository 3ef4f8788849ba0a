# await inside an async comprehension.
# result: ["Echo: 0", "Echo: 1", "Echo: 2"]
import asyncio
async def main():
    return [await everything_echo(message=str(i)) for i in range(3)]
result = asyncio.run(main())
